"""The numbers the docs state come from the tool: the full protocol's runs, epochs and GPU-hours
(docs/cluster.md) are the totals `repro list` prints, the exit codes (docs/commands.md) are the command
line's, and the suite's size (docs/testing.md) is the count pytest collects, rounded to 50. Each fails when
a page and the tool drift apart."""

import re

import pytest
from conftest import SUITE_SIZE

from checkout import REPO_ROOT
from repro.plan.table_plan import build_plan

DOCS = REPO_ROOT / "docs"
CLUSTER, COMMANDS, TESTING = ((DOCS / f"{page}.md").read_text() for page in ("cluster", "commands", "testing"))
FULL = re.compile(r"The full protocol is ([\d,]+) distinct training runs \(([\d,]+) epochs, ([\d.]+) GPU-hours")
SUITE = re.compile(r"`python -m pytest` runs about ([\d,]+) tests")


def test_the_full_protocol_is_what_repro_list_totals(tmp_path, monkeypatch):
    from repro.cost import calibration
    from repro.cost.estimate import CostModel, hours
    from repro.plan.manifest import load_all

    monkeypatch.setattr(calibration, "local_gpu_name", lambda *a: None)
    stated = FULL.findall(CLUSTER)
    assert len(stated) == 1, "docs/cluster.md gives the full protocol's size once, in these words: " + FULL.pattern
    manifests = load_all()
    # the GPU figures `repro list` gives without a calibration: the shipped H200 reference (repro.cost.gpu_reference);
    # no dataset on disk: the paper's sizes
    cost = CostModel(data_dir=tmp_path).cost([build_plan(m, "full") for m in manifests if "full" in m.profiles])
    now = (str(cost.runs), f"{cost.epochs:,}", hours(cost.device_seconds))
    assert stated[0] == now, f"docs/cluster.md says {stated[0]} (runs, epochs, GPU-hours); `repro list` totals {now}"


def test_the_exit_codes_the_docs_list_are_the_command_lines():
    from repro.cli.common import ExitCode

    block = COMMANDS.split("## Exit codes", 1)[1].strip().split("\n\n", 1)[0]
    listed = {int(code): name for code, name in re.findall(r"`(\d+)` ([^;.,]+)", block)}
    assert sorted(listed) == sorted(int(c) for c in ExitCode), block


def test_the_docs_give_the_suite_s_size(request):
    total = request.config.stash.get(SUITE_SIZE, None)
    if total is None:
        pytest.skip("the suite's size is known only when every test file is collected")
    stated = SUITE.findall(TESTING)
    assert len(stated) == 1, "docs/testing.md gives the suite's size once, in these words: " + SUITE.pattern
    assert int(stated[0].replace(",", "")) == round(total / 50) * 50, f"{total} tests collected"
