"""repro.runtime.numerics: a run's threads and deterministic mode, set around its training and restored after."""

import warnings

import torch

from repro.runtime.numerics import run_numerics


def test_the_threads_and_deterministic_mode_hold_inside_and_are_restored_after(one_thread):
    with run_numerics(2, True, "cpu") as facts:
        assert torch.get_num_threads() == 2 and torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    assert torch.get_num_threads() == 1 and not torch.are_deterministic_algorithms_enabled()
    assert facts["threads"] == 2 and facts["deterministic"] and facts["nondeterministic_ops"] == []
    assert facts["torch"] == torch.__version__ and facts["cpu_capability"] and facts["cuda"] is None
    with run_numerics(1, False, "cpu") as plain:
        assert not torch.are_deterministic_algorithms_enabled()
    assert "nondeterministic_ops" not in plain and "cublas_workspace_config" not in plain


def test_an_operation_without_a_deterministic_implementation_is_named_and_still_shown():
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with run_numerics(1, True, "cpu") as facts:
            torch.zeros(3).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))  # no deterministic put_ on a CPU
    assert len(facts["nondeterministic_ops"]) == 1 and "put_" in facts["nondeterministic_ops"][0]
    assert any("deterministic implementation" in str(w.message) for w in shown)
