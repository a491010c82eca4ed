"""`schedlab report` in a real browser.

test_report.py checks the files: the <img> tags name the PNGs that exist and
matplotlib can read them. Only a browser shows that the page as written
displays them (relative paths, escaping, the PNGs decoding in Chromium). So
headless Chromium opens index.html and JavaScript checks that every <img>
loaded and decoded, that there are as many as the figures report.md lists,
that the page fits the window's width, and that the console logged no
errors. A full-page screenshot is kept for a human to look at: in tmp_path,
and copied into $SCHEDLAB_TEST_ARTIFACTS when that is set.

Skipped when Chromium, chromedriver (Debian's chromium and chromium-driver,
which .ci/run installs) or selenium is missing.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schedlab.cli import app

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]

IMAGES_JS = """
const imgs = Array.from(document.images);
return {
  images: imgs.length,
  figures: document.querySelectorAll("figure").length,
  broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
  overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
};
"""


@pytest.fixture
def browser() -> Iterator[Any]:
    """Headless Chromium driven through the system chromedriver; passing
    both paths keeps Selenium Manager from trying to download them."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    for exe in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(exe) is None:
            pytest.skip(f"{exe} is not installed (apt-get install chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in [*FLAGS, "--window-size=1280,900"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def _report(tmp_path: Path) -> Path:
    """The report of a small compare: two policies, two seeds."""
    runner = CliRunner()
    policies = ["-p", "eevdf", "-p", "eevdf-WA_IDLE"]
    workload = ["-m", "laptop-4c8t", "-w", "hackbench:groups=1,loops=20"]
    res = runner.invoke(
        app, ["compare", *workload, *policies, "--runs", "2", "--jobs", "1", "--json"]
    )
    assert res.exit_code == 0, res.output
    (tmp_path / "cmp.json").write_text(res.stdout)
    out = tmp_path / "rep"
    res = runner.invoke(app, ["report", str(tmp_path / "cmp.json"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _full_page_png(driver: Any) -> bytes:
    """The whole page, not just the window, through the DevTools protocol."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    return base64.b64decode(shot["data"])


def _check_page(browser: Any, out: Path, figures: int, shot: Path) -> None:
    """Load ``out/index.html``: every image loads and decodes, there are
    ``figures`` of them, long content wraps (no sideways scroll in a 1280 px
    window), the console shows no error; then save a full-page screenshot
    (copied to $SCHEDLAB_TEST_ARTIFACTS when set)."""
    browser.get((out / "index.html").as_uri())  # returns after the load event
    page = browser.execute_script(IMAGES_JS)
    assert page["broken"] == [], "images that did not load or decode"
    assert page["images"] == page["figures"] == figures, page
    assert page["overflow"] <= 0, page
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors
    shot.write_bytes(_full_page_png(browser))
    print(f"full-page screenshot: {shot}")
    if artifacts := os.environ.get("SCHEDLAB_TEST_ARTIFACTS"):
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        print(f"full-page screenshot: {shutil.copy(shot, artifacts)}")


def test_report_images_display_in_chromium(tmp_path: Path, browser: Any) -> None:
    out = _report(tmp_path)
    listed = re.findall(r"^- `([^`]+\.png)`:", (out / "report.md").read_text(), re.MULTILINE)
    assert listed, "report.md lists no figures"
    assert sorted(listed) == sorted(p.name for p in out.glob("*.png"))

    _check_page(browser, out, len(listed), tmp_path / "report-full-page.png")


def test_reproduce_report_displays_in_chromium(tmp_path: Path, browser: Any) -> None:
    """The page `reproduce --report` writes: every SVG figure decodes, one
    per figure report.md lists (a machine shared by cases is drawn once and
    shown with each), and the wide tables scroll in their boxes instead of
    widening the page."""
    out = tmp_path / "repro"
    cases = ["joel-ping-hackbench", "cluster-first-jacobsville"]
    res = CliRunner().invoke(
        app, ["reproduce", *cases, "--scale", "0.01", "-j", "1", "--report", str(out)]
    )
    assert res.exit_code == 0, res.output
    listed = re.findall(r"^- `([^`]+)\.png`:", (out / "report.md").read_text(), re.MULTILINE)
    assert listed, "report.md lists no figures"
    assert sorted(set(listed)) == sorted(p.stem for p in out.glob("*.svg"))

    _check_page(browser, out, len(listed), tmp_path / "reproduce-report-full-page.png")
