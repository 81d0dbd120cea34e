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
Of the defs that may run compiled, the gate (gate.py) keeps whole only those a rule may report in and
the compiled defs linked to them (`_hot`); the others are cut too, and a method of a class no kept def
reads keeps only its imports (`_idle`). A file with no def kept is not parsed by libcst (`NOTHING`).
tests/test_speed_skeleton.py checks the findings with and without it. The runner applies it unless
the settings turn it off (`skeleton = False`: `check --no-skeleton` or `--no-prefilter`).
"""
from __future__ import annotations

import ast
import io
import tokenize

from . import gate, prefilter
from .analysis import summary

NOTHING = b""  # the skeleton of a file where no rule can report: no def a rule may report in runs compiled
HELPER = "_graphmend_print"  # fixes/defer.HELPER: gm201 looks it up among the module's functions
# Kept whole by name: `forward`, an autograd.Function's `backward` (traced with its forward), the helper.
ALWAYS = ("forward", "backward", HELPER)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCK_FIELDS = gate.BLOCK_FIELDS
_nodes = gate.all_nodes


def _whole_file(source: bytes, tree: ast.Module) -> bool:
    if b"\r" in source or b"\x0c" in source:
        return True
    if b"torch" in source and any(n in source for n in prefilter._needles()) and prefilter.names_compile(tree, source):
        return True
    try:
        return tokenize.detect_encoding(io.BytesIO(source).readline)[0] != "utf-8"  # BOM: "utf-8-sig"
    except SyntaxError:
        return True


def _used(node: ast.AST, out: set[str]) -> None:
    """Every name a rule could follow from `node`: Names, attribute names, identifier strings."""
    _names_in(_nodes(node), out)


def _names_in(nodes: list, out: set[str]) -> None:
    name, attribute, constant, alias = ast.Name, ast.Attribute, ast.Constant, ast.alias
    for n in nodes:
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
    `owner`: the class whose body holds it, if any. `body`: the nodes of its body (gate.py reads them)."""
    __slots__ = ("node", "_used", "owner", "_body", "_body_used", "_calls", "_head_nodes")

    def __init__(self, node: ast.AST, owner: str | None = None) -> None:
        self.node = node
        self.owner = owner
        self._used: set[str] | None = None
        self._body: list | None = None
        self._body_used: set[str] | None = None
        self._calls: set[str] | None = None
        self._head_nodes: list | None = None

    @property
    def qualname(self) -> str:
        """The project index's name: "f", or "Cls.m" for a method."""
        name = self.node.name  # type: ignore[attr-defined]
        return f"{self.owner}.{name}" if self.owner else name

    @property
    def body(self) -> list:
        if self._body is None:
            self._body = gate.body_nodes(self.node)
        return self._body

    def _head(self) -> list:
        """The nodes of its decorators, arguments and return annotation."""
        if self._head_nodes is None:
            n = self.node
            self._head_nodes = [x for part in (*n.decorator_list, n.args, n.returns)  # type: ignore[attr-defined]
                                if part is not None for x in _nodes(part)]
        return self._head_nodes

    @property
    def body_used(self) -> set[str]:
        """The names its body uses (not its decorators, defaults, annotations: they run where the def does)."""
        if self._body_used is None:
            self._body_used = set()
            _names_in(self.body, self._body_used)
        return self._body_used

    @property
    def nodes(self) -> list:
        """Every node of the def below it: its body's, then its decorators', arguments', return annotation's."""
        return self.body + self._head()

    @property
    def calls(self) -> set[str]:
        """The names its body calls: `f(...)`, `self.m(...)` (how the analysis finds a same-file callee)."""
        if self._calls is None:
            self._calls = gate.called(self.body)
        return self._calls

    @property
    def used(self) -> set[str]:
        if self._used is None:
            self._used = set(self.body_used)
            _names_in(self._head(), self._used)
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


def _statements(block: list):
    """Every statement of `block` and of the blocks below it (not the expressions: most of the nodes)."""
    todo = list(block)
    while todo:
        n = todo.pop()
        yield n
        todo.extend(_children(n))


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
    for n in _statements(init.body):  # type: ignore[attr-defined]  # an assignment is one
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


