"""Facts about one file that come from other files (the project index, analysis/project.py).

The engine hands them to the file's context (analysis/filecontext.py), which gives them to the
analysis. Without an index (the Fixit path, `engine.check` alone) they are EMPTY and the analysis
sees the file alone.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileFacts:
    module_classes: frozenset = frozenset()  # top-level classes that are nn.Modules (any chain of bases)
    compiled: frozenset = frozenset()  # "f" / "Cls.m": defs run compiled from another file or by config
    guards: frozenset = frozenset()  # dotted spellings, in this file, of project compile-guard wrappers
    wrapped: frozenset = frozenset()  # "f": decorators of compiled defs whose nested defs run in their place

    def key(self) -> bytes:
        """What a per-file cache key must include: every cross-file fact the file may use."""
        return repr((sorted(self.module_classes), sorted(self.compiled), sorted(self.guards),
                     sorted(self.wrapped))).encode()

    def to_json(self) -> list:
        return [sorted(self.module_classes), sorted(self.compiled), sorted(self.guards), sorted(self.wrapped)]

    @classmethod
    def from_json(cls, data: list) -> "FileFacts":
        return cls(*(frozenset(x) for x in data))


EMPTY = FileFacts()
