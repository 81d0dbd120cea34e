"""Lint-only skeleton: blank the code no rule can report on or read, before libcst parses it.

Every rule reports only in compiled code, and the analysis reads a few things outside it.
From the runner's `ast` tree, a def (outside other defs) is kept whole when it may run compiled:
it is named `forward`, `backward` or `_defer.HELPER`, or installed as one (`X.forward = f`), or (to a fixpoint) its name is used (Name, attribute
name or identifier string) in module/class-level non-def code or in a def kept whole (an `__init__`:
its class's name, in a def kept whole). Of the
other defs, only the body statements the analysis reads in any function are kept: imports
(Bindings merges all scopes) and attribute stores (`self.x = ...`: layer and logger facts read
every method); the rest is dropped, and so are docstrings (a string statement first in a module, class or def body); a module- or
class-level `NAME = "<string>"` keeps its name with the value `""` (no rule reads a string's
content). Dropped lines become empty lines (`pass` where a block would be empty), so every kept
line keeps its number and columns and the findings are the same. Files with a compile-call
needle (`torch.compile`: any function may be a root), CR or form feeds, or a non-UTF-8 coding
cookie are left whole. Lint only: never on --fix/--diff (fixes are made on the whole source).
tests/test_speed_skeleton.py checks the findings with and without it. The runner applies it unless
the settings turn it off (`skeleton = False`: `check --no-skeleton` or `--no-prefilter`).
"""
from __future__ import annotations

import ast
import io
import tokenize

from . import prefilter
from .analysis import summary

HELPER = "_graphmend_print"  # fixes/defer.HELPER: gm201 looks it up among the module's functions
# Kept whole by name: `forward`, an autograd.Function's `backward` (traced with its forward), the helper.
ALWAYS = ("forward", "backward", HELPER)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _whole_file(source: bytes, tree: ast.Module) -> bool:
    if b"\r" in source or b"\x0c" in source:
        return True
    if b"torch" in source and any(n in source for n in prefilter._needles()) and prefilter.names_compile(tree, source):
        return True
    try:
        return tokenize.detect_encoding(io.BytesIO(source).readline)[0] != "utf-8"  # BOM: "utf-8-sig"
    except SyntaxError:
        return True


def _nodes(node: ast.AST) -> list[ast.AST]:
    """`node` and every node below it, as ast.walk, in another order (without its queue of generators)."""
    out, stack, node_type = [], [node], ast.AST
    pop, push, add = stack.pop, stack.append, out.append
    while stack:
        n = pop()
        add(n)
        for f in n._fields:
            v = getattr(n, f, None)
            if v.__class__ is list:
                for c in v:
                    if isinstance(c, node_type):
                        push(c)
            elif isinstance(v, node_type):
                push(v)
    return out


def _used(node: ast.AST, out: set[str]) -> None:
    """Every name a rule could follow from `node`: Names, attribute names, identifier strings."""
    name, attribute, constant, alias = ast.Name, ast.Attribute, ast.Constant, ast.alias
    for n in _nodes(node):
        t = n.__class__
        if t is name:
            out.add(n.id)
        elif t is attribute:
            out.add(n.attr)
        elif t is constant and isinstance(n.value, str) and n.value.isidentifier():
            out.add(n.value)
        elif t is alias:
            out.update((n.name, n.asname or n.name))


class _Def:
    """A top-most def; the names it uses are read when it is kept (most defs of a file are not).
    `owner`: the class whose body holds it, if any."""
    __slots__ = ("node", "_used", "owner")

    def __init__(self, node: ast.AST, owner: str | None = None) -> None:
        self.node = node
        self.owner = owner
        self._used: set[str] | None = None

    @property
    def qualname(self) -> str:
        """The project index's name: "f", or "Cls.m" for a method."""
        name = self.node.name  # type: ignore[attr-defined]
        return f"{self.owner}.{name}" if self.owner else name

    @property
    def used(self) -> set[str]:
        if self._used is None:
            self._used = set()
            _used(self.node, self._used)
        return self._used


