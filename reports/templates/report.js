/* The case list of the aclnn-conform HTML report: filters, sorting, paging, drill-down.
   Reads the compact case table from <script id="report-data">; only the visible page is in the
   DOM, so 50,000 cases stay responsive. No network access, no libraries. */
(function () {
  'use strict';
  var t0 = performance.now();
  var holder = document.getElementById('report-data');
  var D = JSON.parse(holder.textContent);
  var F = {};
  D.fields.forEach(function (name, i) { F[name] = i; });
  var C = D.cases, V = D.verdicts;
  var FAILING = ['fail', 'nondeterministic', 'error', 'crash', 'timeout', 'xpass'];
  var PAGE = 50;
  var ULP_MEANING = holder.getAttribute('data-ulp-meaning') || '';
  var state = {
    q: '', verdicts: new Set(), cell: null, clause: -1, clauseName: '', sort: 'severity', page: 0, open: new Set()
  };
  if (holder.getAttribute('data-default-failing') === '1') FAILING.forEach(function (v) { state.verdicts.add(v); });

  var $ = function (id) { return document.getElementById(id); };
  var rowsEl = $('case-rows'), pagerEl = $('pager'), activeEl = $('active');

  function esc(s) {
    return String(s === null || s === undefined ? '' : s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function fmt(x) {
    if (x === null || x === undefined || x === '') return '';
    if (typeof x === 'string') return x;
    var a = Math.abs(x);
    if (Number.isInteger(x) && a < 1e6) return String(x);
    if (a >= 1e6) return x.toExponential(2).replace('e+', 'e'); // 1.48e9: fits its column
    return (a !== 0 && (a < 1e-3 || a >= 1e6)) ? x.toExponential(2) : String(Number(x.toPrecision(3)));
  }
  function full(x) { return x === null || x === undefined ? '' : String(x); }
  function vname(c) { return V[c[F.verdict]]; }
  function badge(v) { return '<span class="vb v-' + v + '">' + v + '</span>'; }
  // A case id breaks only after its '/' separators, never inside a segment (html.id_html).
  function idHtml(id) {
    var parts = String(id).split('/');
    return parts.map(function (p, k) {
      return '<span class="idp">' + esc(k < parts.length - 1 ? p + '/' : p) + '</span>';
    }).join('<wbr>');
  }
  function detailOf(c) { return c[F.detail] >= 0 ? D.details[c[F.detail]] : null; }
  function smallNote(d) {
    if (!d || !d.u) return '';
    return Object.keys(d.u).map(function (o) { return o + ': ' + d.u[o]; }).join(' ');
  }

  // -- filtering and sorting ------------------------------------------------------------------
  var orders = {};
  function numKey(x) { return typeof x === 'number' ? x : (x === 'inf' || x === 'nan' ? Infinity : -1); }
  function order(key) {
    if (orders[key]) return orders[key];
    var idx = new Array(C.length);
    for (var i = 0; i < C.length; i++) idx[i] = i;
    if (key === 'id') {
      idx.sort(function (a, b) { return C[a][F.id] < C[b][F.id] ? -1 : C[a][F.id] > C[b][F.id] ? 1 : 0; });
    } else if (key !== 'severity') {
      var f = F[key];
      idx.sort(function (a, b) { return numKey(C[b][f]) - numKey(C[a][f]) || a - b; });
    }
    return (orders[key] = idx);
  }
  var cache = null;
  function matches() {
    if (cache) return cache;
    var q = state.q.toLowerCase(), idx = order(state.sort), out = [];
    var vs = state.verdicts, all = vs.size === 0, cell = state.cell, cl = state.clause;
    var cop = cell && cell.op !== undefined ? D.ops.indexOf(cell.op) : -2;
    var cpr = cell && cell.product !== undefined ? D.products.indexOf(cell.product) : -2;
    var ccol = cell && cell.col !== undefined ? D.cols.indexOf(cell.col) : -2;
    if (cl === -3) return (cache = out);
    var sets = null;
    if (cl >= 0) sets = D.clauseSets.map(function (s) { return s.indexOf(cl) >= 0; });
    for (var k = 0; k < idx.length; k++) {
      var c = C[idx[k]];
      if (!all && !vs.has(V[c[F.verdict]])) continue;
      if (cop !== -2 && c[F.op] !== cop) continue;
      if (cpr !== -2 && c[F.product] !== cpr) continue;
      if (ccol !== -2 && c[F.col] !== ccol) continue;
      if (sets && !sets[c[F.clauses]]) continue;
      if (q && c[F.id].toLowerCase().indexOf(q) < 0) continue;
      out.push(idx[k]);
    }
    return (cache = out);
  }
  function changed() { cache = null; state.page = 0; render(); }

  // -- rendering ------------------------------------------------------------------------------
  function rowHtml(i) {
    var c = C[i], v = vname(c), open = state.open.has(i), d = detailOf(c);
    var note = smallNote(d), x = d && d.x, reason = esc(c[F.reason]);
    if (x && x.deviation) reason = '<span class="devid">' + esc(x.kind === 'deviation' ? 'deviation ' : x.kind + ', deviation ') +
      esc(x.deviation) + '</span> ' + reason;
    if (d && d.r) reason += ' <span class="more">(the full reason is in the details)</span>';
    var h = '<tr class="row' + (open ? ' open' : '') + '" data-i="' + i + '">' +
      '<td>' + badge(v) + '</td><td class="id">' + idHtml(c[F.id]) + '</td>' +
      '<td class="mono">' + esc(D.tags[c[F.tag]]) + '</td>' +
      '<td class="num"' + (note ? ' title="' + esc(note) + '"' : '') + '>' + fmt(c[F.ulp]) +
      (note ? '<sup class="small-mark">*</sup>' : '') + '</td><td class="num">' + fmt(c[F.rel]) + '</td>' +
      '<td class="reason">' + reason + '</td></tr>';
    if (open) h += '<tr class="detail" data-for="' + i + '"><td colspan="6">' + detailHtml(i) + '</td></tr>';
    return h;
  }
  function render() {
    var m = matches(), pages = Math.max(1, Math.ceil(m.length / PAGE));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * PAGE, end = Math.min(m.length, start + PAGE), html = [];
    for (var k = start; k < end; k++) html.push(rowHtml(m[k]));
    rowsEl.innerHTML = html.length ? html.join('') :
      '<tr><td colspan="6" class="muted">No case matches these filters.</td></tr>';
    pagerEl.innerHTML = m.length ? (
      '<span class="muted">' + (start + 1) + '–' + end + ' of ' + m.length + '</span>' +
      '<button type="button" data-page="first"' + (state.page ? '' : ' disabled') + '>«</button>' +
      '<button type="button" data-page="prev"' + (state.page ? '' : ' disabled') + '>‹ prev</button>' +
      '<span>page ' + (state.page + 1) + ' / ' + pages + '</span>' +
      '<button type="button" data-page="next"' + (state.page < pages - 1 ? '' : ' disabled') + '>next ›</button>' +
      '<button type="button" data-page="last"' + (state.page < pages - 1 ? '' : ' disabled') + '>»</button>') : '';
    renderActive(m.length);
    renderChips();
  }
  function renderActive(n) {
    var parts = [];
    if (state.cell) {
      var c = state.cell, label = [c.op, c.product, c.col].filter(function (x) { return x !== undefined; }).join(' · ');
      parts.push('<span class="f">cell: ' + esc(label) + '<button type="button" data-clear="cell" aria-label="clear">×</button></span>');
    }
    if (state.clause !== -1) {
      parts.push('<span class="f">clause: ' + esc(state.clauseName) + '<button type="button" data-clear="clause" aria-label="clear">×</button></span>');
    }
    parts.push('<span class="count">' + n + ' of ' + C.length + (D.omitted && Object.keys(D.omitted).length ? ' listed cases' : ' cases') + '</span>');
    activeEl.innerHTML = parts.join('');
  }
  function renderChips() {
    var failingOnly = state.verdicts.size === FAILING.length && FAILING.every(function (v) { return state.verdicts.has(v); });
    document.querySelectorAll('#chips .chip').forEach(function (b) {
      var v = b.getAttribute('data-verdict'), p = b.getAttribute('data-preset');
      var on = v ? state.verdicts.has(v) : p === 'all' ? state.verdicts.size === 0 : failingOnly;
      b.classList.toggle('on', on);
    });
  }

  // -- drill-down -----------------------------------------------------------------------------
  var LABELS = { max_ulp: 'max ULP', max_rel: 'max rel', max_abs: 'max abs', mere: 'MERE', mare: 'MARE',
    mismatch_ratio: 'ratio', mismatches: 'mismatches', compared: 'compared', n: 'elements',
    nan_mismatches: 'NaN mism.', inf_mismatches: 'inf mism.', small_value_count: 'small values' };
  function replayOf(c) {
    var r = c[F.replay];
    return r < 0 ? '' : D.replays[r].replace("'{id}'", "'" + c[F.id] + "'");
  }
  // phase 1 (GetWorkspaceSize) and phase 2 (the kernel) in microseconds, and how they were taken
  function deviceTime(c, d) {
    var t = 'phase 1 ' + fmt(c[F.p1]) + ' µs';
    if (c[F.p2] !== null && c[F.p2] !== undefined) t += ' · phase 2 ' + fmt(c[F.p2]) + ' µs';
    var tm = d && d.tm;
    if (tm) {
      t += ' (' + (tm[0] ? tm[0] + ' clock, ' : '') + 'median of ' + tm[1] + ' call' + (tm[1] === 1 ? '' : 's') +
        (tm[2] ? ', after ' + tm[2] + ' warm-up' : '') + ')';
    }
    return t;
  }
  function detailHtml(i) {
    var c = C[i], v = vname(c), d = c[F.detail] >= 0 ? D.details[c[F.detail]] : null, h = [];
    var op = D.ops[c[F.op]];
    h.push('<div class="dd">');
    var head = '<dl class="kv"><dt>op</dt><dd>' + esc(op) + (D.aclnn[op] ? ' (' + esc(D.aclnn[op]) + ')' : '') + '</dd>' +
      '<dt>product</dt><dd>' + esc(D.products[c[F.product]]) + '</dd><dt>kind</dt><dd>' + (c[F.neg] ? 'negative' : 'positive') + '</dd>';
    if (d) {
      var s = d.st;
      head += '<dt>status</dt><dd>expected ' + esc(s[0]) + ' · oracle ' + esc(s[1] === null ? '—' : s[1]) +
        ' · actual ' + esc(s[2] === null ? '—' : s[2]) + '</dd>';
      if (d.b) head += '<dt>verdict</dt><dd>' + esc(d.b) + ' → ' + esc(v) + '</dd>';
      var dur = Object.keys(d.d || {}).map(function (k) { return k + ' ' + fmt(d.d[k]) + ' s'; });
      if (dur.length) head += '<dt>time</dt><dd>' + esc(dur.join(' · ')) + '</dd>';
    } else {
      head += '<dt>status</dt><dd>expected ' + esc(c[F.es]) + '</dd>';
      if (c[F.t] !== null) head += '<dt>time</dt><dd>' + fmt(c[F.t]) + ' s</dd>';
    }
    if (c[F.dev] !== null && c[F.dev] !== undefined) {
      head += '<dt>device</dt><dd>' + esc(c[F.dev]) + (d && d.mv ? ' (moved from device ' +
        esc(d.mv.from) + ', given up: ' + esc(d.mv.why) + ')' : '') + '</dd>';
    }
    if (c[F.p1] !== null && c[F.p1] !== undefined) head += '<dt>device time</dt><dd>' + esc(deviceTime(c, d)) + '</dd>';
    h.push('<div><h4>' + badge(v) + ' case</h4>' + head + '</dl></div>');
    var reason = d && d.r ? d.r : c[F.reason];
    if (reason || (d && (d.m || d.x || d.k || d.p))) {
      var msg = '';
      if (reason) msg += '<div class="msg v-' + v + '">' + esc(reason) + '</div>';
      if (d && d.m) msg += '<div class="msg" style="margin-top:6px">backend: ' + esc(d.m) + '</div>';
      if (d && d.k) msg += '<div class="msg cross" style="margin-top:6px">' + esc(d.k) + '</div>';
      if (d && d.p) msg += '<div class="msg dump" style="margin-top:6px">dump: ' + esc(d.p) + '</div>';
      if (d && d.x) {
        var xk = d.x.kind === 'deviation' ? 'deviation' : 'xfail';
        msg += '<div class="msg v-' + xk + ' expectation" style="margin-top:6px">' +
          (d.x.deviation ? 'documented deviation <b class="devid">' + esc(d.x.deviation) + '</b> (expectation ' + esc(d.x.kind) + ')'
            : 'expectation ' + esc(d.x.kind)) + ' · matched by ' + esc(d.x.match) +
          (d.x.message ? ' · backend message contains “' + esc(d.x.message) + '”' : '') +
          (d.x.where ? ' · ' + esc(d.x.where) : '') + ': ' + esc(d.x.reason) + '</div>';
      }
      h.push('<div><h4>reason</h4>' + msg + '</div>');
    }
    var p = D.params[c[F.params]], names = Object.keys(p);
    if (names.length) {
      var t = '<table><tr><th>parameter</th><th>dtype</th><th>shape</th><th>strides</th><th>offset</th><th>storage</th></tr>';
      names.forEach(function (n) {
        var a = p[n];
        t += '<tr><td class="mono">' + esc(n) + '</td><td class="mono">' + esc(a[0]) + '</td>' +
          (a.length > 1 ? '<td class="mono">[' + esc((a[1] || []).join(', ')) + ']</td><td class="mono">[' +
          esc((a[2] || []).join(', ')) + ']</td><td class="num">' + esc(a[3]) + '</td><td class="num">' + esc(a[4]) + '</td>'
            : '<td colspan="4" class="muted">null</td>') + '</tr>';
      });
      h.push('<div><h4>parameters and layouts</h4><div class="scroll">' + t + '</table></div></div>');
    }
    var cls = D.clauseSets[c[F.clauses]];
    h.push('<div class="wide"><h4>clauses (' + cls.length + ')</h4><div class="clist">' + cls.map(function (k) {
      return '<a href="#cases" class="clause-link" data-clause="' + esc(D.clauses[k]) + '">' + esc(D.clauses[k]) + '</a>';
    }).join('') + '</div></div>');
    var cmp = d ? d.c : null, keys = D.statKeys;
    if (cmp && Object.keys(cmp).length) {
      var st = '<table><tr><th>output</th>' + keys.map(function (k) {
        return '<th class="num"' + (k === 'max_ulp' ? ' title="' + esc(ULP_MEANING) + '"' : '') + '>' + esc(LABELS[k] || k) + '</th>';
      }).join('') + '</tr>';
      var notes = [];
      var worst = [];
      Object.keys(cmp).forEach(function (o) {
        var x = cmp[o][0] || [];
        var noted = d.u && d.u[o];
        st += '<tr><td class="mono">' + esc(o) + '</td>' + keys.map(function (k, j) {
          var val = x[j], bad = (k.indexOf('mismatch') >= 0) && val;
          var mark = k === 'max_ulp' && noted ? '<sup class="small-mark">*</sup>' : '';
          return '<td class="num' + (bad ? ' bad-n' : '') + '">' + fmt(val) + mark + '</td>';
        }).join('') + '</tr>';
        if (noted) notes.push('<p class="note small-note">* ' + esc(o) + ': ' + esc(noted) + '</p>');
        (cmp[o][1] || []).forEach(function (w) { worst.push([o, w, cmp[o][2]]); });
      });
      h.push('<div class="wide"><h4>statistics</h4><div class="scroll">' + st + '</table></div>' + notes.join('') + '</div>');
      if (worst.length) {
        var wt = '<table><tr><th>output</th><th>index</th><th class="num">expected</th><th class="num">actual</th>' +
          '<th class="num">abs err</th><th class="num">rel err</th><th class="num" title="' + esc(ULP_MEANING) + '">ulp</th><th>inputs</th></tr>';
        var anySmall = false;
        worst.forEach(function (ow) {
          var w = ow[1], inputs = w[6] || {}, pol = ow[2];
          // below the policy's small_threshold the element is judged by its absolute error
          var small = pol && typeof w[1] === 'number' && Math.abs(w[1]) < pol[0];
          if (small) anySmall = true;
          var ins = Object.keys(inputs).map(function (k) { return k + '=' + full(inputs[k]); }).join(', ');
          wt += '<tr><td class="mono">' + esc(ow[0]) + '</td><td class="mono">[' + esc((w[0] || []).join(', ')) + ']</td>' +
            '<td class="num mono">' + esc(full(w[1])) + '</td><td class="num mono">' + esc(full(w[2])) + '</td>' +
            '<td class="num">' + esc(fmt(w[3])) + '</td><td class="num">' + esc(fmt(w[4])) + '</td>' +
            '<td class="num">' + esc(fmt(w[5])) + (small ? '<sup class="small-mark" title="small value: judged by abs err ≤ ' +
              esc(fmt(pol[1])) + '">†</sup>' : '') + '</td><td class="mono">' + esc(ins) + '</td></tr>';
        });
        var legend = anySmall ? '<p class="note small-note">† expected value below the small-value threshold of the policy: ' +
          'the element is judged by its absolute error, its ULP distance means nothing.</p>' : '';
        h.push('<div class="wide"><h4>worst elements</h4><div class="scroll">' + wt + '</table></div>' + legend + '</div>');
      }
    } else if (c[F.ulp] !== null) {
      h.push('<div><h4>statistics</h4><dl class="kv"><dt title="' + esc(ULP_MEANING) + '">max ULP</dt><dd>' + fmt(c[F.ulp]) + '</dd><dt>max rel</dt><dd>' +
        fmt(c[F.rel]) + '</dd><dt>max abs</dt><dd>' + fmt(c[F.abs]) + '</dd></dl></div>');
    }
    var r = replayOf(c);
    if (r) {
      h.push('<div class="wide"><h4>replay</h4><div class="replay"><code>' + esc(r) + '</code>' +
        '<button type="button" class="copy" data-copy="' + esc(r) + '">Copy</button></div></div>');
    }
    h.push('</div>');
    return h.join('');
  }
  function copy(text, btn) {
    function done(ok) {
      btn.textContent = ok ? 'Copied' : 'Select and copy';
      setTimeout(function () { btn.textContent = 'Copy'; }, 1500);
    }
    function fallback() {
      var ta = document.createElement('textarea');
      ta.value = text; ta.style.position = 'fixed'; ta.style.opacity = '0';
      document.body.appendChild(ta); ta.select();
      var ok = false;
      try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
      ta.remove(); done(ok);
    }
    // The clipboard API may wait on a permission that never comes (file:// pages, headless):
    // give it a moment, then fall back to a selected textarea and execCommand.
    if (navigator.clipboard && window.isSecureContext) {
      var settled = false;
      var timer = setTimeout(function () { if (!settled) { settled = true; fallback(); } }, 800);
      navigator.clipboard.writeText(text).then(function () {
        if (!settled) { settled = true; clearTimeout(timer); done(true); }
      }, function () {
        if (!settled) { settled = true; clearTimeout(timer); fallback(); }
      });
    } else fallback();
  }

  // -- events ---------------------------------------------------------------------------------
  function showCases() { $('cases').scrollIntoView(); }
  function setClause(name) {
    state.clause = D.clauses.indexOf(name);
    state.clauseName = name;
    if (state.clause < 0) state.clause = -3; // a clause no case exercises: nothing matches
    state.verdicts.clear();
    changed(); showCases();
  }
  rowsEl.addEventListener('click', function (e) {
    var t = e.target;
    if (t.closest('.copy')) { copy(t.closest('.copy').getAttribute('data-copy'), t.closest('.copy')); return; }
    var link = t.closest('.clause-link');
    if (link) { e.preventDefault(); setClause(link.getAttribute('data-clause')); return; }
    var row = t.closest('tr.row');
    if (!row) return;
    var i = +row.getAttribute('data-i');
    if (state.open.has(i)) state.open.delete(i); else state.open.add(i);
    render();
  });
  pagerEl.addEventListener('click', function (e) {
    var b = e.target.closest('button');
    if (!b || b.disabled) return;
    var a = b.getAttribute('data-page'), pages = Math.ceil(matches().length / PAGE);
    state.page = a === 'first' ? 0 : a === 'prev' ? state.page - 1 : a === 'next' ? state.page + 1 : pages - 1;
    render();
  });
  activeEl.addEventListener('click', function (e) {
    var b = e.target.closest('button[data-clear]');
    if (!b) return;
    if (b.getAttribute('data-clear') === 'cell') state.cell = null; else state.clause = -1;
    changed();
  });
  $('chips').addEventListener('click', function (e) {
    var b = e.target.closest('.chip');
    if (!b) return;
    var v = b.getAttribute('data-verdict'), p = b.getAttribute('data-preset');
    if (v) { if (state.verdicts.has(v)) state.verdicts.delete(v); else state.verdicts.add(v); }
    else if (p === 'all') state.verdicts.clear();
    else { state.verdicts = new Set(FAILING); }
    changed();
  });
  $('verdict-pills').addEventListener('click', function (e) {
    var b = e.target.closest('.pill');
    if (!b) return;
    state.verdicts = new Set([b.getAttribute('data-verdict')]);
    state.cell = null; state.clause = -1;
    changed(); showCases();
  });
  var timer = null;
  $('q').addEventListener('input', function (e) {
    clearTimeout(timer);
    var value = e.target.value;
    timer = setTimeout(function () { state.q = value.trim(); changed(); }, 120);
  });
  $('sort').addEventListener('change', function (e) { state.sort = e.target.value; changed(); });
  function cellClick(td) {
    var cell = {};
    ['op', 'product', 'col'].forEach(function (k) { if (td.hasAttribute('data-' + k)) cell[k] = td.getAttribute('data-' + k); });
    state.cell = cell; state.verdicts.clear(); state.clause = -1; state.open.clear();
    changed(); showCases();
  }
  var table = $('matrix-table');
  table.addEventListener('click', function (e) {
    var td = e.target.closest('td.cell');
    if (td && (td.hasAttribute('data-op') || td.hasAttribute('data-col'))) cellClick(td);
  });
  table.addEventListener('keydown', function (e) {
    var td = e.target.closest('td.cell');
    if (td && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); cellClick(td); }
  });
  document.querySelectorAll('#matrix .clause-link, #coverage .clause-link').forEach(function (a) {
    a.addEventListener('click', function (e) { e.preventDefault(); setClause(a.getAttribute('data-clause')); });
  });

  render();
  document.documentElement.setAttribute('data-ready', String(Math.round(performance.now() - t0)));
})();
