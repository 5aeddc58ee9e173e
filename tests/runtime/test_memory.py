"""repro.runtime.memory: freed large blocks stay in the heap (no page faults when they are allocated again)."""

import os
import subprocess
import sys

import pytest

from repro.runtime import memory

CYCLES = 5
PAGES = (64 << 20) // 4096  # pages of the 64 MiB block each cycle writes

SCRIPT = f"""
import ctypes, ctypes.util, resource, sys
from repro.runtime.memory import keep_freed_memory
if sys.argv[1] == "keep":
    assert all(keep_freed_memory().values())
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
def cycle():  # as torch's CPU allocator does: malloc, write every page, free
    block = libc.malloc(64 << 20)
    ctypes.memset(block, 1, 64 << 20)
    libc.free(block)
cycle()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({CYCLES}):
    cycle()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if k not in memory.ENVIRONMENT}
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.skipif(memory._mallopt() is None, reason="glibc's malloc only")
def test_a_freed_block_is_reused_without_faulting_its_pages_in_again():
    plain, kept = _faults("plain"), _faults("keep")
    assert plain > 0.9 * CYCLES * PAGES  # glibc unmaps the block on free: every cycle faults it in again
    assert kept < 0.1 * PAGES  # kept in the heap: the pages are already there


def test_children_inherit_the_thresholds_and_the_user_s_own_value_is_kept(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "12345")
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    applied = memory.keep_freed_memory()
    assert os.environ["MALLOC_MMAP_THRESHOLD_"] == "12345" and applied["MALLOC_MMAP_THRESHOLD_"] is False
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == str(memory.THRESHOLD)
    assert applied["MALLOC_TRIM_THRESHOLD_"] is (memory._mallopt() is not None)
    # a second call changes nothing and reports the thresholds in force
    assert memory.keep_freed_memory() == {"MALLOC_MMAP_THRESHOLD_": False, "MALLOC_TRIM_THRESHOLD_": True}
