"""The HTML report in a real browser: every figure and table renders, offline, with no network request.

Reads the session's smoke pipeline (tests/workflow/conftest.py: the pipeline in a copy of the project, then
``snakemake --report report.html``) and opens its report in headless Chromium (Debian package ``chromium``),
driven over the DevTools protocol by ``scripts/screenshot_report.py``. The browser has no route out: host names do
not resolve and the page's browser context has a local recording listener as its only proxy, so a report that
needed the network would both fail to render and show up in the recorded connections and DevTools network events.
"""
import csv
import importlib.util
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
STUDY_DIR = "results/table1/smoke"
# Tables the report must show; others (aggregates, probability of improvement, ...) are checked too
# whenever the pipeline writes them.
REQUIRED_TABLES = {"table1", "table1_per_task", "per_task_clip0.2", "deviations", "random_scores", "provenance"}

pytestmark = [pytest.mark.integration, pytest.mark.skipif(not CHROMIUM.exists(),
                                reason=f"{CHROMIUM} not found: the report test needs headless Chromium "
                                       "(Debian: apt-get install chromium)")]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


shots = _load("screenshot_report", ROOT / "scripts/screenshot_report.py")
table_html = _load("table_html", ROOT / "workflow/scripts/table_html.py")


@pytest.fixture(scope="module")
def project(smoke_pipeline):
    """The session's smoke pipeline and its report.html (read only here)."""
    assert smoke_pipeline.run.returncode == 0, smoke_pipeline.run.stderr[-3000:]
    return smoke_pipeline.project


@pytest.fixture(scope="module")
def report(project):
    with shots.Browser(str(CHROMIUM)) as browser:
        page = shots.Report(browser, project / "report.html")
        page.open()
        yield page


@pytest.fixture(scope="module")
def results(report):
    return report.results()


def by_suffix(results, suffix):
    return {path: r for path, r in results.items() if path.endswith(suffix)}


def open_each(report, results):
    """Yield (path, result) in the order of the report's lists, with the right list shown."""
    for group in sorted({(r["category"], r["subcategory"]) for r in results.values()}):
        report.show_list(*group)
        for path, result in sorted(results.items()):
            if (result["category"], result["subcategory"]) == group:
                yield path, result


def png_size(path):
    header = Path(path).read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


def test_report_holds_every_figure_and_table(project, results):
    # Every study of the default config (Table 1 and Figure 3) is in the one report.
    on_disk = {str(p.relative_to(project)) for p in project.glob("results/*/smoke/report/*")
               if p.suffix in (".csv", ".png")}
    assert any("figure3/smoke/report/figure3_curves.png" in p for p in on_disk), sorted(on_disk)
    missing = on_disk - set(results)
    assert not missing, f"figures/tables written but left out of the report: {sorted(missing)}"
    tables = {Path(p).stem for p in by_suffix(results, ".csv")}
    assert REQUIRED_TABLES <= tables, f"missing tables: {sorted(REQUIRED_TABLES - tables)}"
    views = {Path(p).stem for p, r in by_suffix(results, ".html").items() if r["mime"] == "text/html"}
    assert tables <= views, f"tables without an HTML view in the report: {sorted(tables - views)}"
    assert by_suffix(results, ".png"), "no figure in the report"
    for path, result in results.items():
        assert result["data_uri"].startswith("data:"), f"{path} is not embedded in the report"
    # Provenance sits with Table 1, and each table view with its CSV.
    category = results[f"{STUDY_DIR}/report/table1.csv"]["category"]
    assert results[f"{STUDY_DIR}/report/provenance.csv"]["category"] == category
    for path, view in by_suffix(results, ".html").items():
        assert view["category"] == results[path.replace(".html", ".csv")]["category"], path


def test_every_figure_renders(report, results):
    for path, result in open_each(report, by_suffix(results, ".png")):
        report.show(path)
        state = report.image(result["data_uri"])
        width, height = png_size(report.path.parent / path)
        assert (state["naturalWidth"], state["naturalHeight"]) == (width, height), path
        assert state["width"] > 100 and state["height"] > 100, f"{path} is not visible: {state}"


def test_every_table_renders_every_entry(report, results):
    for path, result in open_each(report, by_suffix(results, ".html")):
        with open(report.path.parent / path.replace(".html", ".csv"), newline="", encoding="utf-8") as f:
            header, *rows = list(csv.reader(f))
        report.show(path)
        table = report.table(result["data_uri"])
        assert table["frame"]["width"] > 300 and table["frame"]["height"] > 300, f"{path}: view hidden"
        assert table["width"] > 0 and table["height"] > 0, f"{path}: table not laid out"
        assert table["header"] == header, path
        assert len(table["rows"]) == len(rows), f"{path}: {len(table['rows'])} rows shown, CSV has {len(rows)}"
        for i, (shown, expected) in enumerate(zip(table["rows"], rows)):
            assert [c["title"] for c in shown] == expected, f"{path} row {i}"
            assert [c["text"] for c in shown] == [table_html.shown(v) for v in expected], f"{path} row {i}"


