"""The HTML report in a real headless Chromium (Debian's /usr/bin/chromium, driven by playwright).

The page loads with no console error and fetches nothing; the matrix, coverage and histograms are
there; clicking a failing matrix cell lists its cases and clicking a case shows its drill-down;
the filter box and verdict buttons filter; a 50,000-case report renders in bounded time with only
one page of cases in the DOM. Skips, saying why, where playwright or Chromium is missing.

ACLNN_CONFORM_CHROMIUM: another Chromium binary. ACLNN_CONFORM_SCREENSHOTS: a folder to keep the
screenshots in (default: the test's temporary folder).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from reports import write_reports
from reports.model import read_run

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


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


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
        i for i, v in ((r["id"], r["verdict"]) for r in run.records)
        if v in ("fail", "error", "crash", "timeout", "xpass")
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


def _big_run(n: int) -> list[dict]:
    """n cases: copies of the sample's records, one in seven keeping its own verdict (so about
    6 % fail, with details), the others a passing record's."""
    base = read_run(MIXED).records
    passing = [r for r in base if r["verdict"] == "pass"]
    out = []
    for i in range(n):
        src = base[i % len(base)] if i % 7 == 0 else passing[i % len(passing)]
        out.append(dict(src, id=f"{src['id']}/copy={i}"))
    return out


def test_fifty_thousand_cases_render_in_bounded_time(browser, tmp_path):
    records = _big_run(50_000)
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
    assert f"of {50_000} cases" in page.inner_text("#active")
    page.click('#chips .chip[data-preset="all"]')
    assert page.locator("#case-rows tr.row").count() == 50
    assert "1–50 of 50000" in page.inner_text("#pager")
    page.click('#pager button[data-page="last"]')
    assert "page 1000 / 1000" in page.inner_text("#pager")
    t0 = time.perf_counter()
    page.fill("#q", "copy=49999")
    page.wait_for_function("document.querySelectorAll('#case-rows tr.row').length === 1")
    assert time.perf_counter() - t0 < 5
    assert p.rows()[0].endswith("/copy=49999")
    page.select_option("#sort", "ulp")
    page.fill("#q", "")
    page.wait_for_function("document.querySelectorAll('#case-rows tr.row').length === 50")
    assert p.errors == [] and p.outside == []
    p.close()
