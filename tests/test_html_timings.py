"""The HTML report's drill-down shows a case's device, where it moved from and its device times
(docs/timings.md), in a real headless Chromium (see tests/test_html_chromium.py; skipped, saying
why, where playwright or Chromium is missing)."""

from __future__ import annotations

import dataclasses

import pytest
from aclnn_conformance.reports import write_reports
from aclnn_conformance.reports.run import read_run

from tests.test_html_chromium import ARGS, CHROMIUM, FAIL_F16, MIXED, Page, _missing

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(_missing() is not None, reason=str(_missing())),
]


def test_the_drill_down_shows_the_device_and_its_times(tmp_path):
    from playwright.sync_api import sync_playwright

    run = read_run(MIXED)
    records = []
    for r in run.records:
        if r.id == FAIL_F16:
            r = dataclasses.replace(r, device=3, moved={"from": 1, "why": "device 1 is lost"},
                                    phase1_us=12.5, phase2_us=2000.0, phase2_clock="event",
                                    timed_runs=3, warmup_runs=1)  # fmt: skip
        records.append(r)
    (html,) = write_reports(records, run.meta, html=tmp_path / "timed.html")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            p = Page(browser, html)
            p.page.locator("#case-rows tr.row", has_text=FAIL_F16).click()
            p.page.wait_for_selector("#case-rows tr.detail")
            text = " ".join(p.page.locator("#case-rows tr.detail").inner_text().split())
            assert "device 3 (moved from device 1, given up: device 1 is lost)" in text
            assert (
                "device time phase 1 12.5 µs · phase 2 2000 µs "
                "(event clock, median of 3 calls, after 1 warm-up)"
            ) in text
            assert not p.errors and not p.outside
        finally:
            browser.close()
