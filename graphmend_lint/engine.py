"""Run the rules over one source and apply fixes until nothing changes.

Each parsed module gets one file context (analysis/filecontext.py), made here and handed to the
rules as the metadata of its Module node; the fixes' passes read the module code it keeps.
"""
from __future__ import annotations

import warnings
from collections import ChainMap, Counter
from dataclasses import dataclass, field, replace

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from . import cstparse, fastwalk
from . import rules as rules_pkg
from . import settings as settings_mod
from .analysis import external
from .analysis.bindings import Bindings
from .analysis.filecontext import FileContext
from .fixes import layout

MAX_FIX_PASSES = 10
Finding = rules_pkg.base.Finding
Safety = rules_pkg.base.Safety


@dataclass
class Result:
    findings: list = field(default_factory=list)  # remaining findings, sorted
    source: bytes = b""  # the (possibly fixed) source
    fixed: int = 0  # number of fixes applied
    fixed_codes: Counter = field(default_factory=Counter)  # code -> fixes applied


def selected_rules(s: settings_mod.Settings) -> list[type]:
    return [r for r in rules_pkg.ALL_RULES if s.selects(r.CODE)]


def lint(ctx: FileContext, quiet: dict | None = None) -> list:
    """The findings, sorted, of the rules `ctx.settings` selects on `ctx.module`. `quiet`: the defs
    of a skeleton no rule may report in (skeleton.lean): the rules' walk does not enter them (the
    analysis still reads them)."""
    instances = [r() for r in selected_rules(ctx.settings)]
    if instances:  # same hooks and metadata as MetadataWrapper's, the context handed in
        metadata = {rules_pkg.base.FileContextProvider: {ctx.module: ctx}, ParentNodeProvider: ctx.parents,
                    PositionProvider: ctx.positions}
        fastwalk.visit_batched(ctx.module, instances, metadata, _quiet_defs(ctx.module, quiet) if quiet else frozenset())
    findings = [f for r in instances for f in r.findings]
    return sorted(findings, key=lambda f: f.sort_key)


def _quiet_defs(module: cst.Module, quiet: dict) -> frozenset:
    """The top-most defs named in `quiet` (skeleton.lean: name -> how many defs have it), found as
    skeleton._collect finds them (through compound statements and classes, the innermost class
    naming a method); a name with another count is left to the walk."""
    found: dict[str, list] = {}
    todo = [(module.body, None)]
    while todo:
        body, owner = todo.pop()
        for stmt in body:
            if isinstance(stmt, cst.FunctionDef):
                found.setdefault(f"{owner}.{stmt.name.value}" if owner else stmt.name.value, []).append(stmt)
            elif isinstance(stmt, cst.BaseCompoundStatement):
                inner = stmt.name.value if isinstance(stmt, cst.ClassDef) else owner
                todo.extend((block.body, inner) for block in _blocks(stmt))
    return frozenset(d for name, defs in found.items() if quiet.get(name) == len(defs) for d in defs)


def _blocks(stmt: cst.BaseCompoundStatement) -> list:
    """The indented blocks of a compound statement (elif/else, handlers, finally, match cases)."""
    out = []
    parts = [getattr(stmt, "body", None), *getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]
    orelse = getattr(stmt, "orelse", None)
    while orelse is not None:
        parts.append(orelse.body if not isinstance(orelse, cst.If) else orelse)
        orelse = orelse.orelse if isinstance(orelse, cst.If) else None
    if getattr(stmt, "finalbody", None) is not None:
        parts.append(stmt.finalbody)
    for part in parts:
        block = part.body if isinstance(part, (cst.If, cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchCase,
                                               cst.Finally)) else part
        if isinstance(block, cst.IndentedBlock):
            out.append(block)
    return out


def lint_module(module: cst.Module, s: settings_mod.Settings, ext: external.FileFacts | None = None,
                source: bytes | None = None) -> list:
    """`lint` with a new context. `ext`: the file's facts from the project index (analysis/project.py);
    None: the file alone. `source`: the module's code, if the caller has it (positions are then
    computed one statement at a time)."""
    return lint(FileContext(module, s, ext, source))


def applicable(f, s: settings_mod.Settings) -> bool:
    return f.replacement is not None and (
        f.safety is Safety.SAFE or (f.safety is Safety.UNSAFE and s.unsafe_fixes)
    )


def _made_by(f, todo: list) -> bool:
    """`f`'s fix is applied, or made by an applied fix of its rule that spans it (a deferred
    helper's fix rewrites every call of its rule in the statement it replaces)."""
    return any(f is k or (f.code == k.code and f.code.startswith("GM2")
                          and k.fix_range[:2] <= f.fix_range[:2] and f.fix_range[2:] <= k.fix_range[2:])
               for k in todo)


