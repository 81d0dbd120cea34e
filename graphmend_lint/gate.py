"""Which compiled defs a rule may report in, read off Python's `ast` (the skeleton's gate).

`FileGate(tree).may_report(func)` is False only when no rule can report anywhere inside the
top-most def `func`: every rule reports at a node of a few kinds (an `if`/`while` test, a call,
a subscript...) and only when a fact holds there (the test depends on tensor data, the call
resolves to `print`...). The gate checks each such site with facts that over-approximate the
rules' own (analysis/tensors.py `FunctionFacts.value`): `_Facts.may` answers "may this expression
depend on tensor data" and "is it surely static" on `ast`, names followed through every binding of
the def and the defs nested in it. Saying yes too often costs time only; saying no wrongly loses a
finding, so each trigger follows its rule's visit hooks (tests/test_speed_skeleton.py checks every
fixture with and without the skeleton, and the lint-speed check whole trees against the base).
`assumed` holds what the gate took on trust before the project index answered (the first pass):
("buffer", x), a `self.x` read as no tensor though a base class of another file may register it;
("module", C), a class taken for an nn.Module by a base imported from the project (skeleton.py). The
runner makes the skeleton again where the index says otherwise (skeleton.stale).
"""
from __future__ import annotations

import ast
import bisect
import re

from .analysis import tables as T
from .analysis.summary import dotted

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TESTS = (ast.If, ast.While, ast.IfExp, ast.Assert)
_YIELDS = (ast.Yield, ast.YieldFrom)
# Calls named by a rule (analysis/tables.py, shared with the rules; tests/test_speed_gate.py checks them):
LOGGER_METHODS = T.LOGGER_METHODS
# any receiver: GM202's loggers, GM901-903's `.item()`/`.tolist()`/`.numpy()`, GM909, GM905, GM916, the
# names GM301-303 read as tensor checks, GM203's `warnings.warn` under another name
_METHODS = {*T.DATA_METHODS, "data_ptr", "requires_grad_", "warn", "warn_explicit", *T.DYNAMIC_FUNCS} | LOGGER_METHODS
_DYNAMIC = T.DYNAMIC_FUNCS  # GM905, imported bare
_CASTS, _NOT_LAYERS = T.MODULE_CASTS, T.NOT_LAYERS  # GM914
_SIZES, _SIZE_FUNCS = set(T.SIZE_METHODS), set(T.SIZE_FUNCS)  # GM906
# qualified names: GM303, GM921, GM922, GM911, and torch.equal/allclose/is_nonzero (GM301-303)
_NAMED = {"torch._assert", "torch._check_tensor_all", "copy.deepcopy", *T.GRAD_FUNCS, *T.RNG_STATE,
          *T.DATA_FUNCS, *(f"torch.{n}" for n in _DYNAMIC)}
_MODULES = {"logging", "warnings", "time", "random", "numpy"}  # GM202, GM203, GM908, GM910, GM917, GM918
_PARAMETERS = {q.rsplit(".", 1)[-1] for q in (*T.PARAMETER, *T.PARAMETER_LAYERS)} | {"from_pretrained"}  # GM923
_CONTEXTS = {*T.BACKEND_FLAGS, *T.UNTRACEABLE_CONTEXTS}  # GM913, GM920
_RNNS = {q.rsplit(".", 1)[-1] for q in T.RNNS}  # GM919
_NEW_OBJECTS = {q.rsplit(".", 1)[-1] for q in T.NEW_OBJECT_FUNCS}  # `self.x = torch.zeros(n)`: a tensor
_LOGGER_FACTORIES = {*T.LOGGER_FACTORIES, "Logger"}
BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")  # a statement's blocks
_NO = (False, False)  # (may depend on tensor data, surely static)
_STATIC = (False, True)
_DATA = (True, False)


