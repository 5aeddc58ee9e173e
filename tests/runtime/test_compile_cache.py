"""repro.runtime.compile_cache: inductor's caches in the user's cache folder (never the results folder) while a run
trains, the user's own kept."""

import os

import pytest

from repro.runtime.compile_cache import FOLDER, VARIABLE, compile_cache


def test_inside_the_block_inductor_caches_in_the_cache_folder_and_after_it_as_before(tmp_path, monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    with compile_cache(tmp_path / "cache") as path:
        assert path == (tmp_path / "cache" / FOLDER).absolute() and os.environ[VARIABLE] == str(path)
    assert VARIABLE not in os.environ
    monkeypatch.setenv(VARIABLE, str(tmp_path / "mine"))
    with compile_cache(tmp_path / "cache") as path:
        assert path == tmp_path / "mine" and os.environ[VARIABLE] == str(tmp_path / "mine")
    assert os.environ[VARIABLE] == str(tmp_path / "mine")


def test_a_run_trains_with_the_compile_cache_in_the_cache_folder_not_its_results_folder(tmp_path, monkeypatch):
    from repro.execution import records
    from repro.core.settings import Settings
    from repro.execution.protocol import RunRequest
    from repro.plan.manifest import load_all
    from repro.plan.run_config import planned_runs

    monkeypatch.delenv(VARIABLE, raising=False)
    seen = []

    class Stop(Exception):
        pass

    def train_run(*args, **kwargs):
        seen.append(os.environ.get(VARIABLE))
        raise Stop

    monkeypatch.setattr("repro.train.loop.train_run", train_run)
    m = next(m for m in load_all() if m.id == "table2")
    cfg = planned_runs(m, m.profiles["smoke"])[0].cfg
    with pytest.raises(Stop):
        records.run_one(
            RunRequest(cfg, "r"), tmp_path / "results", "cpu", None, settings=Settings(cache=tmp_path / "cache")
        )
    assert seen == [str((tmp_path / "cache" / FOLDER).absolute())] and VARIABLE not in os.environ
    assert not (tmp_path / "results" / FOLDER).exists()


@pytest.mark.slow  # compiles a function on the CPU (a C++ compiler)
def test_a_compiled_graph_lands_in_the_cache_folder(tmp_path, monkeypatch):
    import torch

    monkeypatch.delenv(VARIABLE, raising=False)
    with compile_cache(tmp_path) as path:
        torch._dynamo.reset()
        f = torch.compile(lambda x: (x.sin() * 3).cumsum(0))
        x = torch.randn(8)
        assert torch.allclose(f(x), (x.sin() * 3).cumsum(0))
    torch._dynamo.reset()
    assert any(p.is_file() for p in path.rglob("*"))
