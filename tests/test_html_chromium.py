"""The HTML report in a real headless Chromium (Debian's /usr/bin/chromium, driven by playwright).

The page loads with no console error and fetches nothing; the matrix, coverage and histograms are
there; clicking a failing matrix cell lists its cases and clicking a case shows its drill-down;
the filter box and verdict buttons filter; a 50,000-case report renders in bounded time with only
one page of cases in the DOM; at three window widths case ids break only at their '/' separators
and reasons are whole, wrapped inside their cells; the deviation verdict has its own pill, colour,
matrix mark and drill-down with its deviation id; a huge max ULP at a small expected value is
explained where it is shown. Skips, saying why, where playwright or Chromium is missing.

ACLNN_CONFORM_CHROMIUM: another Chromium binary. ACLNN_CONFORM_SCREENSHOTS: a folder to keep the
screenshots in (default: the test's temporary folder).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
from aclnn_conformance.conformance.judge.result import Result
from aclnn_conformance.reports import write_reports
from aclnn_conformance.reports.casetable import PASS_ROWS
from aclnn_conformance.reports.run import read_run

MIXED = Path(__file__).parent / "data" / "results" / "mixed.jsonl"
CHROMIUM = os.environ.get("ACLNN_CONFORM_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
FAIL_F16 = "elu_backward/atlas-a2/f16/isResult=0/values=wide"
XPASS = "hardshrink_backward/atlas-training/f16/-/point=x-zero"


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright; its driver ships in the wheel)"
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        return (
            f"no Chromium at {CHROMIUM} (apt-get install chromium, or set ACLNN_CONFORM_CHROMIUM)"
        )
    return None


pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(_missing() is not None, reason=str(_missing())),
]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Page:
    """A page that records console errors, page errors and every request leaving the file."""

    def __init__(self, browser, path: Path, width: int = 1400, height: int = 1000):
        self.errors: list[str] = []
        self.outside: list[str] = []
        # bypass_csp: the page forbids eval, which wait_for_function needs; fetches are caught below
        self.page = browser.new_page(viewport={"width": width, "height": height}, bypass_csp=True)
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)
        t0 = time.perf_counter()
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("html[data-ready]", timeout=60_000)
        self.load_seconds = time.perf_counter() - t0

    def _route(self, route):
        url = route.request.url
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def rows(self) -> list[str]:
        return self.page.locator("#case-rows tr.row td.id").all_inner_texts()

    def close(self) -> None:
        self.page.close()


def screenshot_dir(tmp_path: Path) -> Path:
    d = Path(os.environ.get("ACLNN_CONFORM_SCREENSHOTS") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_mixed_report_matrix_drill_down_filters_and_screenshot(browser, tmp_path):
    run = read_run(MIXED)
    (html,) = write_reports(run.records, run.meta, html=tmp_path / "mixed.html")
    p = Page(browser, html)
    page = p.page
    # header, matrix, coverage, histograms
    assert page.inner_text("#status") == "6 failing of 14"
    assert page.locator("#matrix-table td.cell[data-op][data-col]").count() == 7
    cell = page.locator(
        '#matrix-table td.cell[data-op="elu_backward"][data-product="atlas-a2"][data-col="f16"]'
    )
    assert " ".join(cell.inner_text().split()) == "1/3 1 ✗"  # pass, fail, skip
    assert cell.get_attribute("class").split() == ["cell", "r50"]  # 1 pass of 2 judged
    assert page.locator("#coverage table.cov tr").count() > 20
    assert page.locator("#errors svg.hist").count() >= 4
    # default list: the 6 failing cases
    assert sorted(p.rows()) == sorted(
        i for i, v in ((r.id, r.verdict) for r in run.records)
        if v in ("fail", "nondeterministic", "error", "crash", "timeout", "xpass")
    )  # fmt: skip
    # click the failing cell: its three cases
    cell.click()
    assert sorted(p.rows()) == sorted([FAIL_F16, "elu_backward/atlas-a2/f16/isResult=0/values=normal",
                                       "elu_backward/atlas-a2/f16/isResult=1/values=normal"])  # fmt: skip
    assert "cell: elu_backward · atlas-a2 · f16" in page.inner_text("#active")
    # click the failing case: its drill-down
    page.locator("#case-rows tr.row", has_text=FAIL_F16).click()
    page.wait_for_selector("#case-rows tr.detail")
    detail = page.locator("#case-rows tr.detail")
    assert detail.count() == 1
    text = detail.inner_text()
    for needle in ("mismatch ratio 0.0666667 (1/15) > max_ratio 0.001", "1.2001953125",
                   "1.2021484375", "elu_backward/positive", "[3, 5]", "[5, 1]",
                   "expected 0 · oracle 0 · actual 0",
                   f"aclnn-conform replay '{FAIL_F16}' --seed 0 --backend npu-test"):  # fmt: skip
        assert needle in text, needle
    page.locator("#case-rows tr.detail button.copy").click()
    page.wait_for_function(
        "document.querySelector('#case-rows tr.detail button.copy').textContent !== 'Copy'"
    )
    shots = screenshot_dir(tmp_path)
    page.locator("#cases").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "report-drilldown.png"))
    # filter box and verdict buttons
    page.click('#active button[data-clear="cell"]')
    page.click('#chips .chip[data-preset="all"]')
    page.fill("#q", "x-zero")
    page.wait_for_function("document.querySelectorAll('#case-rows tr.row').length === 1")
    assert p.rows() == [XPASS]
    page.fill("#q", "")
    page.click('#verdict-pills .pill[data-verdict="crash"]')
    page.wait_for_function("document.querySelectorAll('#case-rows tr.row').length === 1")
    assert p.rows() == ["elu_backward/atlas-a2/f32/isResult=1/values=normal"]
    # a clause in the coverage table lists the cases exercising it
    page.locator('#coverage .clause-link[data-clause="elu_backward/null-ptr"]').first.click()
    page.wait_for_function("document.querySelectorAll('#case-rows tr.row').length === 1")
    assert p.rows() == ["elu_backward/atlas-a2/neg/null-ptr/gradOutput"]
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "report.png"), full_page=True)
    png = (shots / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000
    assert p.errors == [] and p.outside == []
    p.close()


def _big_run(n: int) -> list[Result]:
    """n cases: copies of the sample's records, one in seven cycling through all of them (so
    every verdict occurs, about 4 % of the cases failing with details), the others copies of a
    passing record."""
    base = read_run(MIXED).records
    passing = [r for r in base if r.verdict == "pass"]
    out = []
    for i in range(n):
        src = base[(i // 7) % len(base)] if i % 7 == 0 else passing[i % len(passing)]
        out.append(replace(src, id=f"{src.id}/copy={i}"))
    return out


def test_fifty_thousand_cases_render_in_bounded_time(browser, tmp_path):
    """50,000 cases: every case that did not pass is listed, passes up to PASS_ROWS; the page
    says so, and its counts still count all 50,000."""
    records = _big_run(50_000)
    passes = sum(r.verdict == "pass" for r in records)
    others = [r.id for r in records if r.verdict != "pass"]
    assert passes > PASS_ROWS and len(set(r.verdict for r in records)) == 8
    listed = len(others) + PASS_ROWS
    t0 = time.perf_counter()
    (html,) = write_reports(records, {"backend": "npu-test"}, html=tmp_path / "big.html")
    render_seconds = time.perf_counter() - t0
    size = html.stat().st_size
    assert render_seconds < 120, render_seconds
    assert size < 30_000_000, size  # the embedded cases are compact
    p = Page(browser, html)
    page = p.page
    assert p.load_seconds < 20, p.load_seconds  # parse ~10 MB of JSON, draw one page
    assert page.locator("#case-rows tr").count() <= 50  # only the visible page is in the DOM
    assert f"of {listed} listed cases" in page.inner_text("#active")
    body = page.inner_text("body")
    assert f"{PASS_ROWS:,} of the {passes:,} passing cases" in body
    page.click('#chips .chip[data-preset="all"]')
    assert page.locator("#case-rows tr.row").count() == 50
    assert f"1–50 of {listed}" in page.inner_text("#pager")
    page.click('#pager button[data-page="last"]')
    pages = -(-listed // 50)
    assert f"page {pages} / {pages}" in page.inner_text("#pager")
    t0 = time.perf_counter()
    last = others[-1]  # a failing case near the end of the run is listed and found
    page.fill("#q", last.split("/")[-1])
    page.wait_for_function("document.querySelectorAll('#case-rows tr.row').length === 1")
    assert time.perf_counter() - t0 < 5
    assert p.rows()[0] == last
    page.select_option("#sort", "ulp")
    page.fill("#q", "")
    page.wait_for_function("document.querySelectorAll('#case-rows tr.row').length === 50")
    assert p.errors == [] and p.outside == []
    p.close()


DEVIATION = Path(__file__).parent / "data" / "results" / "deviation.jsonl"
DEV = "hardshrink_backward/atlas-training/f32/-/point=x-zero-negative-lambd"
SMALL = "gelu_backward_v2/atlas-a2/f32.bf16.f32/approximate=none/shape=bcast-1x3"
LONG = "elu_backward/atlas-a2/f32/isResult=0/values=wide"  # a reason of ~470 characters

# Per case-id cell: how many lines each '/'-segment occupies (getClientRects of its span) and how
# many lines the whole id takes; the cell's text; whether the id overflows its cell.
ID_LAYOUT = """() => Array.from(document.querySelectorAll('#case-rows td.id')).map(td => {
  const spans = Array.from(td.querySelectorAll('span.idp'));
  const tops = new Set(spans.map(s => Math.round(s.getBoundingClientRect().top)));
  return {text: td.innerText, segments: spans.map(s => s.textContent),
          lines: spans.map(s => new Set(Array.from(s.getClientRects(), r => Math.round(r.top))).size),
          idLines: tops.size,
          overflow: td.scrollWidth > td.clientWidth};
})"""
# Per reason cell: its text and whether the text's box lies inside the cell's, and the cell inside
# the visible part of the table's scroll box (nothing clipped, no scrolling needed to read it).
REASON_LAYOUT = """() => Array.from(document.querySelectorAll('#case-rows td.reason')).map(td => {
  const r = document.createRange(); r.selectNodeContents(td);
  const t = r.getBoundingClientRect(), c = td.getBoundingClientRect();
  const box = td.closest('.scroll').getBoundingClientRect();
  return {text: td.innerText, inside: t.left >= c.left - 0.5 && t.right <= c.right + 0.5 &&
          t.bottom <= c.bottom + 0.5 && c.right <= box.right + 0.5,
          overflow: td.scrollWidth > td.clientWidth,
          lines: Math.round(t.height / parseFloat(getComputedStyle(td).lineHeight))};
})"""


@pytest.mark.parametrize("width", [700, 1000, 1400])
def test_ids_wrap_only_at_slashes_and_reasons_are_not_clipped(browser, tmp_path, width):
    run = read_run(DEVIATION)
    records = run.records + read_run(MIXED).records
    (html,) = write_reports(records, run.meta, html=tmp_path / "d.html")
    p = Page(browser, html, width=width)
    page = p.page
    page.click('#chips .chip[data-preset="all"]')
    ids = page.evaluate(ID_LAYOUT)
    assert sorted(i["text"] for i in ids) == sorted(r.id for r in records)
    for i in ids:
        assert (
            "".join(i["segments"]) == i["text"] and len(i["segments"]) == i["text"].count("/") + 1
        )
        assert i["lines"] == [1] * len(i["segments"]), i  # no segment breaks across lines
        assert not i["overflow"], i
    if width <= 1000:  # narrow: ids do wrap, at a '/'
        assert any(i["idLines"] > 1 for i in ids)
    reasons = page.evaluate(REASON_LAYOUT)
    for r in reasons:
        assert (r["inside"] or not r["text"]) and not r["overflow"], r
    by_text = {r["text"].split(" ")[0]: r for r in reasons if r["text"]}
    whole = next(r for r in reasons if "NaN guard returns 0" in r["text"])  # 200 characters
    assert whole["text"].endswith("END-OF-REASON") and whole["lines"] > 1
    assert by_text  # the long reason: its first 240 characters, then a pointer to the details
    cut = next(r for r in reasons if "aclnnEluBackwardGetWorkspaceSize" in r["text"])
    assert cut["text"].endswith("(the full reason is in the details)")
    page.locator("#case-rows tr.row", has_text=LONG).click()
    msg = page.locator("#case-rows tr.detail .msg").first
    full = next(r.reason for r in records if r.id == LONG)
    assert msg.inner_text() == full and full.endswith("END-OF-REASON")
    box, cell = msg.bounding_box(), page.locator("#case-rows tr.detail > td").bounding_box()
    assert box["x"] + box["width"] <= cell["x"] + cell["width"] + 0.5  # wrapped, within the row
    assert p.errors == [] and p.outside == []
    p.close()


def test_deviation_verdict_and_small_value_ulp_notes(browser, tmp_path):
    run = read_run(DEVIATION)
    (html,) = write_reports(run.records, run.meta, html=tmp_path / "dev.html")
    p = Page(browser, html)
    page = p.page
    assert page.inner_text("#status") == "2 failing of 5"
    pill = page.locator('#verdict-pills .pill[data-verdict="deviation"]')
    assert pill.inner_text().split() == ["1", "deviation"]
    colour = pill.evaluate("e => getComputedStyle(e).borderLeftColor")
    xfail = page.locator('#verdict-pills .pill[data-verdict="xfail"]')
    assert colour != xfail.evaluate("e => getComputedStyle(e).borderLeftColor")
    cell = page.locator('#matrix-table td.cell[data-op="hardshrink_backward"][data-col="f32"]')
    assert cell.get_attribute("class").split() == ["cell", "rdev"]
    assert " ".join(cell.inner_text().split()) == "0/1 1 dev"
    assert "documented deviations" in page.inner_text("#matrix .legend")
    assert DEV not in p.rows()  # not among the failing cases shown first
    pill.click()
    page.wait_for_function("document.querySelectorAll('#case-rows tr.row').length === 1")
    assert p.rows() == [DEV]
    row = page.locator("#case-rows tr.row", has_text=DEV)
    assert "deviation hardshrink_backward/negative-lambd-torch" in row.inner_text()
    row.click()
    detail = page.locator("#case-rows tr.detail").inner_text()
    for needle in ("fail → deviation", "documented deviation hardshrink_backward/negative-lambd-torch",
                   "PyTorch does not clamp a negative lambda", "mismatch ratio 1 (1/1)"):  # fmt: skip
        assert needle in detail, needle
    # the passing case whose max ULP is huge at a small expected value: said where it is shown
    caption = page.locator("#errors figure.panel", has_text="gelu_backward_v2").filter(
        has_text="f32").inner_text()  # fmt: skip
    assert "max 1.48e9 ulp*" in caption and "small-value threshold 2^-8" in caption
    page.click('#chips .chip[data-preset="all"]')
    ulp = page.locator("#case-rows tr.row", has_text=SMALL).locator("td.num").first
    assert ulp.inner_text() == "1.48e9*" and "passed by this small-value rule" in ulp.get_attribute(
        "title")  # fmt: skip
    page.locator("#case-rows tr.row", has_text=SMALL).click()
    detail = page.locator("#case-rows tr.detail", has_text="gelu_backward_v2").inner_text()
    assert "max 1.48e9 ulp is at the expected value -2.9e-12, below the small-value threshold " \
           "2^-8 of the f32 policy" in detail  # fmt: skip
    assert "the output passed by this small-value rule" in detail
    assert "1.48e9†" in detail and "8.16e8†" in detail  # worst elements, both small values
    page.locator("#cases").screenshot(path=str(screenshot_dir(tmp_path) / "report-deviation.png"))
    assert p.errors == [] and p.outside == []
    p.close()