class _Facts:
    """`may` over one top-most def: its bindings, loops and parameters, and those of its nested defs."""

    def __init__(self, func: ast.AST, gate: FileGate, nodes: list) -> None:
        self.g = gate
        self.assigned: dict[str, list[ast.AST]] = {}  # name -> values (an unknown binding adds nothing)
        self.params: dict[str, list[tuple[ast.arg, ast.AST | None, bool]]] = {}  # (arg, default, of `func`)
        self.memo: dict[str, tuple[bool, bool]] = {}
        self.active: set[str] = set()
        self.nodes = nodes
        self.name = func.name  # type: ignore[attr-defined]
        self._params(func, True)
        for n in nodes:
            t = n.__class__
            if t is ast.Assign:
                for tg in n.targets:
                    self._bind(tg, n.value)
            elif t is ast.AnnAssign or t is ast.NamedExpr:
                if n.value is not None:
                    self._bind(n.target, n.value)
            elif t is ast.AugAssign:
                if n.target.__class__ is ast.Name:
                    self._add(n.target.id, ast.BinOp(n.target, n.op, n.value))
            elif t is ast.For or t is ast.AsyncFor:
                self._loop(n.target, n.iter)
            elif t is ast.withitem:
                if n.optional_vars is not None:
                    self._bind(n.optional_vars, n.context_expr)
            elif t in _DEFS:
                self._params(n, False)

    def _loop(self, target: ast.AST, it: ast.AST) -> None:
        """A loop's names take the elements of what it iterates (tensors._Assignments._bind_loop): through
        `zip(a, b)` and `enumerate(a)` unpacked, those of `a` and `b`; `range(...)` and an index: unknown."""
        call = it.func.id if it.__class__ is ast.Call and it.func.__class__ is ast.Name else None
        parts = target.elts if target.__class__ in (ast.Tuple, ast.List) else None
        if call in ("zip", "zip_longest", "enumerate") and parts is not None and not it.keywords \
                and not any(isinstance(a, ast.Starred) for a in (*it.args, *parts)):
            if call != "enumerate" and len(it.args) == len(parts):
                for e, a in zip(parts, it.args):
                    self._loop(e, a)
                return
            if call == "enumerate" and len(it.args) == 1 and len(parts) == 2:
                self._loop(parts[1], it.args[0])
                return
        if call in ("zip", "zip_longest", "enumerate", "range"):
            for a in it.args:  # what else the loop may bind: any part of any argument (an over-approximation)
                if call != "range":
                    self._bind(target, a.value if isinstance(a, ast.Starred) else a)
            return
        self._bind(target, it)

    def _params(self, func: ast.AST, top: bool) -> None:
        a = func.args  # type: ignore[attr-defined]
        pos = [*a.posonlyargs, *a.args]
        defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
        for p, d in [*zip(pos, defaults), *zip(a.kwonlyargs, a.kw_defaults)]:
            self.params.setdefault(p.arg, []).append((p, d, top))

    def _add(self, name: str, value: ast.AST) -> None:
        self.assigned.setdefault(name, []).append(value)

    def _bind(self, target: ast.AST, value: ast.AST) -> None:
        """A name bound from `value` or from its parts (unpacked, iterated): `value` stands for them all."""
        if isinstance(target, ast.Name):
            self._add(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for el in target.elts:
                self._bind(el.value if isinstance(el, ast.Starred) else el, value)

    # -- the abstract value ------------------------------------------------------------
    def may(self, e: ast.AST, depth: int = 0) -> tuple[bool, bool]:
        """(may depend on tensor data, surely static) for `e`; FunctionFacts.value over-approximated."""
        if depth > 40:
            return _DATA
        t = e.__class__
        if t is ast.Constant or t is ast.JoinedStr:
            return _STATIC
        if t is ast.Name:
            return self._name(e.id, depth)
        if t is ast.Attribute:
            return self._attribute(e, depth)
        if t is ast.Subscript:
            inner = self.may(e.value, depth + 1)
            return _STATIC if inner[1] else (_DATA if inner[0] else _NO)
        if t is ast.Call:
            return self._call(e, depth)
        if t is ast.Compare:
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops):
                return _STATIC if not any(isinstance(op, (ast.In, ast.NotIn)) for op in e.ops) else _NO
            return self._any([e.left, *e.comparators], depth)
        if t is ast.BinOp:
            return self._any([e.left, e.right], depth)
        if t is ast.UnaryOp:
            return self.may(e.operand, depth + 1)
        if t is ast.BoolOp:
            return self._any(e.values, depth)
        if t is ast.IfExp:
            return self._any([e.body, e.orelse], depth)
        if t is ast.NamedExpr:
            return self.may(e.value, depth + 1)
        return _NO

    def _any(self, parts: list, depth: int) -> tuple[bool, bool]:
        got = [self.may(p, depth + 1) for p in parts]
        return any(g[0] for g in got), all(g[1] for g in got)

    def _name(self, name: str, depth: int) -> tuple[bool, bool]:
        if name in ("True", "False", "None", "self", "cls"):
            return _STATIC
        if name in self.memo:
            return self.memo[name]
        if name in self.active:
            return _NO  # a cycle: what the name holds comes from its other bindings
        values = self.assigned.get(name)
        if values is None and name not in self.params:
            return _STATIC if name in self.g.imports else _NO
        self.active.add(name)
        try:
            dd = any(self.may(v, depth + 1)[0] for v in values or ())
        finally:
            self.active.discard(name)
        got = (dd or name in self.params and self._param(name), False)
        if not self.active:
            self.memo[name] = got
        return got

    def _param(self, name: str) -> bool:
        """FunctionFacts._param: a tensor annotation, a caller's value (no default), a `*_like(p)` use."""
        return any(self._one_param(name, p, default, top) for p, default, top in self.params[name])

    def _one_param(self, name: str, p: ast.arg, default: ast.AST | None, top: bool) -> bool:
        ann = p.annotation
        if ann is not None:
            inner = _optional_inner(ann)
            q = self.g.qualify(inner)
            if q & T.TENSOR_TYPES.keys():
                return not _number_or_bool(default)
            if isinstance(inner, ast.Name) and inner.id in ("int", "float", "bool", "str") and inner is ann:
                return False
        # what same-file callers hand in (facts._from_callers): a top-most def called by name or as `self.m(...)`
        return default is None and top and self.g.called(self.name) or name in self.like_args

    @property
    def like_args(self) -> set[str]:
        """Names handed first to a `*_like(...)` call in the def (FunctionFacts._used_as_tensor)."""
        got = self.__dict__.get("_like")
        if got is None:
            got = self._like = {c.args[0].id for c in self.nodes if c.__class__ is ast.Call and c.args
                                and c.args[0].__class__ is ast.Name and (dotted(c.func) or "").endswith("_like")}
        return got

    def _attribute(self, e: ast.Attribute, depth: int) -> tuple[bool, bool]:
        name = dotted(e)
        if e.attr in T.STATIC_ATTRS or name in T.CONFIG_ROOTS:
            return _STATIC
        if name is not None and (any(name.startswith(r + ".") for r in T.CONFIG_ROOTS) or self.g.qualify(e)):
            return _STATIC
        if e.attr in ("T", "mT", "H", "real", "imag"):
            return _DATA if self.may(e.value, depth + 1)[0] else _NO
        if name is not None and name.startswith("self.") and name.count(".") == 1:
            return _DATA if self.g.tensor_attr(e.attr) else _NO
        return _NO if not isinstance(e.value, ast.Call) else self._finfo(e)

    def _finfo(self, e: ast.Attribute) -> tuple[bool, bool]:
        q = self.g.qualify(e.value.func)  # type: ignore[attr-defined]
        return _STATIC if q and q <= {"torch.finfo", "torch.iinfo"} else _NO

    def _call(self, call: ast.Call, depth: int) -> tuple[bool, bool]:
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.g.def_names:
            return _DATA  # a same-file helper may return a tensor (FunctionFacts.callee_value)
        name = dotted(func)
        if name is not None and name.startswith("self.") and name.count(".") == 1 and (
                func.attr in self.g.def_names or func.attr in self.g.layers):  # type: ignore[attr-defined]
            return _DATA  # a method, or a layer (`self.proj(x)`)
        if isinstance(func, ast.Name) and func.id not in self.g.imports:
            if func.id in T.STATIC_BUILTINS:
                return _STATIC
            if func.id in ("max", "min") or func.id in T.DATA_BUILTINS:
                got = self._any([a.value if isinstance(a, ast.keyword) else a for a in call.args], depth)
                return (got[0], False)
            return _NO
        q = self.g.qualify(func)
        if any(x.startswith("torch.") and x not in T.STATIC_FUNCS for x in q):
            return _DATA
        if q and all(x.startswith("torch.") or x.split(".")[0] == "numpy" for x in q):
            return _STATIC if all(x in T.STATIC_FUNCS for x in q) else _NO
        if isinstance(func, ast.Attribute):
            m = func.attr
            if m in T.STATIC_METHODS:
                return _STATIC
            if m in T.DATA_METHODS:
                return _DATA
            recv = self.may(func.value, depth + 1)
            if recv[1]:
                return _STATIC if dotted(func.value) in T.CONFIG_ROOTS else _NO
            if m in T.REDUCTIONS or m in T.PREDICATES:
                return _DATA
            return _DATA if recv[0] else _NO
        return _NO


