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
    # In a generated file, the compiled defs whose code is not written in the file its header names:
    # "qn\tmodule\tqn" where it is written, or "qn\t\t" where that is not known.
    origins: frozenset = frozenset()
    # Of `compiled`, the defs that are frames Dynamo enters (a `forward`, a `torch.compile` target,
    # `compiled-functions`): the others are called from compiled code and traced inline.
    entries: frozenset = frozenset()
    # dotted spellings, in this file, of other files' defs marked torch.compiler.disable (GM907)
    disabled: frozenset = frozenset()
    # dotted spellings, in this file, of other files' defs that are False under compile (they return
    # `torch.jit.is_scripting()`/`torch._C._get_tracing_state()`: torchvision's `_is_tracing`)
    never: frozenset = frozenset()
    # names this file imports that are other files' module-level loggers (deepspeed's
    # `from deepspeed.utils.logging import logger`): GM202 reports their calls
    loggers: frozenset = frozenset()
    # "Cls\tname": buffers and parameters a base class of another file registers in its __init__
    # (torchao's FakeQuantizeBase: `self.fake_quant_enabled` is a tensor in its subclasses' methods)
    buffers: frozenset = frozenset()

    def key(self) -> bytes:
        """What a per-file cache key must include: every cross-file fact the file may use."""
        return repr(self.to_json()).encode()

    def to_json(self) -> list:
        return [sorted(self.module_classes), sorted(self.compiled), sorted(self.guards), sorted(self.wrapped),
                sorted(self.origins), sorted(self.entries), sorted(self.disabled), sorted(self.never),
                sorted(self.loggers), sorted(self.buffers)]

    def origin(self, qn: str | None) -> tuple[str, str] | None:
        """(module, qn) where the code of the generated file's def `qn` is written, ("", "") when
        not in the file its header names and not found elsewhere, None when written there."""
        for entry in self.origins:
            name, mod, where = entry.split("\t")
            if name == qn:
                return mod, where
        return None

    @classmethod
    def from_json(cls, data: list) -> "FileFacts":
        return cls(*(frozenset(x) for x in data))


EMPTY = FileFacts()