def test_tables_and_figures_have_captions_and_csvs_download(report, results):
    for path, result in results.items():
        caption = report.browser.evaluate(f"results[{json.dumps(path)}].caption")
        assert caption and caption.strip(), f"{path} has no caption"
    for path, result in open_each(report, by_suffix(results, ".csv")):  # each study's list shown in turn
        button = report.view_button(path)
        assert button and button["download"] == Path(path).name, f"{path}: no download button"
        assert button["href"] == result["data_uri"] and button["href"].startswith("data:text/csv"), path


def test_provenance_names_budget_and_software(project):
    with open(project / STUDY_DIR / "report/provenance.csv", newline="") as f:
        rows = dict(csv.reader(f))
    assert rows.pop("key") == "value"
    for key in ("git_commit", "git_dirty", "torch", "gymnasium", "mujoco", "numpy", "pandas", "scipy",
                "snakemake", "python", "platform", "study", "scale", "scale_label", "seeds", "runs_planned",
                "runs_recorded"):
        assert rows.get(key), f"provenance has no {key}"
    assert rows["scale"] == "smoke" and "SMOKE" in rows["scale_label"]
    assert rows["runs_planned"] == rows["runs_recorded"] and int(rows["runs_planned"]) >= 2
    assert rows["runs_status"].startswith("completed")


def test_no_network_request_and_no_error(report, results):
    """Runs after the views above were opened: nothing they did left the page."""
    browser = report.browser
    browser.pump(1.0)  # late requests, if any
    assert browser.requests, "no network events were recorded at all: the DevTools network watch is broken"
    assert not browser.off_page_requests(report.url), browser.off_page_requests(report.url)
    assert not browser.proxy.connections, f"the report's page opened connections: {browser.proxy.connections}"
    assert not browser.errors, browser.errors


def test_network_watch_sees_a_request(tmp_path):
    """The checks above are not vacuous: a page that reaches out, directly or from an embedded frame, is caught."""
    page = tmp_path / "leaky.html"
    page.write_text('<img src="http://example.invalid/a.png">'
                    '<iframe src="data:text/html,<img src=\'https://frame.example.invalid/b.png\'>"></iframe>')
    with shots.Browser(str(CHROMIUM)) as browser:
        browser.navigate(page.as_uri())
        browser.pump(2.0)
        assert browser.off_page_requests(page.as_uri()) == ["http://example.invalid/a.png",
                                                            "https://frame.example.invalid/b.png"]
        reached = " ".join(browser.proxy.connections)
        assert "example.invalid/a.png" in reached and "frame.example.invalid:443" in reached, reached


def test_screenshot_script_writes_every_view(project, results, tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "scripts/screenshot_report.py"), "report.html",
                           str(tmp_path)], cwd=project, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "network" not in done.stderr, done.stderr
    names = {p.name for p in tmp_path.glob("*.png")}
    assert {"00_main.png", "01_results.png"} <= names
    for path, result in results.items():
        if result["mime"] in ("image/png", "text/html"):
            assert any(n.endswith(f"_{result['name']}.png") for n in names), f"no screenshot of {path}"
    for shot in tmp_path.glob("*.png"):
        width, height = png_size(shot)
        assert width >= 1600 and height >= 1000, shot


@pytest.mark.parametrize("width, height", [(1366, 768), (1920, 1080)])
def test_the_first_screen_shows_the_top_of_the_page(report, width, height):
    """The content pane's column starts at the pane's top and not left of it, so the front page opens on its first
    lines, none of them under the navigation bar, and every part of it is reachable by scrolling (it used to start
    ~3,000 px above the window; beside ./repro paper's wide workflow graph it started ~115 px under the navigation
    bar at 1366x768, the headline table's first column hidden)."""
    report.browser.set_viewport(height=height, width=width)
    try:
        report.browser.pump(0.3)
        offset = report.browser.evaluate("""(() => {
            const pane = [...document.querySelectorAll('div.h-screen.overflow-auto')]
                .find(d => d.classList.contains('grow'));
            pane.scrollTop = 0;
            pane.scrollLeft = 0;
            const box = pane.getBoundingClientRect(), first = pane.firstElementChild.getBoundingClientRect();
            return {top: first.top - box.top, left: first.left - box.left};
        })()""")
        assert offset["top"] >= 0, f"the content's top is {-offset['top']:.0f} px above the window at {width}x{height}"
        assert offset["left"] >= 0, (f"the content starts {-offset['left']:.0f} px left of its pane, under the "
                                     f"navigation bar, at {width}x{height}")
    finally:
        report.browser.set_viewport(height=1000, width=1600)
