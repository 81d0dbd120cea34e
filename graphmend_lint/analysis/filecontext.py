"""The per-file context: everything the rules and fixes of one file share during a lint.

One `FileContext` per parsed module: the module and its source, the settings that apply to the
file, its facts from the project index (`external.FileFacts`), and what is computed from them
on first use and kept for this module only: parents, positions, the analysis (`ModuleFacts`:
bindings, compiled scope, tensors), the file's conventions (generated? its guard helper?) and
the code of the module and of the fixed modules made from it.

Who makes it: the engine, for each module it lints (engine.lint), and hands it to the rules as
the libcst metadata of the Module node; under Fixit (no engine) `rules.base.FileContextProvider`
makes one per file, with the settings of the current folder. Nothing here is kept between files.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .. import fastwalk
from . import conventions, external
from .facts import ModuleFacts

if TYPE_CHECKING:
    from ..settings import Settings

CODES_KEPT = 4  # modules whose code is kept: the module, and the fixed modules of one fix


class FileContext:
    def __init__(self, module: cst.Module, settings: "Settings", ext: external.FileFacts | None = None,
                 source: bytes | str | None = None) -> None:
        self.module = module
        self.settings = settings
        self.ext = ext if ext is not None else external.EMPTY
        self.source = source  # the module's code, when the caller has it (positions per statement)
        self._parents: dict | None = None
        self._positions: fastwalk.LazyPositions | None = None
        self._facts: ModuleFacts | None = None
        self._conventions: tuple[str | None, str | None, bool] | None = None
        self._codes: list[tuple[cst.Module, str]] = []
        self.compiled_at: dict[cst.CSTNode, cst.FunctionDef | None] = {}  # rules' compiled_function answers
        self.dead: dict[cst.IndentedBlock, frozenset[int]] = {}  # context.unreachable's statements per block

    @property
    def parents(self) -> dict:
        """child -> parent (libcst's ParentNodeProvider mapping), computed once."""
        if self._parents is None:
            self._parents = fastwalk.parents(self.module)
        return self._parents

    @property
    def positions(self) -> fastwalk.LazyPositions:
        """libcst's PositionProvider mapping, computed for the nodes asked (positions.py)."""
        if self._positions is None:
            self._positions = fastwalk.LazyPositions(self.module, self.parents, self.source)
        return self._positions

    @property
    def facts(self) -> ModuleFacts:
        """The analysis of the module, with the file's cross-file facts."""
        if self._facts is None:
            self._facts = ModuleFacts(self.module, self.settings.compiled_scope, self.ext)
        return self._facts

    def _file_conventions(self) -> tuple[str | None, str | None, bool]:
        if self._conventions is None:
            self._conventions = (conventions.generated_from(self.module), conventions.guard_helper(self.module),
                                 conventions.torch_free(self.module))
        return self._conventions

    @property
    def generated(self) -> str | None:
        """None for a hand-written file, else what it is generated from ("" when not said)."""
        return self._file_conventions()[0]

    @property
    def guard_helper(self) -> str | None:
        """The local name of the project's compile-guard helper the file imports, if any."""
        return self._file_conventions()[1]

    @property
    def torch_free(self) -> bool:
        """The module has no unconditional module-level `import torch` (a fix must not add one)."""
        return self._file_conventions()[2]

    def code(self, module: cst.Module | None = None) -> str:
        """`module.code` (default: this file's module), generated once per module object: a fix's
        edits read the code of the module and of its fixed versions several times."""
        module = self.module if module is None else module
        for m, text in self._codes:
            if m is module:
                return text
        text = module.code
        self._codes.insert(0, (module, text))
        del self._codes[CODES_KEPT:]
        return text