def _blocks(node: ast.AST):
    for f in _BLOCK_FIELDS:
        block = getattr(node, f, None)
        if isinstance(block, list) and block:
            yield block


def _children(stmt: ast.AST):
    """Statements directly inside `stmt`'s blocks (handlers and match cases included)."""
    for block in _blocks(stmt):
        for s in block:
            if isinstance(s, (ast.excepthandler, ast.match_case)):
                yield from s.body
            else:
                yield s


def _collect(tree: ast.Module) -> tuple[list[_Def], set[str]]:
    """Top-most defs (not inside another def), and the names used by all other code (and the
    functions an `__init__` stores for later calls: `self.fn = self.forward_once`, `functools.partial(f)`)."""
    defs: list[_Def] = []
    used: set[str] = set()
    _collect_in(tree.body, defs, used)
    for d in defs:
        if d.owner is not None and d.node.name == "__init__":  # type: ignore[attr-defined]
            used.update(_stored_callables(d.node))
    return defs, used


def _stored_callables(init: ast.AST) -> set[str]:
    """`self.x = self.m` / `self.x = self.a if c else self.b` / `self.x = partial(f, ...)`: m, a, b, f
    (analysis/scope.py's `_attr_ctors`: calling `self.x` in compiled code calls them)."""
    out: set[str] = set()
    for n in _nodes(init):
        if not (isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) for t in n.targets)):
            continue
        v = n.value
        out.update(m[len("=self."):] for m in summary.bound_methods(v))
        if isinstance(v, ast.Call) and v.args and isinstance(v.args[0], ast.Name) and \
                (getattr(v.func, "attr", None) or getattr(v.func, "id", None)) == "partial":
            out.add(v.args[0].id)  # by name: the skeleton has no imports to qualify it with
    return out


def _collect_in(block: list, defs: list[_Def], used: set[str], owner: str | None = None) -> None:
    """`_collect` of the statements of `block` (a module-level function: a nested one that calls
    itself is a cycle, which would keep the file's tree alive until the cyclic collector runs)."""
    for stmt in block:
        if isinstance(stmt, _DEFS):
            defs.append(_Def(stmt, owner))
            continue
        inner = list(_children(stmt))
        if not inner:
            _used(stmt, used)
            continue
        for f, value in ast.iter_fields(stmt):  # the statement's own parts: tests, bases, decorators...
            if f in _BLOCK_FIELDS:
                for h in value:
                    if isinstance(h, ast.excepthandler) and h.type is not None:
                        _used(h.type, used)
                    elif isinstance(h, ast.match_case):
                        _used(h.pattern, used)
                        if h.guard is not None:
                            _used(h.guard, used)
                continue
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, ast.AST):
                    _used(v, used)
        _collect_in(inner, defs, used, stmt.name if isinstance(stmt, ast.ClassDef) else owner)


def _compiled_defs(defs: list[_Def], used: set[str], keep: set[str] = frozenset()) -> set[ast.AST]:
    """Defs that may run compiled: `forward`, and (to a fixpoint) every def whose name kept code uses."""
    kept: set[ast.AST] = set()
    in_kept: set[str] = set()  # the names kept defs use (not module-level code: `__all__` names every class)
    changed = True
    while changed:
        changed = False
        for d in defs:
            name = d.node.name  # type: ignore[attr-defined]
            if d.node not in kept and (name in ALWAYS or name in used or d.qualname in keep
                                       or name == "__init__" and d.owner in in_kept):  # a class made in kept code
                kept.add(d.node)
                used |= d.used
                in_kept |= d.used
                changed = True
    return kept


def _class_holders(source: bytes, defs: list[_Def]) -> set[str]:
    """Names of top-most defs with a `def forward` inside (a module class defined in a function,
    unsloth's `_classes()`: its forward is a root, scope.py's nested_modules)."""
    if b"def forward" not in source:
        return set()
    lines, at, line, last = [], source.find(b"def forward"), 1, 0
    while at != -1:
        line += source.count(b"\n", last, at)
        lines.append(line)
        last, at = at, source.find(b"def forward", at + 1)
    return {d.qualname for d in defs  # type: ignore[attr-defined]
            if d.node.name != "forward" and any(d.node.lineno < n <= d.node.end_lineno for n in lines)}  # type: ignore[attr-defined]


