"""Facts about one file that come from other files (the project index, analysis/project.py).

The engine sets them around a lint (`with external.use(facts): ...`); the analysis reads
`external.current()`. Without an index (the Fixit path, `engine.check` alone) they are empty and
the analysis sees the file alone, as before.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass


@dataclass(frozen=True)
class FileFacts:
    module_classes: frozenset = frozenset()  # top-level classes that are nn.Modules (any chain of bases)
    compiled: frozenset = frozenset()  # "f" / "Cls.m": defs run compiled from another file or by config
    guards: frozenset = frozenset()  # dotted spellings, in this file, of project compile-guard wrappers

    def key(self) -> bytes:
        """What a per-file cache key must include: every cross-file fact the file may use."""
        return repr((sorted(self.module_classes), sorted(self.compiled), sorted(self.guards))).encode()

    def to_json(self) -> list:
        return [sorted(self.module_classes), sorted(self.compiled), sorted(self.guards)]

    @classmethod
    def from_json(cls, data: list) -> "FileFacts":
        return cls(*(frozenset(x) for x in data))


EMPTY = FileFacts()
_current: contextvars.ContextVar[FileFacts] = contextvars.ContextVar("graphmend_external", default=EMPTY)


def current() -> FileFacts:
    return _current.get()


class use:
    def __init__(self, facts: FileFacts | None) -> None:
        self.facts = facts or EMPTY

    def __enter__(self) -> FileFacts:
        self.token = _current.set(self.facts)
        return self.facts

    def __exit__(self, *exc: object) -> None:
        _current.reset(self.token)
