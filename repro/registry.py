"""A small name -> builder registry (after fvcore's Registry).

Each entry carries the dataclass that describes its keyword arguments, so a
manifest can be validated against it before anything is built.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Iterator


@dataclass(frozen=True)
class Entry:
    name: str
    builder: Callable[..., Any]
    config: type | None  # dataclass whose fields are the builder's keyword arguments
    doc: str


def closest(word: str, options: list[str] | tuple[str, ...]) -> str:
    """A ' (did you mean ...?)' hint, or '' when nothing is close."""
    match = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


class Registry:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, config: type | None = None, doc: str = "") -> Callable:
        def deco(fn: Callable) -> Callable:
            if name in self._entries:
                raise KeyError(f"{self.kind} '{name}' is already registered")
            self._entries[name] = Entry(name, fn, config, doc or (fn.__doc__ or "").strip())
            return fn

        return deco

    def get(self, name: str) -> Entry:
        if name not in self._entries:
            raise KeyError(
                f"unknown {self.kind} '{name}'{closest(name, self.names())}; "
                f"known: {', '.join(self.names())}"
            )
        return self._entries[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries[n] for n in self.names())