def _non_overlapping(fixes: list) -> list:
    """Outermost first; a fix inside (or equal to) an already kept span waits for the next pass."""
    kept: list = []
    for f in sorted(fixes, key=lambda f: (f.fix_range[:2], (-f.fix_range[2], -f.fix_range[3]))):
        a = f.fix_range
        if any(k.fix_range[:2] <= a[:2] and a[2:] <= k.fix_range[2:] or
               (a[:2] < k.fix_range[2:] and k.fix_range[:2] < a[2:]) for k in kept):
            continue
        kept.append(f)
    return kept


class _Replace(cst.CSTTransformer):
    """Replace nodes; only the nodes above a replaced one are rebuilt (`path`), the rest are kept."""

    def __init__(self, replacements: dict, path: set) -> None:
        self.replacements = replacements
        self.path = path

    def on_visit(self, node: cst.CSTNode) -> bool:
        return node not in self.replacements and node in self.path

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
        return self.replacements.get(original, updated)


def apply_fixes(module: cst.Module, fixes: list, parents: dict | None = None) -> cst.Module:
    """`parents`: fastwalk.parents(module), when the caller has it."""
    if parents is None or any(type(f.node) in fastwalk.TRIVIAL for f in fixes):
        parents = fastwalk.parents(module, every=True)
    path: set = {module}
    for f in fixes:
        n = parents.get(f.node)
        while n is not None and n not in path:
            path.add(n)
            n = parents.get(n)
    new = module.visit(_Replace({f.node: f.replacement for f in fixes}, path))
    if any(f.needs_torch_import for f in fixes) and Bindings.of(new).torch_name() is None:
        new = layout.add_import(new, "torch")  # where isort would put it
    for name in sorted({m for f in fixes for m in f.imports}):
        if Bindings.of(new).spell(f"{name}.__name__") is None:
            new = layout.add_import(new, name)
    return new


def text_edits(before: str, after: str) -> list[dict]:
    """The line edits that turn `before` into `after` (ruff's JSON shape: 1-based rows and columns)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    return [{"content": "".join(new[j1:j2]), "location": {"row": i1 + 1, "column": 1},
             "end_location": {"row": i2 + 1, "column": 1}} for i1, i2, j1, j2 in layout.line_changes(old, new)]


class NotOnWhole(Exception):
    """A fix's edits, computed on a skeleton, may not hold on the whole file."""


def _attach_edits(ctx: FileContext, findings: list, whole: str | None = None) -> None:
    """`whole`: the whole file when `ctx.module` is its skeleton (runner.py); raises NotOnWhole unless
    every fix's edits are shown to be those of the whole file (`_holds`)."""
    s, module = ctx.settings, ctx.module
    todo = [f for f in findings if f.replacement is not None
            and (not (f.needs_torch_import or f.imports) or s.can_add_imports)]
    if not todo:
        return
    before, parts = _Parts.of(ctx)
    parents = ctx.parents
    check = _Holds(ctx, before, whole) if whole is not None else None
    for f in todo:
        edits = parts.edits(f) if parts is not None and not (f.needs_torch_import or f.imports) else None
        if edits is None:  # the whole module's way
            edits = text_edits(before, ctx.code(finish(ctx, before, apply_fixes(module, [f], parents))))
        if check is not None and not check(f, edits):
            raise NotOnWhole
        f.edits = edits


class _Holds:
    """Whether a fix's edits on the skeleton are those of the whole file (which keeps the same line
    numbers and differs only in lines the skeleton blanked). Let U be the lines of the statements of
    the block that holds the fix (the fix and the merge of adjacent guards change only those). If
    the two texts agree on U and every edit lies in U, the fixed texts differ only where the texts
    did, and difflib (set aside common start and end, then the same middle) gives the same edits."""

    def __init__(self, ctx: FileContext, before: str, whole: str) -> None:
        self.module, self.parents = ctx.module, ctx.parents
        self.lines, self.whole = before.splitlines(keepends=True), whole.splitlines(keepends=True)
        self.positions = ctx.positions

    def __call__(self, f, edits: list) -> bool:
        if len(self.lines) != len(self.whole):
            return False
        block = self.parents.get(f.node)
        while block is not None and not isinstance(block, (cst.IndentedBlock, cst.Module)):
            block = self.parents.get(block)
        if block is None or not block.body:
            return False
        if block is self.module:
            first, last = 1, len(self.lines)
        else:
            first, last = self.positions[block.body[0]].start.line, self.positions[block.body[-1]].end.line
        if self.lines[first - 1:last] != self.whole[first - 1:last]:
            return False
        return all(first <= e["location"]["row"] <= e["end_location"]["row"] <= last + 1 for e in edits)


