"""A small name -> builder registry (after fvcore's Registry).

Each entry carries the dataclass that describes its keyword arguments, so a
manifest can be validated against it before anything is built. A builder may be
named lazily as "module:function": it is imported when first built, so the
registry (names, configs, docs) can be read without importing the builder's
dependencies (torch, for the models).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping


@dataclass(frozen=True)
class Entry:
    name: str
    target: Callable[..., Any] | str  # the builder, or "module:function" resolved on first use
    config: type | None  # dataclass whose fields are the builder's keyword arguments
    doc: str
    defaults: Mapping[str, Any] = field(default_factory=dict)  # keyword arguments the builder gets unless given
    info: Any = None  # what a registry keeps beside each entry (e.g. a backbone's pretrained weights), as data
    kind: str = ""  # the registry's: "head", "backbone", ...

    @property
    def builder(self) -> Callable[..., Any]:
        """The builder, its defaults given; a keyword that is neither one of its config's fields nor a parameter of
        its own is refused naming the fields (the config's own TypeError named the key, not what it takes)."""
        fn = _resolve(self.target) if isinstance(self.target, str) else self.target
        built = functools.partial(fn, **self.defaults) if self.defaults else fn
        if self.config is None or not dataclasses.is_dataclass(self.config):
            return built
        fields = [f.name for f in dataclasses.fields(self.config)]
        allowed = set(fields) | _named_parameters(fn)

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            unknown = [k for k in kwargs if k not in allowed]
            if unknown:
                name = self.config.__name__  # type: ignore[union-attr]  # a dataclass, checked above
                raise TypeError(
                    "; ".join(f"{self.kind} {self.name!r} takes no keyword {k!r}{closest(k, fields)}" for k in unknown)
                    + f": it takes {name}'s fields ({self.config.__module__}): {', '.join(fields)}"
                )
            return built(*args, **kwargs)

        return checked


def _named_parameters(fn: Callable[..., Any]) -> set[str]:
    """The parameters `fn` names (not its *args or **kwargs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return set()
    return {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


@functools.lru_cache(maxsize=None)
def _resolve(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    if not name:
        raise ValueError(f"lazy builder {target!r} must read 'module:function'")
    return getattr(importlib.import_module(module), name)


def closest(word: str, options: list[str] | tuple[str, ...]) -> str:
    """A ' (did you mean ...?)' hint, or '' when nothing is close."""
    match = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


class Registry:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}

    def add(
        self,
        name: str,
        builder: Callable | str,
        config: type | None = None,
        doc: str = "",
        defaults: Mapping[str, Any] | None = None,
        info: Any = None,
    ) -> Entry:
        """Register `builder` (a callable or "module:function") under `name`; duplicates are refused."""
        if name in self._entries:
            raise KeyError(f"{self.kind} '{name}' is already registered")
        if not doc and callable(builder):
            doc = (builder.__doc__ or "").strip()
        entry = Entry(name, builder, config, doc, dict(defaults or {}), info, self.kind)
        self._entries[name] = entry
        return entry

    def register(self, name: str, config: type | None = None, doc: str = "") -> Callable:
        def deco(fn: Callable) -> Callable:
            self.add(name, fn, config, doc)
            return fn

        return deco

    def get(self, name: str) -> Entry:
        if name not in self._entries:
            raise KeyError(
                f"unknown {self.kind} '{name}'{closest(name, self.names())}; known: {', '.join(self.names())}"
            )
        return self._entries[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries[n] for n in self.names())
