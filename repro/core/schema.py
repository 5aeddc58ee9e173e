"""Typed loading of TOML data into dataclasses, with errors that name the place.

Every error names the file, the key path (``rows[2].head.expert_hidden``) and
what was expected, and suggests the closest valid key for a misspelt one.
All errors in a document are collected and raised together. `check_text` checks every string of a document
against what the report's writers can print, so that text they cannot is refused when the file is loaded.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from repro.core.latex import unmappable
from repro.core.registry import closest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class SchemaError(ValueError):
    """One or more problems in a data file; ``problems`` holds one line each."""

    def __init__(self, file: str | Path, problems: list[str]) -> None:
        self.file = str(file)
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{self.file}: {len(problems)} problem(s):\n{lines}")


class Problems:
    """Collects problems while a document is converted."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path or '<top>'}: {message}")


def read_toml(file: Path) -> dict[str, Any]:
    try:
        with open(file, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise SchemaError(file, ["file not found"]) from None
    except UnicodeDecodeError as exc:
        raise SchemaError(file, [f"not UTF-8 text (byte {exc.start}: {exc.reason}); TOML files are UTF-8"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise SchemaError(file, [f"not valid TOML: {exc}"]) from None
    except OSError as exc:  # a folder, no permission, an I/O error
        raise SchemaError(file, [f"cannot be read: {exc.strerror or exc}"]) from None


@dataclasses.dataclass(frozen=True)
class Bounds:
    """Allowed range of a numeric field (each element, for a list): ge <= x <= le, gt < x < lt."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def violated(self, x: float) -> bool:
        return (
            (self.ge is not None and x < self.ge)
            or (self.gt is not None and x <= self.gt)
            or (self.le is not None and x > self.le)
            or (self.lt is not None and x >= self.lt)
        )

    def text(self) -> str:
        lo = f"{self.ge:g} <= " if self.ge is not None else f"{self.gt:g} < " if self.gt is not None else ""
        hi = f" <= {self.le:g}" if self.le is not None else f" < {self.lt:g}" if self.lt is not None else ""
        return f"{lo}value{hi}"


def bounded(
    default: Any = dataclasses.MISSING,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
) -> Any:
    """A dataclass field whose value (or every element of it) `from_dict` checks against a range."""
    bounds = Bounds(ge, gt, le, lt)
    if isinstance(default, (list, tuple)):
        return dataclasses.field(default_factory=lambda: default, metadata={"bounds": bounds})
    return dataclasses.field(default=default, metadata={"bounds": bounds})


def _check_bounds(f: dataclasses.Field, value: Any, path: str, problems: Problems) -> None:
    bounds = f.metadata.get("bounds")
    if bounds is None or value is None:
        return
    values = value if isinstance(value, (list, tuple)) else [value]
    for i, x in enumerate(values):
        if isinstance(x, (int, float)) and not isinstance(x, bool) and bounds.violated(x):
            where = f"{path}[{i}]" if isinstance(value, (list, tuple)) else path
            problems.add(where, f"{x!r} is out of range; allowed: {bounds.text()}")


SAFE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,79}")


def check_id(value: Any, path: str, problems: Problems) -> None:
    """Ids name files and metric paths: letters, digits, '_' and '-', at most 80 characters."""
    if isinstance(value, str) and not SAFE_ID.fullmatch(value):
        problems.add(
            path,
            f"{value!r} is not a safe id: use letters, digits, '_' and '-' "
            "(no '.', '/', spaces; at most 80 characters), since ids name files and metric paths",
        )


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp) if a is not type(None))
    if origin in (list, tuple):
        return f"a list of {_type_name(get_args(tp)[0])}"
    if origin is dict:
        return "a table"
    if dataclasses.is_dataclass(tp):
        return "a table"
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}.get(
        tp, getattr(tp, "__name__", str(tp))
    )


def convert(tp: Any, value: Any, path: str, problems: Problems) -> Any:
    """Convert ``value`` to type ``tp``; on a mismatch, record a problem and return None."""
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            trial = Problems()
            out = convert(arg, value, path, trial)
            if not trial.items:
                return out
        problems.add(path, f"expected {_type_name(tp)}, got {value!r}")
        return None
    if origin is Literal:
        if value in get_args(tp):
            return value
        hint = closest(str(value), [str(a) for a in get_args(tp)])
        problems.add(path, f"expected {_type_name(tp)}, got {value!r}{hint}")
        return None
    if origin in (list, tuple):
        if not isinstance(value, list):
            problems.add(path, f"expected {_type_name(tp)}, got {value!r}")
            return None
        item_tp = get_args(tp)[0]
        items = [convert(item_tp, v, f"{path}[{i}]", problems) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            problems.add(path, f"expected a table, got {value!r}")
            return None
        _, val_tp = get_args(tp)
        return {k: convert(val_tp, v, f"{path}.{k}", problems) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_dict(tp, value, path, problems)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                problems.add(path, f"expected a finite number, got {value!r}")
                return None
            return float(value)
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is bool or tp is str:
        if isinstance(value, tp):
            return value
    else:  # pragma: no cover - a schema bug, not a data problem
        raise TypeError(f"unsupported schema type {tp!r} at {path}")
    problems.add(path, f"expected {_type_name(tp)}, got {value!r}")
    return None


def from_dict(cls: type, data: Any, path: str, problems: Problems) -> Any:
    """Build dataclass ``cls`` from a TOML table, recording every problem found."""
    if not isinstance(data, dict):
        problems.add(path, f"expected a table, got {data!r}")
        return None
    before = len(problems.items)
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    prefix = f"{path}." if path else ""
    for key in data:
        if key not in fields:
            problems.add(
                f"{prefix}{key}",
                f"unknown key{closest(key, list(fields))}; allowed: {', '.join(fields)}",
            )
    kwargs = {}
    for name, f in fields.items():
        if name in data:
            kwargs[name] = convert(hints[name], data[name], f"{prefix}{name}", problems)
            _check_bounds(f, kwargs[name], f"{prefix}{name}", problems)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            problems.add(f"{prefix}{name}", f"missing required key ({_type_name(hints[name])})")
    if len(problems.items) > before:
        # Build what converted, so later checks still run; callers raise before
        # they use a document that has problems.
        try:
            return cls(**{k: v for k, v in kwargs.items() if v is not None})
        except TypeError:  # a required key is missing: already reported
            return None
        except ValueError as exc:  # the dataclass's own __post_init__ check
            problems.add(path, str(exc))
            return None
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:  # a dataclass's own __post_init__ check
        problems.add(path, str(exc))
        return None


def check_text(data: Any, path: str, problems: Problems, prose: frozenset[str] = frozenset()) -> None:
    """Every string in `data` (a TOML document or a part of one) must be printable by the LaTeX and Markdown
    writers: no character without a LaTeX mapping (repro.core.latex), no control character, and a line break
    only under a key of `prose` (free text, set as one paragraph). Each offence names its key path and character."""
    if isinstance(data, dict):
        for key, value in data.items():
            check_text(value, f"{path}.{key}" if path else str(key), problems, prose)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            check_text(value, f"{path}[{i}]", problems, prose)
    elif isinstance(data, str):
        key = path.rsplit(".", 1)[-1].split("[", 1)[0]
        breaks = key in prose
        bad = [ch for ch in unmappable(data) if not (breaks and ch in "\r\n")]
        if bad:
            shown = ", ".join(f"{ch!r} (U+{ord(ch):04X})" for ch in bad)
            problems.add(
                path,
                f"{shown} cannot be written to the tables' LaTeX (no mapping in repro/core/latex.py, "
                "or a control character); use ASCII or a mapped symbol such as ρ, ±, ×, ≤",
            )
        elif not breaks and ("\n" in data or "\r" in data):
            problems.add(
                path,
                "a line break in one-line text (a title, a label): the tables print it on one line; "
                "write it on one line",
            )


def field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.init]


def check_params(cls: type | None, params: dict, path: str, problems: Problems) -> dict:
    """Validate builder keyword arguments against a config dataclass; return the typed dict."""
    if cls is None:
        for key in params:
            problems.add(f"{path}.{key}", "this component takes no parameters")
        return {}
    obj = from_dict(cls, params, path, problems)
    return {k: getattr(obj, k) for k in params if obj is not None and hasattr(obj, k)}


__all__ = [
    "SchemaError",
    "Problems",
    "read_toml",
    "convert",
    "from_dict",
    "check_params",
    "field_names",
    "bounded",
    "check_id",
    "check_text",
]
