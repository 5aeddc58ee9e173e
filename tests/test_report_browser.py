"""report.html in a real browser: `repro verify-all` writes it, headless Chromium renders it without a console
error, shows as many claims as results.json holds, and leaves a screenshot.

Chromium is Debian's `chromium` (.ci/run installs it and sets REPRO_REQUIRE_CHROMIUM=1, so there the test
must run); elsewhere the test skips saying so. The screenshot is kept under the test's temporary folder and
copied to $REPRO_ARTIFACTS/report-html.png when that is set (.ci/run prints the path).
"""

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkout import MANIFESTS
from repro.cli import app

# Injected into a copy of the page only (the report itself has no script): records uncaught errors, failed
# resource loads (capture phase) and console.error calls, then writes them and the broken images into the DOM.
PROBE = """<script>
(function () {
  var seen = [];
  window.addEventListener("error", function (e) {
    seen.push(e.message || ("failed to load " + ((e.target && (e.target.src || e.target.href)) || "a resource")));
  }, true);
  var error = console.error;
  console.error = function () {
    seen.push(Array.prototype.join.call(arguments, " "));
    error.apply(console, arguments);
  };
  window.addEventListener("load", function () {
    var broken = Array.prototype.filter.call(document.images, function (i) {
      return !i.complete || i.naturalWidth === 0;
    });
    document.documentElement.setAttribute("data-probe-errors", JSON.stringify(seen));
    document.documentElement.setAttribute("data-probe-broken-images", String(broken.length));
    document.documentElement.setAttribute("data-probe-images", String(document.images.length));
  });
})();
</script>"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("REPRO_REQUIRE_CHROMIUM"):
            pytest.fail("chromium is required (REPRO_REQUIRE_CHROMIUM is set) but not installed")
        pytest.skip("chromium not installed (Debian: apt-get install chromium); .ci/run installs it")
    return found


def browse(binary: str, page: Path, profile_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium on a local file, nothing fetched from the network, console messages on stderr."""
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile_dir}",
        "--enable-logging=stderr",
        "--v=0",
    ]
    return subprocess.run([binary, *flags, *args, page.as_uri()], capture_output=True, text=True, timeout=180)


def console_lines(stderr: str) -> list[str]:
    """Chromium logs each console message of the page as ':CONSOLE(<line>)] "<text>", source: <url>'."""
    return [line for line in stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]