class _Parts:
    """A fix's edits computed on a part of the module that holds it, alone in a module: the
    innermost def whose body holds the fix (a method: its class's other methods are never
    generated, wrapped or parsed again), else the top-level statement.

    A top-level statement's code does not depend on the statements around it (checked: it is the
    file's text at its place), and the passes of `finish` read only the lines a fix changed, which
    lie inside that statement (checked; the line diffs are still taken on the whole text, the
    statement's new code spliced in). So the edits are those of `finish` on the whole module,
    without generating the whole module's code and positions again for each fix. A def below the
    top level is put in a module under one `class _:` a block above it, each block with its own
    indent, so its lines read as in the file (checked the same way); a fix inside its body, and
    guards merged there, change no line around it. The module's text is its source (libcst gives
    back what it parsed, byte for byte), generated only without one. Anything else (imports to
    add, CR line endings, no newline at the end, a statement removed) takes the whole-module way."""

    def __init__(self, ctx: FileContext, before: str) -> None:
        self.ctx, self.module, self.before = ctx, ctx.module, before
        self._line_starts: list[int] | None = None

    @classmethod
    def of(cls, ctx: FileContext) -> "tuple[str, _Parts | None]":
        """The module's code, and its parts unless the whole-module way is needed."""
        module, before = ctx.module, _text(ctx)
        if "\r" in before or "barry_as_FLUFL" in before or not module.has_trailing_newline or not module.body:
            return before, None
        return before, cls(ctx, before)

    def _statement(self, f):
        """(module, header, start and end of its part in the text, lines above it, depth, parents)
        for the top-level statement that holds the fix."""
        parents, node = self.ctx.parents, f.node
        while node is not None and parents.get(node) is not self.module:
            node = parents.get(node)
        if node is None:
            return None
        small = self.module.with_changes(header=[], body=[node], footer=[], has_trailing_newline=True)
        text = self.ctx.code(small)
        placed = self._place(node, text)
        if placed is None:
            return None
        a, first = placed
        return small, "", a, a + len(text), first, 0, parents

    def _def(self, f):
        """As `_statement`, for the innermost def below the top level whose body holds the fix."""
        parents, module = self.ctx.parents, self.module
        below, node = None, f.node
        while node is not None and not isinstance(node, cst.FunctionDef):
            below, node = node, parents.get(node)
        if node is None or below is not node.body or not isinstance(node.body, cst.IndentedBlock):
            return None
        blocks, up = [], parents.get(node)
        while up is not None and up is not module:
            if isinstance(up, cst.IndentedBlock):
                blocks.append(up)
            elif not isinstance(up, cst.BaseCompoundStatement | cst.BaseSuite | cst.Else | cst.Finally
                                | cst.ExceptHandler | cst.ExceptStarHandler | cst.MatchCase):
                return None
            up = parents.get(up)
        if up is None or not blocks:  # a top-level def is its own statement
            return None
        header, pad, newline = "", "", module.default_newline
        for block in reversed(blocks):
            header += f"{pad}class _:{newline}"
            pad += module.default_indent if block.indent is None else block.indent
        inner, above = node, {}
        for block in blocks:
            body = cst.IndentedBlock(body=[inner], indent=block.indent)
            outer = cst.ClassDef(name=cst.Name("_"), body=body)
            above[inner], above[body] = body, outer
            inner = outer
        small = module.with_changes(header=[], body=[inner], footer=[], has_trailing_newline=True)
        above[inner] = small
        text = self.ctx.code(small)
        if not text.startswith(header):
            return None
        part = text[len(header):]
        placed = self._place(node, part)
        if placed is None:
            return None
        a, first = placed
        return small, header, a, a + len(part), first, len(blocks), ChainMap(above, parents)  # the new nodes' parents first

    def _place(self, node: cst.CSTNode, text: str) -> tuple[int, int] | None:
        """(offset, lines above) of `node`'s code `text` in the module's text, or None where that is
        not its text: its first token's line, less its leading lines and decorators."""
        lead = len(getattr(node, "leading_lines", ()))
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            lead += len(node.lines_after_decorators) + sum(
                self.module.code_for_node(d).count("\n") for d in node.decorators)
        first = self.ctx.positions[node].start.line - lead - 1
        starts = self._starts()
        if not 0 <= first < len(starts) or self.before[starts[first]:starts[first] + len(text)] != text:
            return None
        return starts[first], first

    def _starts(self) -> list[int]:
        if self._line_starts is None:
            starts, at = [0], self.before.find("\n")
            while at >= 0:
                starts.append(at + 1)
                at = self.before.find("\n", at + 1)
            self._line_starts = starts
        return self._line_starts

    def edits(self, f) -> list | None:
        ctx = self.ctx
        code = ctx.code
        part = self._def(f) or self._statement(f)
        if part is None:
            return None
        small, header, a, b, first, depth, parents = part

        def whole(m: cst.Module) -> str | None:
            text = code(m)
            if not (text.endswith("\n") and text.startswith(header) and _alone(m, depth)):
                return None
            return self.before[:a] + text[len(header):] + self.before[b:]

        def lines(m: cst.Module) -> set[int] | None:
            text = whole(m)
            if text is None:
                return None
            n = code(m).count("\n")
            got = {k - first + depth for k in layout.changed_lines(self.before, text)}  # lines of `m`
            return got if all(depth < k <= n for k in got) else None

        fixed = apply_fixes(small, [f], parents)
        touched = lines(fixed)
        if touched is None:
            return None
        merged = layout.merge_guards(fixed, touched, code)
        if merged is not fixed:
            touched = lines(merged)
            if touched is None:
                return None
        after = whole(layout.wrap(merged, touched, ctx.settings.line_length, code))
        return None if after is None else text_edits(self.before, after)