def _read_anyway(node: ast.AST, nodes: list | None = None) -> bool:
    """Code the analysis reads in any function: imports (Bindings), attribute stores (`self.x = ...`, and
    `setattr`/`__dict__`, which make a class's NumPy attributes unknown), buffers and parameters
    registered by name (`self.register_buffer("x", ...)`: tensor attributes). `nodes`: those of `node`, if known."""
    return any(isinstance(n, (ast.Import, ast.ImportFrom))
               or isinstance(n, ast.Attribute) and (not isinstance(n.ctx, ast.Load) or n.attr in _REGISTER
                                                    or n.attr == "__dict__")
               or isinstance(n, ast.Name) and n.id == "setattr"  # stores tensors.numpy_attrs cannot see
               for n in (nodes if nodes is not None else _nodes(node)))


def _idle(defs: list[_Def], hot: set[ast.AST], classes: list[ast.ClassDef]) -> set[ast.AST]:
    """The methods of the classes no kept def reads the attributes of: no method of theirs is kept, nor
    one of a class of the file that derives from them (analysis/facts.py reads a class's stores, and its
    same-file bases', for its own methods only). What the analysis reads in them is their imports."""
    needed = {d.owner for d in defs if d.node in hot and d.owner is not None}
    bases = {c.name: {(summary.dotted(b) or "").rsplit(".", 1)[-1] for b in c.bases} for c in classes}
    # scope.frame_root: a kept forward's class, or one deriving from it, built in a store of another class
    built = {d.owner for d in defs if d.node in hot and d.owner is not None and d.node.name == "forward"}  # type: ignore[attr-defined]
    changed = True
    while changed:
        changed = False
        for c in classes:
            if c.name not in built and bases[c.name] & built:
                built.add(c.name)
                changed = True
    if built:
        needed |= {c.name for c in classes if c.name not in needed and _builds(c, built)}
    changed = True
    while changed:
        changed = False
        for c in classes:
            if c.name in needed:
                for name in bases[c.name]:
                    if name and name not in needed:
                        needed.add(name)
                        changed = True
    return {d.node for d in defs if d.owner is not None and d.owner not in needed and d.node not in hot}


