"""The base every graphmend rule builds on: codes, fix safety, noqa, compiled-scope checks.

A rule subclasses `GraphMendRule`, sets CODE/NAME/FIX, writes its docs in the class
docstring (ruff's sections) and calls `self.flag(...)`. It must not override
`visit_Module` (that is where the shared analysis is attached).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

import libcst as cst
from fixit import LintRule
from libcst.metadata import ParentNodeProvider, PositionProvider

from .. import analysis, provider, settings
from ..analysis import context
from ..fixes import Safety, house

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


@dataclass
class Finding:
    code: str
    rule: str  # Fixit name (class name without "Rule")
    line: int
    col: int  # 0-based, as Fixit reports it
    end_line: int
    end_col: int
    message: str
    safety: Safety = Safety.NONE
    node: cst.CSTNode | None = field(default=None, repr=False, compare=False)
    replacement: object = field(default=None, repr=False, compare=False)
    needs_torch_import: bool = False
    fix_range: tuple[int, int, int, int] = (0, 0, 0, 0)  # span of `node`, the replaced node
    # The fix as text edits (engine.WANT_EDITS): [{"content", "location", "end_location"}], 1-based
    edits: list | None = field(default=None, compare=False)

    @property
    def sort_key(self) -> tuple:
        return (self.line, self.col, self.code, self.message)


_house_last: tuple[cst.Module, tuple] | None = None


def _house(module: cst.Module) -> tuple[str | None, str | None]:
    """(generated_from, guard helper) of `module`, computed once for all the rules of a visit."""
    global _house_last
    if _house_last is None or _house_last[0] is not module:
        _house_last = (module, (house.generated_from(module), house.guard_helper(module)))
    return _house_last[1]


class GraphMendRule(LintRule):
    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""  # kebab-case, e.g. "print-in-compiled-code"
    FIX: ClassVar[str] = "none"  # what the docs say: "safe", "unsafe", "sometimes", "none"
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, provider.ProjectProvider)

    def __init__(self) -> None:
        super().__init__()
        self.findings: list[Finding] = []
        self.settings = settings.current()
        self.facts: analysis.ModuleFacts | None = None

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        for hook in ("visit_Module", "leave_Module", "__init__"):
            if hook in cls.__dict__:
                raise TypeError(f"{cls.__name__} must not override {hook}")

    def visit_Module(self, node: cst.Module) -> None:
        provider.enter(self, node)  # Fixit: the file's own settings and project facts (provider.py)
        self.facts = analysis.facts_for(node, self.settings.compiled_scope)
        self.generated = _house(node)[0]
        self.guard_helper = _house(node)[1]

    def leave_Module(self, original_node: cst.Module) -> None:
        provider.leave(self, original_node)

    # -- context helpers -----------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.get_metadata(ParentNodeProvider, node, None)

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return context.enclosing_function(node, self.parent)

    def compiled_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The enclosing function if `node` runs under torch.compile (and not only in eager)."""
        assert self.facts is not None
        func = self.function_of(node)
        outer = func
        while outer is not None and not self.facts.scope.is_compiled(outer):
            outer = self.function_of(outer)
        if outer is None or func is None:
            return None
        const = self.facts.function(func).compile_const
        if context.runs_only_in_eager(node, self.parent, self.facts.bindings, const):
            return None
        return func

    def spell(self, qualified: str) -> tuple[str, bool]:
        """Spelling of a torch name in this file, and whether `import torch` must be added.

        The compile guard is spelled with the file's own helper when it imports one
        (transformers' `is_torchdynamo_compiling`, see fixes/house.py)."""
        assert self.facts is not None
        if qualified == "torch.compiler.is_compiling" and getattr(self, "guard_helper", None):
            return self.guard_helper, False
        return self.facts.bindings.spell_or_default(qualified)

    # -- suppression ---------------------------------------------------------
    def ignore_lint(self, node: cst.CSTNode) -> bool:
        if super().ignore_lint(node):
            return True
        for comment in self.node_comments(node):
            m = NOQA.search(comment)
            if m:
                codes = m.group("codes")
                if codes is None or self.CODE in re.split(r"[\s,]+", codes.upper()):
                    return True
        return False

    # -- reporting -----------------------------------------------------------
    def flag(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        at: cst.CSTNode | None = None,
        replacement: object = None,
        safety: Safety = Safety.SAFE,
        needs_torch_import: bool = False,
    ) -> None:
        """Report a finding at `at` (default `node`); `replacement` replaces `node`.

        The fix is classed by `safety`; without a replacement there is no fix.
        """
        if not self.settings.selects(self.CODE) or self.ignore_lint(node):
            return
        if replacement is not None and getattr(self, "generated", None) is not None:
            message, replacement = f"{message}; {house.no_fix_reason(self.generated)}", None
        if replacement is None:
            safety = Safety.NONE
        if isinstance(at, cst.BooleanOperation) and self.facts is not None:  # training-only breaks say so
            func = self.function_of(at)
            if func is not None:
                message += context.gate_note(at, self.facts.function(func).compile_const)
        pos = self.get_metadata(PositionProvider, at if at is not None else node)
        span = self.get_metadata(PositionProvider, node)
        self.findings.append(
            Finding(self.CODE, self.name, pos.start.line, pos.start.column, pos.end.line, pos.end.column,
                    message, safety, node, replacement, needs_torch_import,
                    (span.start.line, span.start.column, span.end.line, span.end.column))
        )
        # Fixit applies every replacement it is given: hand it only what is allowed here.
        allowed = safety is Safety.SAFE or (safety is Safety.UNSAFE and self.settings.unsafe_fixes)
        if needs_torch_import and not self.settings.can_add_imports:
            allowed = False
        self.report(node, message, position=pos, replacement=replacement if allowed else None)  # type: ignore[arg-type]