_REGISTER = ("register_buffer", "register_parameter")


def _read_anyway(node: ast.AST) -> bool:
    """Code the analysis reads in any function: imports (Bindings), attribute stores (`self.x = ...`, and
    `setattr`/`__dict__`, which make a class's NumPy attributes unknown), buffers and parameters
    registered by name (`self.register_buffer("x", ...)`: tensor attributes)."""
    return any(isinstance(n, (ast.Import, ast.ImportFrom))
               or isinstance(n, ast.Attribute) and (not isinstance(n.ctx, ast.Load) or n.attr in _REGISTER
                                                    or n.attr == "__dict__")
               or isinstance(n, ast.Name) and n.id == "setattr"  # stores tensors.numpy_attrs cannot see
               for n in _nodes(node))


class _Editor:
    def __init__(self, source: bytes, numpy: frozenset[str] = frozenset()) -> None:
        self.lines = source.split(b"\n")  # no CR (see _whole_file): offsets are UTF-8 bytes, like ast's
        self.numpy = numpy  # the module's names for numpy (_numpy_aliases)

    def whole_lines(self, stmt: ast.stmt) -> tuple[int, int] | None:
        """(first, last) line numbers when `stmt` alone occupies them, else None."""
        first = stmt.lineno
        decorators = getattr(stmt, "decorator_list", None)
        if decorators:
            first = min(d.lineno for d in decorators)
            if not self.lines[first - 1].lstrip().startswith(b"@"):
                return None
        elif self.lines[first - 1][:stmt.col_offset].strip():
            return None
        assert stmt.end_lineno is not None and stmt.end_col_offset is not None
        rest = self.lines[stmt.end_lineno - 1][stmt.end_col_offset:].strip()
        if rest and not rest.startswith(b"#"):
            return None
        return first, stmt.end_lineno

    def blank(self, first: int, last: int, keep: bytes = b"") -> None:
        for i in range(first - 1, last):
            self.lines[i] = b""
        self.lines[first - 1] = keep

    def indent(self, line: int) -> bytes:
        text = self.lines[line - 1]
        return text[:len(text) - len(text.lstrip())]


def _is_doc(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _string_assign(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
            and stmt.value.lineno == stmt.lineno and stmt.value.end_lineno == stmt.end_lineno)


def _numpy_aliases(tree: ast.Module) -> frozenset[str]:
    """Names the module's imports bind to `numpy` or its members (`np`, `from numpy import array`)."""
    out: set[str] = set()
    todo = [tree]
    while todo:  # statements only: imports are statements, and expressions are most of the nodes
        n = todo.pop()
        todo.extend(_children(n))
        if isinstance(n, ast.Import):
            out.update(a.asname or a.name.split(".")[0] for a in n.names if a.name.split(".")[0] == "numpy")
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").split(".")[0] == "numpy":
            out.update(a.asname or a.name for a in n.names)
    return frozenset(out)


def _numpy_names(func: ast.AST, aliases: frozenset[str]) -> set[str]:
    """Local names of `func` bound (`=`, `:=`) to a value that calls NumPy or reads such a name (to a fixpoint):
    tensors.numpy_attrs follows them from `self.x = <value>` (FeMaSR's `codebook_params =
    np.array(p)`), so every statement binding one is kept, and a name's values join as in the whole def."""
    binds = [(t, n.value) for n in _nodes(func) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr))
             and n.value is not None
             for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)]
    reads = [(t.id, {x.id for x in _nodes(v) if isinstance(x, ast.Name)},
              any(isinstance(x, ast.Call) and (summary.dotted(x.func) or "").split(".")[0] in aliases for x in _nodes(v)))
             for t, v in binds]
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, names, calls in reads:
            if name not in out and (calls or names & out):
                out.add(name)
                changed = True
    return out


def _binds(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and n.id in names for n in _nodes(node))


