"""The inputs of `repro rho`, checked before torch is imported: input size, layer patterns, target rho.

A layer pattern names modules by their dotted path, segment by segment, as shell globs name
files: within a segment `*` is any run of characters, `?` one, `[34]` one of a set, `[!0]` any
but; a segment `**` is any number of segments (none included). `layer3.*.conv*` is every conv
of every layer3 block; `layer[34].*.conv[12]` every 3x3 convolution of layer3 and layer4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

from repro.rho.model_list import RhoInputError

MAX_SIZE = 1024  # the manifests' cap on an image side (repro.spec.profiles.MAX_IMAGE)
_SEGMENT = re.compile(r"(\*\*|([A-Za-z0-9_*?-]|\[!?[A-Za-z0-9_-]+\])+)")


def parse_size(text: str) -> tuple[int, int]:
    """'224' or '224x160' (height x width) -> (H, W)."""
    parts = text.lower().split("x")
    if len(parts) not in (1, 2) or not all(p.strip().isdigit() for p in parts):
        raise RhoInputError(f"--size {text!r}: expected a side in pixels (224) or height x width (224x160)")
    h, w = (int(p) for p in parts) if len(parts) == 2 else (int(parts[0]),) * 2
    if not (1 <= h <= MAX_SIZE and 1 <= w <= MAX_SIZE):
        raise RhoInputError(f"--size {text!r}: each side must be between 1 and {MAX_SIZE} pixels")
    return h, w


def check_target(target: float) -> float:
    if not 0 < target < 1:
        raise RhoInputError(f"--target {target:g}: expected rho as a fraction between 0 and 1, e.g. 0.07 for 7%")
    return target


@dataclass(frozen=True)
class Pattern:
    text: str
    segments: tuple[str, ...]

    def matches(self, name: str) -> bool:
        return _match(self.segments, tuple(name.split(".")) if name else ())


def _match(pattern: tuple[str, ...], name: tuple[str, ...]) -> bool:
    if not pattern:
        return not name
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, name[i:]) for i in range(len(name) + 1))
    return bool(name) and fnmatchcase(name[0], head) and _match(rest, name[1:])


def parse_pattern(text: str) -> Pattern:
    """A layer pattern, or a refusal naming the first segment that is not one."""
    segments = tuple(text.split("."))
    for i, segment in enumerate(segments):
        if not segment:
            raise RhoInputError(f"--route {text!r}: segment {i + 1} is empty (two dots, or a dot at an end)")
        if not _SEGMENT.fullmatch(segment):
            raise RhoInputError(
                f"--route {text!r}: segment {segment!r} is not a name glob (letters, digits, _, -, * and ?, "
                "a set such as [34] or [!0], or ** alone for any number of segments)"
            )
    if all(s == "**" for s in segments):
        raise RhoInputError(f"--route {text!r} matches every module; name the layers, e.g. 'layer4.*.conv*'")
    return Pattern(text, segments)