def _text(ctx: FileContext) -> str:
    """The module's code: its source, when the context has it, else generated."""
    source = ctx.source
    if isinstance(source, bytes):
        try:
            return source.decode(ctx.module.encoding)
        except (LookupError, UnicodeDecodeError):
            return ctx.code()
    return source if isinstance(source, str) else ctx.code()


def _alone(m: cst.Module, depth: int) -> bool:
    """`m` still holds one part: the def under its `depth` classes (or, at depth 0, a statement)."""
    body = m.body
    for _ in range(depth):
        if len(body) != 1 or not isinstance(body[0], cst.ClassDef) or not isinstance(body[0].body, cst.IndentedBlock):
            return False
        body = body[0].body.body
    return len(body) == 1 if depth else bool(body)


def finish(ctx: FileContext, before: str, module: cst.Module) -> cst.Module:
    """The passes over fixed code (`module`, made from `ctx.module`), on the lines the fixes changed
    (fixes/layout.py): adjacent guards merged, long lines wrapped at `line-length` as `ruff format` would."""
    code = ctx.code
    lines = layout.changed_lines(before, code(module))
    merged = layout.merge_guards(module, lines, code)
    if merged is not module:
        lines = layout.changed_lines(before, code(merged))
    return layout.wrap(merged, lines, ctx.settings.line_length, code)


def check(source: bytes, s: settings_mod.Settings, fix: bool = False, ext: external.FileFacts | None = None,
          whole: bytes | None = None, quiet: dict | None = None) -> Result:
    """Lint `source`; with `fix`, apply allowed fixes pass after pass, then lint again.
    `whole`: the whole file when `source` is its skeleton (lint only; see `_Holds`); `quiet`: its
    defs no rule may report in (skeleton.lean; lint only).

    Raises libcst.ParserSyntaxError (and decoding errors) for sources that do not parse,
    and SyntaxError when a fix would produce code Python rejects (nothing is returned then).
    """
    s = replace(s, can_add_imports=True)
    ctx = FileContext(cstparse.parse_module(source), s, ext, source)
    findings = lint(ctx, None if fix else quiet)
    fixed, codes = 0, Counter()
    if fix:
        original = ctx.code()
        for _ in range(MAX_FIX_PASSES):
            allowed = [f for f in findings if applicable(f, s)]
            todo = _non_overlapping(allowed)
            if not todo:
                break
            new = apply_fixes(ctx.module, todo, ctx.parents)
            if ctx.code(new) == ctx.code():
                break
            done = [f for f in allowed if _made_by(f, todo)]
            fixed += len(done)
            codes.update(f.code for f in done)
            code = finish(ctx, original, new).bytes
            ctx = FileContext(cstparse.parse_module(code), s, ext, code)  # each pass lints finished code
            findings = lint(ctx)
        with warnings.catch_warnings():  # the file's own SyntaxWarnings are not ours to print
            warnings.simplefilter("ignore")
            compile(ctx.code(), "<fixed>", "exec", dont_inherit=True)
    elif s.fix_edits:  # JSON output and the language server
        _attach_edits(ctx, findings, whole.decode("utf-8") if whole is not None else None)
    return Result(findings, ctx.module.bytes if fix else source, fixed, codes)