def _reduce(stmt: ast.AST, ed: _Editor) -> bool:
    """Blank the body statements of a def that never runs compiled, except those `_read_anyway`
    and those binding a name of `_numpy_names`.

    False (nothing blanked) when none can go; the def is then dropped or kept whole by the caller."""
    body = stmt.body  # type: ignore[attr-defined]
    if body[0].lineno == stmt.lineno or ed.whole_lines(stmt) is None:  # type: ignore[attr-defined]
        return False
    text = b"\n".join(ed.lines[stmt.lineno - 1:stmt.end_lineno]) if ed.numpy else b""  # type: ignore[attr-defined]
    names = _numpy_names(stmt, ed.numpy) if any(a.encode() in text for a in ed.numpy) else set()
    spans = [ed.whole_lines(s) if not (_read_anyway(s) or names and _binds(s, names)) else None for s in body]
    if not any(spans) or all(spans):
        return False
    for span in spans:
        if span is not None:
            ed.blank(*span)
    return True


def _edit(block: list, ed: _Editor, compiled: set, top: bool, doc_block: bool = True) -> None:
    """Blank what can go in one block; a block left empty gets a `pass` on its first dropped line.

    `doc_block`: the body of a module, class or def, whose first string statement is a docstring
    (a string statement elsewhere, e.g. in an `if` branch, is code the rules see)."""
    dropped = []
    for stmt in block:
        if isinstance(stmt, (ast.excepthandler, ast.match_case)):
            _edit(stmt.body, ed, compiled, top, False)
            continue
        is_def = isinstance(stmt, _DEFS)
        docstring = doc_block and stmt is block[0] and _is_doc(stmt)
        if top and is_def and stmt not in compiled and not _read_anyway(stmt) or docstring:
            span = ed.whole_lines(stmt)
            if span is not None:
                dropped.append((span, ed.indent(span[0])))
                continue
        if top and is_def and stmt not in compiled and _reduce(stmt, ed):
            continue
        if top and _string_assign(stmt) and ed.whole_lines(stmt) is not None and stmt.end_lineno != stmt.lineno:
            v = stmt.value
            line = ed.lines[stmt.lineno - 1][:v.col_offset] + b'""' + ed.lines[v.end_lineno - 1][v.end_col_offset:]
            ed.blank(stmt.lineno, stmt.end_lineno, line)  # type: ignore[arg-type]
            continue
        for inner in _blocks(stmt):
            _edit(inner, ed, compiled, top and not is_def,
                  isinstance(stmt, (ast.ClassDef, *_DEFS)) and inner is stmt.body)  # type: ignore[attr-defined]
    for (first, last), _ in dropped:
        ed.blank(first, last)
    if dropped and len(dropped) == len(block):
        (first, _), indent = dropped[0]
        ed.lines[first - 1] = indent + b"pass"


def skeleton(source: bytes, tree: ast.Module, compiled_scope: str = "reachable", keep: set[str] = frozenset()) -> bytes:
    """`source` with the code no rule can report on or read blanked; `source` itself when unsure.
    `keep`: qualified names ("f", "Cls.m") of defs that run compiled by the project index."""
    return lean(source, tree, compiled_scope, keep)[0]


def lean(source: bytes, tree: ast.Module, compiled_scope: str = "reachable",
         keep: set[str] = frozenset()) -> tuple[bytes, frozenset[str]]:
    """(the skeleton, the qualified names of the top-most defs it does not keep as compiled: cut, reduced, or
    left whole only for what the analysis reads). The skeleton with more `keep` names is the same
    unless one of them is among those: so one made before the project index answers (the runner's
    first pass, `keep` empty) serves every file whose compiled names miss them."""
    if compiled_scope != "reachable" or _whole_file(source, tree):
        return source, frozenset()
    defs, used = _collect(tree)
    installed = summary.forward_sets(source.decode("utf-8", "replace")) if b".forward" in source else set()
    compiled = _compiled_defs(defs, used, set(keep) | _class_holders(source, defs) | installed)
    ed = _Editor(source, _numpy_aliases(tree) if b"numpy" in source else frozenset())
    _edit(tree.body, ed, compiled, True)
    return b"\n".join(ed.lines), frozenset(d.qualname for d in defs if d.node not in compiled)