def _optional_inner(ann: ast.AST) -> ast.AST:
    """`X | None`, `None | X`, `Optional[X]` -> X (tensors._optional_inner)."""
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        for a, b in ((ann.left, ann.right), (ann.right, ann.left)):
            if isinstance(b, ast.Constant) and b.value is None:
                return a
    if isinstance(ann, ast.Subscript) and dotted(ann.value) in ("Optional", "typing.Optional") \
            and not isinstance(ann.slice, ast.Tuple):
        return ann.slice
    return ann


def _number_or_bool(node: ast.AST | None) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)) and not isinstance(node.value, complex)


class FileGate:
    """The file's facts the gate reads (imports, def names, `self.x` stores, loggers) and `may_report`.
    Read off the file's statements only: expressions are read per def, in `may_report`."""

    def __init__(self, tree: ast.Module, buffers: frozenset[str] = frozenset(),
                 disabled: frozenset[str] = frozenset(), source: bytes | None = None) -> None:
        """`buffers`, `disabled`: the project index's `ext.buffers` names and `ext.disabled` spellings;
        `source`: the file's bytes (None: read as if it called every def and named every RNN layer)."""
        self.source = source
        self.rnn = source is None or any(r in source for r in (b"LSTM", b"GRU", b"RNN"))
        self._called: dict[str, bool] = {}
        self.import_lines: list[int] = []  # the first line of every import statement (sorted after the walk)
        self.imports: dict[str, set[str]] = {}
        self.def_names: set[str] = set()
        self.layers: set[str] = set()  # `self.x = <a FLOAT_MODULES layer>(...)` anywhere (FunctionFacts._self_layer)
        self.tensors: set[str] = set()  # `self.x = nn.Parameter(...)`/`torch.zeros(...)`, a registered buffer
        self.assumed: set[tuple[str, str]] = set()  # ("buffer", attr): read as no tensor (see the module's doc)
        self.relative: set[str] = set()  # names bound by relative imports (`from ..layers import Block`)
        self.buffers = buffers
        self.ext_disabled = disabled
        self.disabled: set[str] = set()  # defs decorated with a `disable`, names bound to `disable(...)` (GM907)
        self.loggers: set[str] = set()  # names and attributes bound to a logger factory's call (GM202)
        self.rnn_attrs: set[str] = set()  # `self.x = ...LSTM(...)...` (GM919)
        self.classes: list[ast.ClassDef] = []
        self.casts: set[str] = set()  # `self.x = <Ctor>(...)`, an upper-case name but no parameter or buffer (GM914)
        self._defs: list[ast.AST] = []
        self._decorated: list[ast.AST] = []
        stores: list[ast.AST] = []
        self._inits: list[ast.AST] = []
        todo = list(tree.body)
        while todo:
            n = todo.pop()
            t = n.__class__
            if t is ast.Import or t is ast.ImportFrom:
                self._import(n)
                self.import_lines.append(n.lineno)
                continue
            if t in _DEFS:
                self.def_names.add(n.name)
                self._defs.append(n)
                if n.decorator_list:
                    self._decorated.append(n)
                if n.name in T.INIT_METHODS:
                    self._inits.append(n)
            elif t is ast.ClassDef:
                self.classes.append(n)
            elif t is ast.Assign or t is ast.AnnAssign:
                stores.append(n)
            elif t is ast.Expr and n.value.__class__ is ast.Call:
                self._registered(n.value)
            for f in BLOCK_FIELDS:
                block = getattr(n, f, None)
                if block:
                    for c in block:
                        if c.__class__ is ast.ExceptHandler or c.__class__ is ast.match_case:
                            todo.extend(c.body)
                        else:
                            todo.append(c)
        self.import_lines.sort()
        for n in stores:  # read with every import known: `from torch.nn import Linear as L` makes `L(...)` a layer
            self._store(n)
        self.disabled.update(d.name for d in self._decorated if any(
            "disable" in self._lasts(x.func if x.__class__ is ast.Call else x) for x in d.decorator_list))
        self.numpy = {k for k, v in self.imports.items() if any(t == "numpy" or t.startswith("numpy.") for t in v)}
        self.numpy_attrs: set[str] = set()
        self.numpy_defs: set[str] = set()
        self._numpy_done = False

    def _import(self, n: ast.AST) -> None:
        out = self.imports
        if n.__class__ is ast.ImportFrom and n.level:
            self.relative.update(a.asname or a.name for a in n.names)
        if n.__class__ is ast.Import:
            for a in n.names:
                top = a.name.split(".")[0]
                out.setdefault(a.asname or top, set()).add(a.name if a.asname else top)
        elif not n.level and n.module:
            for a in n.names:
                if a.name != "*":
                    out.setdefault(a.asname or a.name, set()).add(f"{n.module}.{a.name}")

    @staticmethod
    def _targets(tg: ast.AST) -> list[str]:
        """The names and attribute names a target binds."""
        names = []
        for x in ([tg] if tg.__class__ not in (ast.Tuple, ast.List, ast.Starred) else all_nodes(tg)):
            if x.__class__ is ast.Name:
                names.append(x.id)
            elif x.__class__ is ast.Attribute:
                names.append(x.attr)
        return names

    def _store(self, n: ast.AST) -> None:
        targets = n.targets if n.__class__ is ast.Assign else [n.target]
        names = [x for tg in targets for x in self._targets(tg)]
        v = n.value
        if v is None:
            return
        if v.__class__ is ast.Call:
            lasts = self._lasts(v.func)
            attrs = [tg.attr for tg in targets if tg.__class__ is ast.Attribute and tg.value.__class__ is ast.Name
                     and tg.value.id == "self"]
            if lasts & T.FLOAT_MODULES:
                self.layers.update(attrs)
            if "Parameter" in lasts or lasts & _NEW_OBJECTS:
                self.tensors.update(attrs)
            if any(x[:1].isupper() and x not in _NOT_LAYERS for x in lasts):
                self.casts.update(tg.attr for tg in targets if tg.__class__ is ast.Attribute)
            if "disable" in lasts:
                self.disabled.update(names)
            if lasts & _LOGGER_FACTORIES:
                self.loggers.update(names)
        if self.rnn and any(c.__class__ is ast.Call and self._lasts(c.func) & _RNNS for c in all_nodes(v)):
            self.rnn_attrs.update(names)

    def _lasts(self, func: ast.AST) -> set[str]:
        """The last name of `func` as written, and as each import may resolve it (`L` for `Linear as L`)."""
        name = dotted(func) or ""
        return {name.rsplit(".", 1)[-1], *(q.rsplit(".", 1)[-1] for q in self.qualify(func))}

    def _registered(self, call: ast.Call) -> None:
        """`self.register_buffer("x", ...)` / `register_parameter`: a tensor attribute (tensors._registered)."""
        f = call.func
        if f.__class__ is ast.Attribute and f.attr in ("register_buffer", "register_parameter"):
            self.tensors.update(a.value for a in [*call.args, *(k.value for k in call.keywords)]
                                if a.__class__ is ast.Constant and isinstance(a.value, str))

    def _numpy(self) -> None:
        """GM915's NumPy attributes (stored by an `__init__` that names NumPy) and the same-file defs
        that name NumPy, one of those attributes, or (to a fixpoint) call such a def."""
        self._numpy_done = True
        for init in self._inits:
            if _mentions(body_nodes(init), self.numpy, set(), set()):
                self.numpy_attrs.update(x.attr for x in body_nodes(init) if x.__class__ is ast.Attribute
                                        and not isinstance(x.ctx, ast.Load))
        calls: dict[str, set[str]] = {}
        for d in self._defs:
            nodes = body_nodes(d)
            if _mentions(nodes, self.numpy, self.numpy_attrs, set()):
                self.numpy_defs.add(d.name)
            else:
                calls.setdefault(d.name, set()).update(called(nodes))
        changed = True
        while changed:
            changed = False
            for name, names in calls.items():
                if name not in self.numpy_defs and names & self.numpy_defs:
                    self.numpy_defs.add(name)
                    changed = True

    def imports_in(self, node: ast.AST) -> bool:
        """An import statement lies in `node`'s lines (statements: one starting there is inside it)."""
        i = bisect.bisect_left(self.import_lines, node.lineno)  # type: ignore[attr-defined]
        return i < len(self.import_lines) and self.import_lines[i] <= node.end_lineno  # type: ignore[attr-defined]

    def called(self, name: str) -> bool:
        """The file's text calls `name(...)` or `self.name(...)` (not in `def name(`)."""
        if self.source is None:
            return True
        got = self._called.get(name)
        if got is None:
            n = re.escape(name.encode())
            got = self._called[name] = re.search(
                rb"(?<!def )(?<![\w.])" + n + rb"\s*\(|\bself\s*\.\s*" + n + rb"\s*\(", self.source) is not None
        return got

    def qualify(self, node: ast.AST) -> set[str]:
        """Every qualified name a Name/Attribute chain may resolve to through the file's imports."""
        name = dotted(node)
        if name is None:
            return set()
        head, _, rest = name.partition(".")
        return {f"{t}.{rest}" if rest else t for t in self.imports.get(head, ())}

    def tensor_attr(self, attr: str) -> bool:
        """`self.<attr>` may hold a tensor (FunctionFacts.value's module_attrs): stored from a parameter or
        a factory in this file, registered as a buffer, or by the index (`buffers`, another file's base)."""
        if attr in self.tensors or attr in self.buffers:
            return True
        self.assumed.add(("buffer", attr))
        return False

    # -- the sites ------------------------------------------------------------------
    def may_report(self, func: ast.AST, nodes: list) -> bool:
        """Whether some rule may report inside the top-most def `func` (its nested code included), whose
        body's nodes are `nodes`: a call a rule names, else a site whose expression may hold tensor data."""
        sites = []
        for n in nodes:
            t = n.__class__
            if t is ast.Call:
                if self._named_call(n):
                    return True
                sites.append(n)
            elif t in _TESTS:
                if t is ast.If and any(c.__class__ is ast.Call and "is_grad_enabled" in self._lasts(c.func)
                                       for c in all_nodes(n.test)):
                    return True  # GM101's own fallback, seen again (fixes/where/module_cond.py)
                sites.append(n)
            elif t in _YIELDS:
                return True  # GM912
            elif t is ast.withitem:
                if isinstance(n.context_expr, ast.Call) and self.qualify(n.context_expr.func) & _CONTEXTS:
                    return True  # GM913, GM920
            elif t is ast.Attribute:
                if n.attr == "requires_grad" and not isinstance(n.ctx, ast.Load):
                    return True  # GM916
                if n.attr in self.rnn_attrs and isinstance(n.value, ast.Name) and n.value.id == "self":
                    return True  # GM919
            elif t is ast.Subscript or t is ast.BoolOp or t is ast.UnaryOp and isinstance(n.op, ast.Not) \
                    or t is ast.BinOp and isinstance(n.op, ast.Mult):
                sites.append(n)
        if not sites:
            return False
        if self.numpy and any(n.__class__ in _TESTS or _conversion(n) for n in sites) and self._numpy_reach(nodes):
            return True  # GM915
        facts = _Facts(func, self, nodes)
        return any(self._value_site(n, facts) for n in sites)

    def _named_call(self, call: ast.Call) -> bool:
        """A call some rule reports by its name alone (GM2xx, GM901-903, GM905, GM907-911, GM914,
        GM916-918, GM921-923, GM303, and the names GM301/302 read as tensors)."""
        f = call.func
        if f.__class__ is ast.Attribute:
            a = f.attr
            if a in _METHODS and (a not in LOGGER_METHODS or a == "warn" or self._logger(f.value)):
                return True
            if a in _CASTS and f.value.__class__ is ast.Attribute and f.value.attr in self.casts \
                    and isinstance(f.value.value, ast.Name) and f.value.value.id == "self":
                return True  # GM914
            if a in self.disabled and isinstance(f.value, ast.Name) and f.value.id == "self":
                return True  # GM907
        elif f.__class__ is ast.Name:
            if f.id == "print" or f.id in self.disabled or f.id in _DYNAMIC:
                return True
        elif f.__class__ is ast.Call:
            return "disable" in self._lasts(f.func)  # `disable(f)(x)` (GM907)
        if any(k.arg == "requires_grad" for k in call.keywords):
            return True  # GM916
        q = self.qualify(f)
        if "torch.where" in q and len(call.args) + len(call.keywords) == 1:
            return True  # GM905: `torch.where(mask)`, the indices of a mask
        if q and any(x in _NAMED or x.split(".")[0] in _MODULES  # numpy: GM910, GM917, GM918
                     or x.rsplit(".", 1)[-1] in _PARAMETERS and x.startswith("torch.nn") for x in q):
            return True
        d = dotted(f)
        return d is not None and d in self.ext_disabled

    def _logger(self, recv: ast.AST) -> bool:
        """GM202's receivers (effects.LoggerFinder): a factory's call, a name with "log" in it or bound
        to a factory's call, `self.x`/`cls.x` so bound."""
        if recv.__class__ is ast.Call:
            return True
        name = recv.id if recv.__class__ is ast.Name else recv.attr if recv.__class__ is ast.Attribute else ""
        return "log" in name.lower() or name in self.loggers

    def _value_site(self, n: ast.AST, facts: _Facts) -> bool:
        """A site whose report needs a tensor (or data) value there (GM101-104, GM301-304, GM904-906)."""
        t = n.__class__
        if t is ast.Call:
            f = n.func
            args = [a.value if isinstance(a, ast.Starred) else a for a in n.args] + [k.value for k in n.keywords]
            if f.__class__ is ast.Name and f.id in ("int", "float", "bool", "slice", "max", "min"):
                return any(facts.may(a)[0] for a in args)  # GM904 (and data calls in tests), GM906
            if f.__class__ is ast.Attribute and f.attr in _SIZES or self.qualify(f) & _SIZE_FUNCS:
                return any(facts.may(a)[0] for a in args)  # GM906
            return False
        if t in _TESTS:
            return facts.may(n.test)[0]
        if t is ast.Subscript:
            return any(facts.may(e)[0] or _mask(e, facts) for e in _index(n.slice))  # GM905, GM906
        if t is ast.BoolOp:
            return any(facts.may(v)[0] for v in n.values)  # GM904
        if t is ast.UnaryOp:
            return facts.may(n.operand)[0]  # GM904
        return any(isinstance(s, (ast.List, ast.Tuple, ast.ListComp)) and facts.may(c)[0]
                   for s, c in ((n.left, n.right), (n.right, n.left)))  # GM906: `[h] * n`

    def _numpy_reach(self, nodes: list) -> bool:
        """GM915: the def names NumPy, a NumPy attribute of `self`, or a same-file def that does."""
        if not self._numpy_done:
            self._numpy()
        return _mentions(nodes, self.numpy, self.numpy_attrs, self.numpy_defs)


