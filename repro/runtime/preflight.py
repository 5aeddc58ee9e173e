"""Whether torch and torchvision work together, checked when a command that needs them starts.

A CPU install whose index was unreachable can leave pip's fallback builds: a torchvision compiled against
another torch, whose operators do not register. The first command then died 20 s in with a 200-line
traceback ending "operator torchvision::nms does not exist". `torch_problem` imports both, runs a
convolution and torchvision's nms on a tiny tensor (the operator such a pair lacks), and says in one line
what failed and the command that installs a matching pair (the README's); the command line runs it before
the commands that train or count (repro.cli).
"""

from __future__ import annotations

# The README's install lines: PyTorch's CPU build, and the default (CUDA) one.
CPU_INSTALL = "pip install torch torchvision --index-url https://download.pytorch.org/whl/cpu"
CUDA_INSTALL = "pip install --force-reinstall torch torchvision"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:120] if text else ''}".rstrip(": ")


def torch_problem() -> str | None:
    """Why torch cannot be imported, or torch and torchvision cannot run a convolution and nms together, and the
    command that fixes it on a line of its own (to paste whole); None when they work."""
    try:
        import torch
    except Exception as exc:  # a broken wheel: ImportError, OSError for a missing library
        return f"torch cannot be imported ({_first_line(exc)}); reinstall it:\n  {CPU_INSTALL}"
    fix = CPU_INSTALL if torch.version.cuda is None else CUDA_INSTALL
    try:
        import torchvision
        from torchvision.ops import nms

        torch.nn.functional.conv2d(torch.zeros(1, 1, 3, 3), torch.zeros(1, 1, 1, 1))
        nms(torch.tensor([[0.0, 0.0, 1.0, 1.0]]), torch.tensor([1.0]), 0.5)
    except Exception as exc:  # RuntimeError "operator torchvision::nms does not exist", an ImportError, ...
        version = getattr(locals().get("torchvision"), "__version__", "?")
        return (f"torch {torch.__version__} and torchvision {version} do not work together ({_first_line(exc)}); "
                f"install a matching pair:\n  {fix}")
    return None
