"""The gallery, the scoreboard and an executed report in a real browser (headless Chromium, Debian's package).

Fixture runs go through the runner; Chromium (driven by Playwright, with the system browser: nothing is downloaded)
loads the pages from disk and the test asserts that math is rendered by the offline MathJax copy, that every link
and image resolves, and that the badges show the fixture's counts. Screenshots go to the test's temp folder
(``browser-shots/``). `.ci/run` installs chromium when it is missing; without it the test is skipped, saying so.
"""
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from lib.suite import gallery
from lib.suite.registry import Paper
from lib.suite.runner import execute, make_specs

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _paper(slug, number):
    return Paper(number=number, slug=slug, title=f"Fixture paper {slug}", authors="A. Author, B. Author",
                 venue="ICLR 2026", arxiv="", openreview="", code="", brief="", notebook=True, quick_budget_s=60)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    for seeds, mode in (([0, 1], "quick"), ([0], "full")):
        specs = make_specs([("fixture_kinds", FIXTURES / "fixture_kinds.ipynb")], mode=mode, seeds=seeds, params={},
                           out=out, speed_probe={"python_s": 0.5, "numpy_s": 0.1, "torch_s": 0.4, "line": "probe"})
        execute(specs, show_progress=False)
    gallery.build(out, [_paper("fixture_kinds", 1),
                        Paper(number=2, slug="planned_one", title="A planned paper", authors="C. Author",
                              venue="ICLR 2026", arxiv="2601.00002", openreview="", code="", brief="", notebook=False,
                              quick_budget_s=60)])
    return out


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def _open(browser, path: Path, shots: Path, name: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    failed = []
    page.on("requestfailed", lambda req: failed.append(req.url))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    shots.mkdir(exist_ok=True)
    return page, failed


def _local_targets(page, base: Path):
    """Every href/src of the page that points at a local file (anchors and web links left aside)."""
    urls = page.eval_on_selector_all("a[href], img[src], script[src], link[href]",
                                     "els => els.map(e => e.getAttribute('href') || e.getAttribute('src'))")
    out = []
    for u in urls:
        if not u or u.startswith(("#", "http://", "https://", "mailto:", "data:")):
            continue
        path = unquote(urlparse(u).path)
        out.append((u, (base.parent / path).resolve()))
    return out


def test_gallery_in_a_browser(site, browser, tmp_path):
    shots = tmp_path / "browser-shots"
    page, failed = _open(browser, site / "index.html", shots, "gallery")
    page.screenshot(path=str(shots / "gallery.png"), full_page=True)
    text = page.inner_text("body")
    assert "claims held 1/2 quick" in text and "full 1/2" in text and "sanity 1/1" in text
    assert "How to read the badges" in text and "Planned (1)" in text and "A planned paper" in text
    assert re.search(r"page built \d{4}-\d\d-\d\d", text)
    imgs = page.eval_on_selector_all("img", "els => els.map(e => [e.getAttribute('src'), e.naturalWidth])")
    assert imgs and all(w > 0 for _, w in imgs), imgs
    missing = [u for u, p in _local_targets(page, site / "index.html") if not p.exists()]
    assert not missing and not failed, (missing, failed)
    page.close()


def test_claims_page_in_a_browser(site, browser, tmp_path):
    shots = tmp_path / "browser-shots"
    page, failed = _open(browser, site / "CLAIMS.html", shots, "claims")
    page.screenshot(path=str(shots / "claims.png"), full_page=True)
    assert page.locator("#fixture_kinds").count() == 1
    ids = page.eval_on_selector_all("table.claims tbody tr td:first-child", "els => els.map(e => e.innerText)")
    assert ids == ["C1", "C2", "S1"]
    reason = page.eval_on_selector_all("a", "els => els.filter(e => e.innerText == 'why').map(e => e.href)")
    assert reason and all("#Differences-from-the-paper" in r for r in reason)
    missing = [u for u, p in _local_targets(page, site / "CLAIMS.html") if not p.exists()]
    assert not missing and not failed, (missing, failed)
    page.close()


def test_executed_report_renders_math_offline(site, browser, tmp_path):
    shots = tmp_path / "browser-shots"
    report = site / "fixture_kinds" / "quick-seed0" / "fixture_kinds.html"
    page, failed = _open(browser, report, shots, "report")
    page.wait_for_function("() => window.MathJax && MathJax.Hub && MathJax.Hub.queue && "
                           "document.querySelectorAll('.MathJax, .MathJax_CHTML, .MathJax_Display').length > 0",
                           timeout=30000)
    page.screenshot(path=str(shots / "report.png"), full_page=True)
    assert page.locator(".MathJax, .MathJax_CHTML").count() >= 2  # inline and display math typeset
    assert "$$" not in page.inner_text("main")
    assert not [u for u in failed if u.startswith("file:")], failed
    assert not [u for u in failed if "cdn" in u], failed
    rows = page.eval_on_selector_all("table.iclr26-claims tbody tr", "els => els.map(e => e.innerText)")
    assert len(rows) == 3 and "sanity check passed" in rows[2]
    assert page.locator(".iclr26-bar a", has_text="all papers").count() == 1
    missing = [u for u, p in _local_targets(page, report) if not p.exists()]
    assert not missing, missing
    page.close()