def all_nodes(node: ast.AST) -> list[ast.AST]:
    """`node` and every node below it: ast.walk's nodes, in another order, without its queue of generators."""
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


def body_nodes(func: ast.AST) -> list:
    """The nodes of a def's body (not of its decorators, defaults, annotations: they run where the def does)."""
    return [n for stmt in func.body for n in all_nodes(stmt)]  # type: ignore[attr-defined]


def called(nodes: list) -> set[str]:
    """Names of the defs `nodes` call by name or as `self.m(...)`."""
    out = set()
    for n in nodes:
        if n.__class__ is ast.Call:
            f = n.func
            if f.__class__ is ast.Name:
                out.add(f.id)
            elif f.__class__ is ast.Attribute and f.value.__class__ is ast.Name and f.value.id == "self":
                out.add(f.attr)
    return out


def _conversion(n: ast.AST) -> bool:
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("int", "float", "bool")


def _index(s: ast.AST):
    """The expressions of a subscript's index a rule reads: elements, slice bounds."""
    for e in s.elts if isinstance(s, ast.Tuple) else [s]:
        if isinstance(e, ast.Slice):
            yield from (b for b in (e.lower, e.upper, e.step) if b is not None)
        else:
            yield e.value if isinstance(e, ast.Starred) else e


def _mask(e: ast.AST, facts: _Facts, depth: int = 0) -> bool:
    """GM905's `_made_bool`: a `.bool()` call, `~m`, or a name some binding of which may be one."""
    while isinstance(e, ast.Subscript):
        e = e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Invert):
        return True
    if isinstance(e, ast.Call):
        return isinstance(e.func, ast.Attribute) and e.func.attr == "bool"
    if not isinstance(e, ast.Name) or depth > 4:
        return False
    return any(_mask(v, facts, depth + 1) for v in facts.assigned.get(e.id, ()))


def _mentions(nodes: list, names: set[str], attrs: set[str], defs: set[str]) -> bool:
    for n in nodes:
        if n.__class__ is ast.Name and n.id in names:
            return True
        if n.__class__ is ast.Attribute and n.value.__class__ is ast.Name and n.value.id == "self" and n.attr in attrs:
            return True
        if n.__class__ is ast.Call:
            f = n.func
            if f.__class__ is ast.Name and f.id in defs or f.__class__ is ast.Attribute and f.attr in defs \
                    and f.value.__class__ is ast.Name and f.value.id == "self":
                return True
    return False
