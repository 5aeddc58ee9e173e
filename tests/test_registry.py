"""The registry: lazy "module:function" builders, defaults, duplicates refused; models' configs need no torch."""

import json
import subprocess
import sys

import pytest

from repro.models import BACKBONES, HEADS
from repro.core.registry import Registry


def test_lazy_builder_is_imported_on_first_use_and_gets_its_defaults():
    reg = Registry("thing")
    reg.add("join", "os.path:join", defaults={})
    reg.add("base", "os.path:basename")
    assert reg.get("join").builder("a", "b") == "a/b"
    assert reg.get("base").builder("/x/y.txt") == "y.txt"
    reg.add("pow", "builtins:pow", defaults={"exp": 2})
    assert reg.get("pow").builder(base=3) == 9 and reg.get("pow").builder(base=3, exp=3) == 27


def test_duplicates_are_refused_for_both_forms():
    reg = Registry("thing")
    reg.add("a", "os.path:join")
    with pytest.raises(KeyError, match="thing 'a' is already registered"):
        reg.add("a", "os.path:basename")
    with pytest.raises(KeyError, match="already registered"):
        reg.register("a")(lambda: None)


def test_a_malformed_lazy_name_says_what_is_expected():
    reg = Registry("thing")
    reg.add("bad", "os.path.join")
    with pytest.raises(ValueError, match="module:function"):
        reg.get("bad").builder


@pytest.mark.parametrize("entry", [*BACKBONES, *HEADS], ids=lambda e: e.name)
def test_every_model_entry_resolves_to_a_builder_and_its_defaults_make_a_valid_config(entry):
    assert callable(entry.builder)
    entry.config(**entry.defaults)  # the entry's defaults pass the config's own checks


@pytest.mark.slow
def test_manifests_and_model_configs_load_without_torch():
    # The registries, filled without torch, hold every entry they hold here. It asserted 8 backbones and 8 heads
    # inside the child, so a ninth head failed it with a bare AssertionError that named neither.
    code = (
        "import json, sys, repro.plan.manifest, repro.plan.run_config, repro.models.weights, repro.models.configs; "
        "from repro.models import BACKBONES, HEADS, Component; "
        "repro.plan.manifest.load_all(); "
        "torch = sorted(m for m in sys.modules if m.split('.')[0] == 'torch'); "
        "print(json.dumps({'backbones': BACKBONES.names(), 'heads': HEADS.names(), 'torch': torch}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    child = json.loads(done.stdout)
    assert (child["backbones"], child["heads"]) == (BACKBONES.names(), HEADS.names()), child
    assert not child["torch"], f"loading the manifests and model configs imported torch: {child['torch'][:5]}"
