"""Whether torch and torchvision work together, checked when a command that needs them starts.

A CPU install whose index was unreachable can leave pip's fallback builds: a torchvision compiled against
another torch, whose operators do not register. The first command then died 20 s in with a 200-line
traceback ending "operator torchvision::nms does not exist". `torch_problem` imports both, runs a
convolution and torchvision's nms on a tiny tensor (the operator such a pair lacks), and says in one line
what failed and the command that installs a matching pair (the README's); the command line runs it before
the commands that train or count (repro.cli). A pair that passed is remembered in the cache folder by a
fingerprint of its files (versions, libraries' sizes and times), read without importing either: the check is
not run again until they change (importing both is most of a command's start-up; a reused verify-all needs
neither).
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from repro.core.cache import read_json, write_json

# The README's install lines: PyTorch's CPU build, and the default (CUDA) one.
CPU_INSTALL = "pip install torch torchvision --index-url https://download.pytorch.org/whl/cpu"
CUDA_INSTALL = "pip install --force-reinstall torch torchvision"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:120] if text else ''}".rstrip(": ")


def installed_pair() -> str | None:
    """A fingerprint of the installed torch and torchvision (their version files, and each library's name, size and
    modification time), read without importing them; None where either is not installed."""
    digest = hashlib.sha256()
    for name in ("torch", "torchvision"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            return None
        root = Path(next(iter(spec.submodule_search_locations)))
        version = root / "version.py"
        digest.update(version.read_bytes() if version.is_file() else name.encode())
        for lib in sorted([*root.glob("*.so"), *root.glob("lib/*.so*"), *root.glob("*.pyd"), *root.glob("lib/*.dll")]):
            st = lib.stat()
            digest.update(f"{lib.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest()


def torch_problem(cache: Path | None = None) -> str | None:
    """Why torch cannot be imported, or torch and torchvision cannot run a convolution and nms together, and the
    command that fixes it on a line of its own (to paste whole); None when they work. With the cache folder
    `cache`, a pair that passed before, unchanged since, is not checked again."""
    if cache is None:
        return _check()
    pair, kept = installed_pair(), Path(cache) / "torch_pair.json"
    if pair is not None and read_json(kept) == {"pair": pair}:
        return None
    problem = _check()
    if problem is None and pair is not None:
        write_json(kept, {"pair": pair})
    return problem


def _check() -> str | None:
    try:
        import torch
    except Exception as exc:  # a broken wheel: ImportError, OSError for a missing library
        return f"torch cannot be imported ({_first_line(exc)}); reinstall it:\n  {CPU_INSTALL}"
    fix = CPU_INSTALL if torch.version.cuda is None else CUDA_INSTALL
    try:
        import torchvision  # noqa: F401 (its version, read through locals() below, names it in the error)
        from torchvision.ops import nms

        torch.nn.functional.conv2d(torch.zeros(1, 1, 3, 3), torch.zeros(1, 1, 1, 1))
        nms(torch.tensor([[0.0, 0.0, 1.0, 1.0]]), torch.tensor([1.0]), 0.5)
    except Exception as exc:  # RuntimeError "operator torchvision::nms does not exist", an ImportError, ...
        version = getattr(locals().get("torchvision"), "__version__", "?")
        return (
            f"torch {torch.__version__} and torchvision {version} do not work together ({_first_line(exc)}); "
            f"install a matching pair:\n  {fix}"
        )
    return None
