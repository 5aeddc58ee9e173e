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

from repro import REPO_ROOT
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
  console.error = function () { seen.push(Array.prototype.join.call(arguments, " ")); error.apply(console, arguments); };
  window.addEventListener("load", function () {
    var broken = Array.prototype.filter.call(document.images, function (i) { return !i.complete || i.naturalWidth === 0; });
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
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
             f"--user-data-dir={profile_dir}", "--enable-logging=stderr", "--v=0"]
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
        shutil.copy(REPO_ROOT / "manifests" / f"{name}.toml", manifests)
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
    taken = browse(binary, page, tmp_path / "chromium-shot", f"--screenshot={shot}", "--window-size=1280,2000",
                   "--hide-scrollbars")
    assert taken.returncode == 0, taken.stderr[-3000:]
    assert not console_lines(taken.stderr), console_lines(taken.stderr)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    artifacts = os.environ.get("REPRO_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / "report-html.png")
