"""Two `repro` processes on one results directory: every run is trained once, by one of them."""

import json
from collections import Counter

import pytest

from .minitable import counts, repro, write_manifest


@pytest.mark.slow
def test_two_processes_on_one_results_directory_never_train_a_run_twice(tmp_path):
    env = write_manifest(tmp_path)
    results = tmp_path / "results"
    procs = [repro(results, env), repro(results, env)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(outputs)
    (t1, r1, w1), (t2, r2, w2) = counts(outputs[0]), counts(outputs[1])
    records = [json.loads(p.read_text()) for p in (results / "runs").glob("*.json")]
    assert len(records) == 4 and t1 + t2 == 4, outputs
    # every run counted once by each: trained here, or by the other (reused when the other recorded it before
    # this one looked: the second process can start after the first has finished a run)
    assert (t1 + r1 + w1, t2 + r2 + w2) == (4, 4)
    # each record names the process that trained it, and it is the one that counted it as trained here
    assert Counter(r["provenance"]["executor"]["pid"] for r in records) == {
        pid: t for pid, t in ((procs[0].pid, t1), (procs[1].pid, t2)) if t
    }
    assert not list((results / "runs").glob("*.lock")) and not list((results / "runs").glob("*.ckpt"))
