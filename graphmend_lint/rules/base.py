"""The base every graphmend rule builds on: codes, fix safety, noqa, compiled-scope checks.

A rule subclasses `GraphMendRule`, sets CODE/NAME/FIX, writes its docs in the class
docstring (ruff's sections) and calls `self.report(node, message, fix=...)`. It must not override
`visit_Module` (that is where the file's context is attached).

Per-file state lives in one `FileContext` (analysis/filecontext.py): the module, its settings,
positions, analysis (`self.facts`), conventions (`self.generated`, `self.guard_helper`) and
cross-file facts. A rule reads it as `self.ctx`, the libcst metadata of the Module node
(`FileContextProvider`): the engine hands in the one it made, a Fixit run makes one per file.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import ClassVar

import libcst as cst
from fixit import LintRule
from fixit.ftypes import LintIgnoreRegex
from libcst.metadata import BatchableMetadataProvider, ParentNodeProvider, PositionProvider

from .. import analysis
from . import provider
from .. import settings as settings_mod
from ..analysis import context, conventions
from ..analysis.filecontext import FileContext
from ..fixes import Elsewhere, Fix, NoFix, Safety, defer, guard, where
from ..findings import Finding
from .former_names import fixit_aliases

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


class FileContextProvider(BatchableMetadataProvider[FileContext]):
    """The file's context as the metadata of its Module node. The engine hands in the context it
    made (fastwalk.visit_batched's `metadata`); under Fixit, libcst resolves this provider once per
    file for all the rules, with the file's own settings and project facts (provider.py), or, for a
    module that is not a file on disk, the settings of the current folder (settings.fixit_settings)."""

    METADATA_DEPENDENCIES = (provider.ProjectProvider,)

    def visit_Module(self, node: cst.Module) -> bool:
        got = self.get_metadata(provider.ProjectProvider, node, None)
        if isinstance(got, provider.PathFacts):
            self.set_metadata(node, FileContext(node, got.settings, got.facts))
        else:
            self.set_metadata(node, FileContext(node, settings_mod.fixit_settings()))
        return False


VALIDATION_UNSAFE = ("unsafe fix (`validation-fixes = \"unsafe\"`): under torch.compile a failed check raises "
                     "RuntimeError (CPU) or a device-side assert (CUDA), not the original exception")


CALLER_IN_TRY = ("`{caller}` calls it inside a `try` block: under compile the assertion fires when the graph "
                 "runs, outside that `try`, whose handler would not see it")


class GraphMendRule(LintRule):
    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""  # kebab-case, e.g. "print-in-compiled-code"
    FIX: ClassVar[str] = "none"  # what the docs say: "safe", "unsafe", "sometimes", "none"
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, FileContextProvider, provider.ProjectProvider)

    def __init__(self) -> None:
        super().__init__()
        self.findings: list[Finding] = []
        self.ctx: FileContext | None = None  # the file's context, from visit_Module on

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        for hook in ("visit_Module", "__init__"):
            if hook in cls.__dict__:
                raise TypeError(f"{cls.__name__} must not override {hook}")

    def visit_Module(self, node: cst.Module) -> None:
        self.ctx = self.get_metadata(FileContextProvider, node)
        self.__dict__.pop("_helper_top", None)  # report_deferred's plan is per file
        self.__dict__.pop("_loggers", None)  # GM202's logger finder too (it holds the file's facts)
        self.ctx.facts  # noqa: B018 - the analysis, made here once for all the rules of the file

    # -- the file's context, by the names rules use ---------------------------
    def _context(self) -> FileContext:
        if self.ctx is None:
            raise AttributeError("a rule's file context is set by visit_Module")
        return self.ctx

    @property
    def settings(self) -> "settings_mod.Settings":
        return self._context().settings

    @property
    def facts(self) -> analysis.ModuleFacts:
        return self._context().facts

    @property
    def generated(self) -> str | None:
        """None for a hand-written file, else what its header says it is generated from."""
        return self._context().generated

    @property
    def guard_helper(self) -> str | None:
        """The local name of the project's compile-guard helper (analysis/conventions.py)."""
        return self._context().guard_helper

    @property
    def torch_free(self) -> bool:
        """The module has no module-level `import torch` (analysis/conventions.py)."""
        return self._context().torch_free

    # -- context helpers -----------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.metadata[ParentNodeProvider].get(node)  # get_metadata(..., None), minus its checks

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return context.enclosing_function(node, self.parent)

    def caller_in_try(self, node: cst.CSTNode) -> str | None:
        """A function of this file that calls the one holding `node` from inside a `try` block
        (unsloth_zoo's `fp16_grouped_available` around `_self_check`), or None. Callers in other
        files are not seen."""
        func = self.function_of(node)
        if func is None:
            return None
        for caller, calls in self.facts.scope.index.calls.items():
            for call in calls:
                f = call.func
                name = f.value if isinstance(f, cst.Name) else f.attr.value if isinstance(f, cst.Attribute) else None
                if name == func.name.value and context.in_try(call, self.parent):
                    return caller.name.value
        return None

    def compiled_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The enclosing function if `node` runs under torch.compile (and not only in eager); the
        file context keeps the answer for the other rules (most ask it of the same nodes)."""
        known = self._context().compiled_at
        if node in known:
            return known[node]
        func = known[node] = self._compiled_function(node)
        return func

    def _compiled_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        assert self.facts is not None
        func = self.function_of(node)
        outer = func
        while outer is not None and not self.facts.scope.is_compiled(outer):
            outer = self.function_of(outer)
        if outer is None or func is None:
            return None
        const = self.facts.function(func).compile_const
        if context.runs_only_in_eager(node, self.parent, self.facts.bindings, const) or \
                context.unreachable(node, self.parent, self._context().dead):
            return None
        return func

    def spell(self, qualified: str) -> tuple[str, bool]:
        """Spelling of a torch name in this file, and whether `import torch` must be added.

        The compile guard is spelled with the file's own helper when it imports one
        (transformers' `is_torchdynamo_compiling`, see analysis/conventions.py)."""
        assert self.facts is not None
        if qualified == "torch.compiler.is_compiling" and getattr(self, "guard_helper", None):
            return self.guard_helper, False
        return self.facts.bindings.spell_or_default(qualified)

    # -- suppression ---------------------------------------------------------
    def ignore_lint(self, node: cst.CSTNode) -> bool:
        if super().ignore_lint(node):
            return True
        former = fixit_aliases(self.CODE)  # `# lint-ignore: OldName` still works after a rename
        former += tuple(n.lower() for n in former)
        for comment in self.node_comments(node):
            m = NOQA.search(comment)
            if m:
                codes = m.group("codes")
                if codes is None or self.CODE in re.split(r"[\s,]+", codes.upper()):
                    return True
            m = LintIgnoreRegex.search(comment) if former else None
            if m and m.group(2) and any(n.strip().removesuffix("Rule") in former for n in m.group(2).split(",")):
                return True
        return False

    # -- reporting -----------------------------------------------------------
    def report_fix(self, node: cst.CSTNode, head: str, outcome: Fix | NoFix | Elsewhere, *,
                   at: cst.CSTNode | None = None) -> None:
        """Report `head` with what fix code returned: `head; <title>` with the fix, `head; <title>`
        of a fix made elsewhere, or `head; no fix: <reason>`."""
        if isinstance(outcome, NoFix):
            self.report(node, f"{head}; no fix: {outcome.reason}", at=at)
        elif isinstance(outcome, Elsewhere):
            self.report(node, f"{head}; {outcome.title}", at=at)
        else:
            outcome = self._try_hazard(node, outcome)
            self.report(node, f"{head}; {outcome.title}", fix=outcome, at=at)

    TRY_HAZARD = ("unsafe: this function has a `try` statement, and torch.compile (Dynamo, torch 2.13, Python "
                  "3.11 and 3.12) can fail on the fixed function with \"exception table entry start instruction "
                  "has no offset\"")

    def _try_hazard(self, node: cst.CSTNode, fix: Fix) -> Fix:
        """A SAFE GM1xx fix in a function with a `try` statement is UNSAFE: Dynamo rewrites such a
        function's bytecode after a graph break and, for some layouts of the fixed code, fails on its
        exception table (fuzz seed 7160, tests/fuzz_regressions/GM101_8.py; the unfixed code compiles)."""
        if fix.applicability is not Safety.SAFE or not self.CODE.startswith("GM1"):
            return fix
        func = self.function_of(node)
        if func is None or not context.has_try(func):
            return fix
        return replace(fix, applicability=Safety.UNSAFE, title=f"{fix.title}; {self.TRY_HAZARD}")

    def report_guard(self, node: cst.Call, message: str) -> None:
        """GM2xx: report the call with its compile guard (fixes/guard.py), or `(no fix: <reason>)`."""
        fix = guard.guard(self, node)
        if isinstance(fix, NoFix):
            self.report(node, f"{message} (no fix: {fix.reason})")
        else:
            self.report(node, message, fix=fix, at=node)

    # -- log-strategy = "defer" (fixes/defer.py) ------------------------------
    def defer_site(self, call: cst.Call) -> tuple[cst.SimpleStatementLine, list[cst.Arg]] | None:
        """GM2xx: the line of `call` and the arguments of its deferred helper call, or None."""
        return None

    def _deferred(self, call: cst.Call, kind: str) -> tuple[cst.SimpleStatementLine, cst.BaseStatement] | None:
        """The line of `call` and what replaces it: the original line in eager and the helper call
        under compile, or the helper call alone where the line runs only under compile."""
        got = self.defer_site(call)
        if got is None:
            return None
        line, args = got
        only = context.runs_only_compiled(call, self.parent, self.facts.bindings) is not None
        return line, defer.site(line, args, self.spell("torch.compiler.is_compiling")[0], kind, compiled_only=only)

    def report_deferred(self, call: cst.Call, message: str, title: str, kind: str) -> bool:
        """Report `call` with its deferred form; False (nothing reported) when it has none here.

        Every fix stands alone (an editor may apply one finding's edits): a call's fix uses the
        helper only where the module defines it already. Otherwise the first top-level statement
        with a deferrable call of `kind` is replaced by the helper + that statement with all this
        rule's calls in it rewritten, and each of its calls reports that same fix; calls in later
        statements get their fix in the next pass of `--fix`, once the helper is there. The helper
        needs `torch` imported at module level above it; else there is no deferred form."""
        if not self.settings.selects(self.CODE) or self.ignore_lint(call):
            return True  # suppressed: nothing reported, and no helper planned
        plan = self._deferred(call, kind)
        func = self.function_of(call)
        if plan is None or self._in_tensor_branch(call) or self.torch_free or func is None \
                or not self.facts.scope.frame_root(func):
            return False
        line, new = plan
        names = ("torch.compiler.is_compiling", "torch.compiler.disable",
                 "torch._dynamo.config.reorderable_logging_functions")
        needs = any(self.spell(n)[1] for n in names)
        if defer.HELPERS[kind] in self.facts.scope.index.functions:
            self.report(line, message, fix=Fix(new, title=title, needs_torch_import=needs), at=call)
            return True
        top = line
        while not isinstance(self.parent(top), cst.Module):
            top = self.parent(top)
        planned = self.__dict__.setdefault("_helper_top", {})
        if kind not in planned:
            planned[kind] = self._helper_fix(top, kind, title, needs)
        if planned[kind] is None:
            return False
        first, fix = planned[kind]
        if top is first:
            self.report(top, message, fix=fix, at=call)
        else:
            where = self.get_metadata(PositionProvider, first).start.line
            self.report(line, f"{message}; no fix yet: `--fix` defers it in its next pass, once the fix of the "
                              f"statement at line {where} has added `{defer.HELPERS[kind]}`", at=call)
        return True

    def _helper_fix(self, top: cst.CSTNode, kind: str, title: str, needs: bool) -> tuple | None:
        """(top, the fix that puts the helper above `top` and rewrites this rule's calls in it), or
        None when an import further down may be what binds `torch`."""
        body = list(self.facts.module.body)
        if any(isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom))
               for stmt in body[body.index(top) + 1:]):
            return None
        rewritten = top.visit(defer.ReplaceLines(self._rewrites(top, kind)))
        helper = defer.helper(self.spell("torch.compiler.disable")[0],
                              self.spell("torch._dynamo.config.reorderable_logging_functions")[0], kind)
        lead = list(top.leading_lines)  # blank lines, then maybe a comment block and more blanks
        k = next((i for i, x in enumerate(lead) if x.comment), len(lead))
        helper[0] = helper[0].with_changes(leading_lines=lead[:k])
        rewritten = rewritten.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine(), *lead[k:]])
        return top, Fix(cst.FlattenSentinel([*helper, rewritten]), title=title, needs_torch_import=needs)

    def is_site(self, call: cst.Call) -> bool:
        """GM2xx: `call` is one this rule reports (print, a log call, a warning) in compiled code."""
        return False

    def _rewrites(self, top: cst.CSTNode, kind: str) -> dict:
        """Every site of this rule in `top`, deferred or else guarded: the fix that brings the helper
        replaces all of `top`, so it makes the other sites' fixes too (Fixit applies one pass)."""
        out = {}
        for call in context.calls_below(top):
            if not self.is_site(call) or self.ignore_lint(call):
                continue
            func = self.function_of(call)
            root = func is not None and self.facts.scope.frame_root(func)
            plan = self._deferred(call, kind) if root and not self._in_tensor_branch(call) else None
            if plan is not None:
                out[plan[0]] = plan[1]
                continue
            fix = guard.guard(self, call)
            if isinstance(fix, Fix) and isinstance(fix.node, cst.SimpleStatementLine):
                out[fix.node] = fix.replacement
        return out

    def _in_tensor_branch(self, call: cst.Call) -> bool:
        """`call` sits under an `if`/`while` on a tensor value: GM1xx's fix of that statement leaves
        logging out of the compiled form (it runs in eager only), which it can with the guard."""
        func = self.function_of(call)
        if func is None:
            return False
        ff = self.facts.function(func)
        node = self.parent(call)
        while node is not None and node is not func:
            if isinstance(node, (cst.If, cst.While)) and where.breaks_on(ff, node.test):
                return True
            node = self.parent(node)
        return False

    def report(  # type: ignore[override]
        self,
        node: cst.CSTNode,
        message: str,
        *,
        fix: Fix | None = None,
        at: cst.CSTNode | None = None,
    ) -> None:
        """Report a finding at `at` (default `node`), with `fix` when one is offered.

        The fix replaces `fix.node`, else `node`; without a fix the finding has Safety.NONE.
        """
        if fix is not None and fix.node is not None:
            node = fix.node
        if not self.settings.selects(self.CODE) or self.ignore_lint(node):
            return
        replacement, safety, needs_torch_import, imports = None, Safety.NONE, False, ()
        if fix is not None:
            replacement, safety, needs_torch_import = fix.replacement, fix.applicability, fix.needs_torch_import
            imports = fix.imports
        if replacement is not None and getattr(self, "generated", None) is not None and not self.settings.fix_generated:
            message, replacement = f"{message}; {self._generated_reason(node)}", None
        if replacement is not None and needs_torch_import and self.torch_free:
            message, replacement, needs_torch_import = f"{message}; no fix: {conventions.TORCH_FREE}", None, False
        if replacement is None:
            safety = Safety.NONE
        if safety is Safety.SAFE and self.CODE.startswith("GM3") and self.settings.validation_fixes == "unsafe":
            safety, message = Safety.UNSAFE, f"{message}; {VALIDATION_UNSAFE}"
        if isinstance(at, cst.BooleanOperation) and self.facts is not None:  # training-only breaks say so
            func = self.function_of(at)
            if func is not None:
                message += context.gate_note(at, self.facts.function(func).compile_const)
        pos = self.get_metadata(PositionProvider, at if at is not None else node)
        span = self.get_metadata(PositionProvider, node)
        self.findings.append(
            Finding(self.CODE, self.name, pos.start.line, pos.start.column, pos.end.line, pos.end.column,
                    message, safety, node, replacement, needs_torch_import,
                    (span.start.line, span.start.column, span.end.line, span.end.column), imports=imports)
        )
        # Fixit applies every replacement it is given: hand it only what is allowed here.
        allowed = safety is Safety.SAFE or (safety is Safety.UNSAFE and self.settings.unsafe_fixes)
        if (needs_torch_import or imports) and not self.settings.can_add_imports:
            allowed = False
        super().report(node, message, position=pos, replacement=replacement if allowed else None)  # type: ignore[arg-type]

    def _generated_reason(self, node: cst.CSTNode) -> str:
        """No fix in a generated file: where to fix it instead (analysis/conventions.py)."""
        func = self.function_of(node)
        qn = self.facts.scope.top_qualname(func) if func is not None and self.facts is not None else None
        origin = self._context().ext.origin(qn) if qn is not None else None
        return conventions.no_fix_reason(self.generated, qn, origin)