def _builds(cls: ast.ClassDef, names: set[str]) -> bool:
    """A store in `cls` (`self.x = ...`) calls one of `names` (scope._built_by_modules)."""
    return any(isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None  # a store is a statement
               and any(isinstance(t, ast.Attribute) for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
               and any(isinstance(c, ast.Call) and (summary.dotted(c.func) or "").rsplit(".", 1)[-1] in names
                       for c in _nodes(n.value))
               for n in _statements(cls.body))


class _Editor:
    def __init__(self, source: bytes, numpy: frozenset[str] = frozenset(), known: dict | None = None,
                 idle: set | None = None, imports_in=None) -> None:
        self.imports_in = imports_in  # gate.FileGate.imports_in
        self.known = known or {}  # def -> its nodes, where already listed (a compiled def the gate cut)
        self.idle = idle or set()  # methods of idle classes (`_idle`): only their imports are read
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
    for n in _statements(tree.body):  # imports are statements
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
    and those binding a name of `_numpy_names` (only imports, in a method of an idle class).

    False (nothing blanked) when none can go; the def is then dropped or kept whole by the caller."""
    body = stmt.body  # type: ignore[attr-defined]
    if body[0].lineno == stmt.lineno or ed.whole_lines(stmt) is None:  # type: ignore[attr-defined]
        return False
    text = b"\n".join(ed.lines[stmt.lineno - 1:stmt.end_lineno]) if ed.numpy else b""  # type: ignore[attr-defined]
    if stmt in ed.idle:
        spans = [ed.whole_lines(s) if not ed.imports_in(s) else None for s in body]
    else:
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
        if top and is_def and stmt not in compiled and not (
                ed.imports_in(stmt) if stmt in ed.idle else _read_anyway(stmt, ed.known.get(stmt))) or docstring:
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


def _aliases(tree: ast.Module, defs: list[_Def]) -> dict[ast.AST, set[str]]:
    """Def -> the names code may reach it through: its name, its class's, module- and class-level names bound to a value
    using it (dispatch tables, `partial`), `self.x` stored from one, what its decorators name
    (registries); to a fixpoint. A local name in a def is no way in: the def uses the name itself."""
    edges: dict[str, set[str]] = {}

    def bind(targets: list, value: ast.AST) -> None:
        names: set[str] = set()
        for t in targets:
            for n in _nodes(t):
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                    names.add(n.id)
                elif isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load):
                    names.add(n.attr)
        if names:
            used: set[str] = set()
            _used(value, used)
            for u in used:
                edges.setdefault(u, set()).update(names)

    def walk(block: list, top: bool) -> None:
        for stmt in block:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if top:
                    bind(targets, stmt.value)
                else:  # in a def: only `self.x = ...`
                    bind([t for t in targets if isinstance(t, ast.Attribute)], stmt.value)
            elif isinstance(stmt, _DEFS):  # `@TABLE.register(...)`: TABLE may reach it
                heads = {(summary.dotted(d.func if isinstance(d, ast.Call) else d) or "").split(".")[0]
                         for d in stmt.decorator_list}
                edges.setdefault(stmt.name, set()).update(heads - {""})
                walk(stmt.body, False)
                continue
            for inner in _blocks(stmt):
                walk([s for h in inner for s in (h.body if isinstance(h, (ast.excepthandler, ast.match_case)) else [h])],
                     top and not isinstance(stmt, _DEFS))
    walk(tree.body, True)
    out: dict[ast.AST, set[str]] = {}
    for d in defs:  # a dunder (`__call__`, `__init__`) or forward is reached through its class too
        name = d.node.name  # type: ignore[attr-defined]  # (`self.h = Helper(); self.h(x)`, `Fn.apply(x)`)
        seen = {name, d.owner} if d.owner is not None and (name.startswith("__") or name in ALWAYS) else {name}
        todo = list(seen)
        while todo:
            for m in edges.get(todo.pop(), ()):
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        out[d.node] = seen
    return out


def _module_classes(tree: ast.Module, g, known: frozenset[str] = frozenset(), trust: bool = False) -> set[str]:
    """Top-level classes that are nn.Modules for scope.py (a module class's forward runs compiled whoever
    calls it): a base that resolves to `torch.nn.*` only, `...PreTrainedModel`, such a class of the file;
    one the index knows (`known`: ext.module_classes); or, before the index answers (`trust`), taken on
    trust and noted in `g.assumed` for the runner to check against it, a base imported from another
    module of the project."""
    top = [c for c in tree.body if isinstance(c, ast.ClassDef)]
    names = [c.name for c in top]
    classes = [c for c in top if names.count(c.name) == 1]
    out: set[str] = {c.name for c in classes if c.name in known}
    trusted: set[str] = set()
    changed = True
    while changed:
        changed = False
        for c in classes:
            if c.name in out:
                continue
            for x in c.bases:
                name = summary.dotted(x) or ""
                q = g.qualify(x)
                if q and all(t.startswith("torch.nn.") for t in q) or name.rsplit(".", 1)[-1].endswith("PreTrainedModel") \
                        or name in out:
                    out.add(c.name)
                    trusted.discard(c.name)
                    changed = True
                    break
                if trust and name.split(".")[0] in g.relative and c.name not in trusted and _has_forward(c):
                    trusted.add(c.name)
                    changed = True
    for c in classes:  # a subclass of a trusted class is one on the same trust (only a forward's class matters)
        if c.name not in out and c.name not in trusted and _has_forward(c) and any(
                (summary.dotted(x) or "") in trusted or (summary.dotted(x) or "").split(".")[0] in g.relative
                for x in c.bases):
            trusted.add(c.name)
    g.assumed.update(("module", c) for c in trusted)
    return out | trusted


def _has_forward(c: ast.ClassDef) -> bool:
    return any(isinstance(s, _DEFS) and s.name == "forward" for s in c.body)


def _hot(tree: ast.Module, defs: list[_Def], compiled: set[ast.AST], g, known: frozenset[str] = frozenset(),
         trust: bool = False) -> tuple[set[ast.AST], set[ast.AST]]:
    """(the compiled defs to keep whole, those of them a rule may report in). Kept: those a rule may
    report in (gate.py), and, to a fixpoint, the
    compiled defs that reach one (callers: what they hand in, whether it runs compiled, whether they
    call it in a `try`) or that one calls (callees: what they return, whether they are disabled,
    pure, NumPy); the others are cut as if they did not run compiled. A module class's `forward`
    runs compiled whoever calls it: only its callers by name count."""
    mine = [d for d in defs if d.node in compiled]
    hot = {d.node for d in mine if d.node.name.startswith("_graphmend_")  # type: ignore[attr-defined]
           or g.may_report(d.node, d.body)}  # defer.HELPERS: rules look them up
    reporting = set(hot)
    if len(hot) == len(mine):
        return compiled, reporting
    if not hot:
        return hot, reporting
    aliases = _aliases(tree, defs)
    modules = _module_classes(tree, g, known, trust)
    reach: set[str] = set()  # the names through which the kept defs may be reached
    named: set[str] = set()  # the names of kept roots (reached by their name only)
    calls: set[str] = set()  # the names the kept defs call (`f(...)`, `self.m(...)`)

    def keep(d: _Def) -> None:
        if d.node.name == "forward" and d.owner in modules:  # type: ignore[attr-defined]
            named.add("forward")
        else:
            reach.update(aliases[d.node])
        calls.update(d.calls)

    for d in mine:
        if d.node in hot:
            keep(d)
    changed = True
    while changed:
        changed = False
        for d in mine:
            if d.node not in hot and (d.body_used & reach or d.calls & named or d.node.name in calls):  # type: ignore[attr-defined]
                hot.add(d.node)
                keep(d)
                changed = True
    return hot, reporting


def skeleton(source: bytes, tree: ast.Module, compiled_scope: str = "reachable", keep: set[str] = frozenset(),
             ext=None) -> bytes:
    """`source` with the code no rule can report on or read blanked; `source` itself when unsure.
    `keep`: qualified names ("f", "Cls.m") of defs that run compiled by the project index; `ext`:
    the file's facts from it (analysis/external.FileFacts), for the gate."""
    return lean(source, tree, compiled_scope, keep, ext)[0]


def stale(ready: tuple, keep: set[str], ext) -> bool:
    """Whether a skeleton `lean` made before the project index answered ((skeleton, cut, assumed))
    differs from the one made with its answers: it cut a def the index keeps, or the gate read an
    attribute as no tensor that the index says a base class of another file registers, or took a class
    for an nn.Module that the index does not, or a call may be of a def disabled in another file."""
    if keep & ready[1]:
        return True
    if ext is None:
        return any(kind == "module" for kind, _ in ready[2])
    buffers = _buffer_names(ext)
    return bool(ext.disabled) or any(what in buffers if kind == "buffer" else what not in ext.module_classes
                                     for kind, what in ready[2])


def _buffer_names(ext) -> frozenset[str]:
    return frozenset(e.partition("\t")[2] for e in ext.buffers) if ext is not None else frozenset()


def lean(source: bytes, tree: ast.Module, compiled_scope: str = "reachable",
         keep: set[str] = frozenset(), ext=None, trust: bool = False) -> tuple[bytes, frozenset[str], frozenset, dict]:
    """(the skeleton, the qualified names of the top-most defs it does not keep as compiled: cut, reduced, or
    left whole only for what the analysis reads, the attributes the gate read as non-tensors, the quiet
    defs). The skeleton made with the project index's answers is the same unless `stale` says otherwise:
    so one made before the index answers (the runner's first pass, `keep` empty) serves most files.
    Quiet: qualified name -> how many top-most defs have it, for the names whose defs are all kept whole
    only for what the analysis reads in them (callers and callees of those a rule may report in): the
    rules' walk need not enter them (engine.lint)."""
    if compiled_scope != "reachable" or _whole_file(source, tree):
        return source, frozenset(), frozenset(), {}
    defs, used = _collect(tree)
    installed = summary.forward_sets(source.decode("utf-8", "replace")) if b".forward" in source else set()
    compiled = _compiled_defs(defs, used, set(keep) | _class_holders(source, defs) | installed)
    g = gate.FileGate(tree, _buffer_names(ext), ext.disabled if ext is not None else frozenset(), source)
    hot, reporting = _hot(tree, defs, compiled, g, ext.module_classes if ext is not None else frozenset(),
                          trust and ext is None)
    cut = frozenset(d.qualname for d in defs if d.node not in compiled)
    if not hot:
        return NOTHING, cut, frozenset(g.assumed), {}
    known = {d.node: d.nodes for d in defs if d.node in compiled and d.node not in hot}
    ed = _Editor(source, _numpy_aliases(tree) if b"numpy" in source else frozenset(), known,
                 _idle(defs, hot, g.classes), g.imports_in)
    _edit(tree.body, ed, hot, True)
    return b"\n".join(ed.lines), cut, frozenset(g.assumed), _quiet(defs, hot, reporting)


def _quiet(defs: list[_Def], hot: set[ast.AST], reporting: set[ast.AST]) -> dict[str, int]:
    """`lean`'s quiet defs: kept whole, and no rule may report in any def of their name."""
    count: dict[str, int] = {}
    loud: set[str] = set()
    for d in defs:
        count[d.qualname] = count.get(d.qualname, 0) + 1
        if d.node not in hot or d.node in reporting:
            loud.add(d.qualname)
    return {q: n for q, n in count.items() if q not in loud}