class Claims(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.claims, self.root = 0, {}
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.root = a
        if tag == "details" and "claim" in (a.get("class") or "").split():
            self.claims += 1


@pytest.mark.slow  # verify-all trains two small tables, then two Chromium runs
def test_verify_all_writes_a_report_html_that_renders_in_chromium(tmp_path, monkeypatch):
    binary = chromium()
    manifests = tmp_path / "manifests"  # a table that trains (claims, figures, run records) and one that counts FLOPs
    manifests.mkdir()
    for name in ("headline_cifar10", "table6"):
        shutil.copy(MANIFESTS / f"{name}.toml", manifests)
    monkeypatch.setenv("REPRO_MANIFESTS", str(manifests))
    results = tmp_path / "results"
    run = CliRunner().invoke(app, ["verify-all", "--results-dir", str(results), "--jobs", "1"])
    assert run.exit_code == 0, run.output
    page = results / "smoke" / "report.html"
    assert page.is_file()
    text = page.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text  # nothing to fetch: figures are inline

    probed = page.with_name("report-probe.html")  # beside it, so relative links resolve the same way
    probed.write_text(text.replace("<head>", "<head>\n" + PROBE, 1), encoding="utf-8")
    dom = browse(binary, probed, tmp_path / "chromium-dom", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-3000:]
    assert not console_lines(dom.stderr), console_lines(dom.stderr)
    shown = Claims(dom.stdout)
    assert shown.root.get("data-probe-errors") == "[]", shown.root
    assert shown.root.get("data-probe-broken-images") == "0" and int(shown.root["data-probe-images"]) > 0, shown.root
    stored = sum(len(json.loads(p.read_text())["verdicts"]) for p in (results / "smoke").glob("*/results.json"))
    assert shown.claims == stored > 0

    shot = tmp_path / "report-html.png"
    taken = browse(
        binary, page, tmp_path / "chromium-shot", f"--screenshot={shot}", "--window-size=1280,2000", "--hide-scrollbars"
    )
    assert taken.returncode == 0, taken.stderr[-3000:]
    assert not console_lines(taken.stderr), console_lines(taken.stderr)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    artifacts = os.environ.get("REPRO_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / "report-html.png")


# Injected into a copy of the page shown in a frame of a given width: the page's scroll width against its
# viewport's, whether the per-table summary's header row shows (folded: it does not), each element that
# sticks out of the viewport without a scrolling box of its own around it, and each box that scrolls sideways
# (its content wider than it) with the backgrounds that hint so.
WIDTH_PROBE = """<script>
window.addEventListener("load", function () {
  var d = document.documentElement, out = [];
  document.querySelectorAll("body *").forEach(function (e) {
    var a = e.parentElement, boxed = false;
    for (; a; a = a.parentElement) { if (getComputedStyle(a).overflowX !== "visible") { boxed = true; } }
    if (!boxed && e.getBoundingClientRect().right > d.clientWidth + 1 && out.length < 10) {
      out.push(e.tagName + "." + e.className + ": " + (e.textContent || "").slice(0, 50));
    }
  });
  var head = document.querySelector("table.per-table thead"), scrolling = [];
  document.querySelectorAll("body *").forEach(function (e) {
    var s = getComputedStyle(e);
    if (s.overflowX === "auto" && e.scrollWidth > e.clientWidth + 1) {
      scrolling.push({tag: e.tagName, image: s.backgroundImage, attachment: s.backgroundAttachment,
                      position: s.backgroundPositionX});
    }
  });
  parent.postMessage({scroll: d.scrollWidth, client: d.clientWidth, outside: out, scrolling: scrolling,
                      summaryHeader: getComputedStyle(head).display}, "*");
});
</script>"""


def measured_at(binary: str, page: Path, width: int, profile_dir: Path) -> dict:
    """The page's widths in a frame `width` CSS pixels wide (a headless window is at least 500 px wide)."""
    probed = page.with_name(f"probe-{width}.html")
    probed.write_text(page.read_text(encoding="utf-8").replace("<head>", "<head>\n" + WIDTH_PROBE, 1), encoding="utf-8")
    frame = page.with_name(f"frame-{width}.html")
    frame.write_text(
        f'<!DOCTYPE html><html><body style="margin:0"><iframe src="{probed.name}" '
        f'style="width:{width}px;height:1600px;border:0"></iframe><script>window.addEventListener('
        '"message", function (e) { document.documentElement.setAttribute("data-probe", '
        "JSON.stringify(e.data)); });</script></body></html>",
        encoding="utf-8",
    )
    dom = browse(
        binary,
        frame,
        profile_dir,
        f"--window-size={max(width + 100, 600)},1600",
        "--virtual-time-budget=10000",
        "--dump-dom",
    )
    assert dom.returncode == 0, dom.stderr[-3000:]
    found = re.search(r'data-probe="([^"]*)"', dom.stdout)
    assert found, dom.stdout[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<"))


@pytest.mark.slow  # three Chromium runs
def test_the_report_fits_a_400_px_screen_without_sideways_scrolling(tmp_path):
    """At 400 px the per-table summary folds (a line per table, labels beside the counts) and wide tables scroll
    inside their own box: the page's scroll width is its viewport's. At 1280 px the summary is a table."""
    import dataclasses

    from repro.claims import decide_table, decided_results
    from repro.plan.manifest import find_manifest
    from repro.cost.taken import for_report
    from repro.plan.table_plan import plan_all
    from repro.report.summary import write_report
    from repro.results.measurements import save_result
    from test_figures import fake_result

    binary = chromium()
    results = tmp_path / "results"
    manifests = [find_manifest(i) for i in ("headline_cifar10", "table2", "table6", "table7")]
    for m in manifests[:2]:  # trained tables: claims, figures, wide tables of run links; the others not run
        result = dataclasses.replace(
            fake_result(m),
            provenance={
                "git_commit": "0123456789abcdef0123456789abcdef01234567+dirty",
                "time": "2026-01-01T00:00:00+00:00",
                "device": "cpu: a processor with a rather long name, 1 intra-op thread(s)",
                "packages": {},
            },
            profile_settings=m.profiles["smoke"].for_manifest(m.id, m.seeds),
        )
        save_result(decide_table(m, result), results)
    write_report(
        decided_results(results, "smoke", manifests),
        results,
        "smoke",
        for_report(results, "smoke", plan_all(manifests)),
    )
    page = results / "smoke" / "report.html"

    narrow = measured_at(binary, page, 400, tmp_path / "chromium-400")
    assert narrow["client"] >= 380 and narrow["scroll"] <= narrow["client"], narrow
    assert narrow["outside"] == [] and narrow["summaryHeader"] == "none", narrow
    # Issue 49: where a table scrolls sideways, nothing said that its Gap, p and d columns lay beyond the edge.
    # Each box that scrolls has a shadow at each edge (fixed to the box) under a white cover that scrolls with
    # the content: the shadow shows where more of the table lies.
    assert narrow["scrolling"] and all(s["tag"] == "TABLE" for s in narrow["scrolling"]), narrow["scrolling"]
    for box in narrow["scrolling"]:
        assert box["image"].count("linear-gradient") == 4, box  # two covers (white), two shadows
        assert box["attachment"] == "local, local, scroll, scroll", box
    wide = measured_at(binary, page, 1280, tmp_path / "chromium-1280")
    assert wide["scroll"] <= wide["client"] and wide["summaryHeader"] == "table-header-group", wide
    print(
        f"scroll / client width: {narrow['scroll']} / {narrow['client']} px at 400, "
        f"{wide['scroll']} / {wide['client']} px at 1280"
    )  # docs/evaluation.md quotes it (pytest -s)

    shot = tmp_path / "report-html-400.png"  # the page as a 400 px screen shows it
    frame = page.with_name("frame-400.html")
    frame.write_text(frame.read_text().replace("probe-400.html", page.name), encoding="utf-8")
    taken = browse(
        binary,
        frame,
        tmp_path / "chromium-shot-400",
        f"--screenshot={shot}",
        "--window-size=400,1600",
        "--hide-scrollbars",
        "--virtual-time-budget=5000",
    )
    assert taken.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", taken.stderr[-3000:]
    artifacts = os.environ.get("REPRO_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / "report-html-400.png")
