"""Which calls show values: print, logging, warnings (and their loggers), and argument side effects.

The GM2xx rules report these calls; the GM1xx fixes keep them out of the compiled form.
"""
from __future__ import annotations

import libcst as cst

from .. import fastwalk
from .bindings import Bindings, dotted
from .tables import LEVELS, LOGGER_FACTORIES, LOGGER_METHODS  # noqa: F401  (effects.LOGGER_METHODS: rules read it here)
LOGGING_FUNCS = frozenset(f"logging.{name}" for name in LEVELS + ("log",))
WARN_FUNCS = frozenset({"warnings.warn", "warnings.warn_explicit"})
# Method calls that change the object they are called on: compiled code would skip them.
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault",
    "add", "discard", "send", "write", "popleft", "appendleft",
})


def is_logger_factory(expr: cst.BaseExpression, b: Bindings | None = None) -> bool:
    """`logging.getLogger(...)`, transformers' `logging.get_logger(...)`, `get_logger(...)`,
    vLLM's `init_logger(...)`, `logging.Logger(...)`."""
    if not isinstance(expr, cst.Call):
        return False
    name = dotted(expr.func)
    if name is not None and name.split(".")[-1] == "Logger":
        return b is not None and b.qualify(expr.func) == "logging.Logger"
    return name is not None and name.split(".")[-1] in LOGGER_FACTORIES


class _Assigns(cst.CSTVisitor):
    """`target = value` pairs (simple targets) in a function or class, nested defs excluded."""

    def __init__(self, root: cst.CSTNode) -> None:
        self.root = root
        self.pairs: list[tuple[str, cst.BaseExpression]] = []
        self.params: set[str] = set()
        self.depth = 0  # functions entered below a class root

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is self.root:
            self.params = {p.name.value for p in _all_params(node.params)}
            return True
        if isinstance(self.root, cst.ClassDef):  # methods are searched for `self.x = ...`
            self.depth += 1
            return True
        return False

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node is not self.root and isinstance(self.root, cst.ClassDef):
            self.depth -= 1

    def _add(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        name = dotted(target)
        if name is not None and (self.depth == 0 or name.startswith(("self.", "cls."))):
            self.pairs.append((name, value))

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return node is self.root

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._add(t.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._add(node.target, node.value)


def _all_params(p: cst.Parameters) -> list[cst.Param]:
    out = [*p.posonly_params, *p.params, *p.kwonly_params]
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out


def _only_factories(pairs: list[tuple[str, cst.BaseExpression]], name: str, b: Bindings) -> bool | None:
    """True/False when `name` is assigned only factories / something else; None if unassigned."""
    values = [v for n, v in pairs if n == name]
    if not values:
        return None
    return all(is_logger_factory(v, b) for v in values)


class LoggerFinder:
    """Decides whether `recv.method(...)` is a call on a logger, per rule instance (cached)."""

    def __init__(self, facts) -> None:
        self.facts = facts  # the module's (analysis.ModuleFacts); not the rule: a rule keeps its finder
        self._funcs: dict[cst.FunctionDef, _Assigns] = {}
        self._classes: dict[cst.ClassDef, _Assigns] = {}

    def _assigns(self, node: cst.CSTNode, cache: dict) -> _Assigns:
        if node not in cache:
            visitor = _Assigns(node)
            fastwalk.visit(node, visitor)
            cache[node] = visitor
        return cache[node]

    def is_logger(self, recv: cst.BaseExpression, func: cst.FunctionDef) -> bool:
        facts = self.facts
        b = facts.bindings
        if is_logger_factory(recv, b):
            return True
        if isinstance(recv, cst.Name):
            local = self._assigns(func, self._funcs)
            if recv.value in local.params:
                return False
            found = _only_factories(local.pairs, recv.value, b)
            if found is not None:
                return found
            value = facts.scope.index.module_aliases.get(recv.value)
            if value is not None:
                return is_logger_factory(value, b)
            return recv.value in facts.scope.ext.loggers  # another file's module-level logger, imported
        if isinstance(recv, cst.Attribute) and isinstance(recv.value, cst.Name) and recv.value.value in ("self", "cls"):
            cls = facts.scope.index.class_of.get(func)
            if cls is None:
                return False
            attr = recv.attr.value
            results = []
            for c in facts.scope.class_bases(cls):
                pairs = self._assigns(c, self._classes).pairs
                results += [_only_factories(pairs, f"self.{attr}", b), _only_factories(pairs, attr, b)]
            known = [r for r in results if r is not None]
            return bool(known) and all(known)
        return False


    def module_logger_name(self, recv: cst.BaseExpression, func: cst.FunctionDef) -> cst.BaseExpression | None:
        """For a module-level `logger = logging.getLogger(<name>)` (or transformers'/diffusers'
        `logging.get_logger`, which return the same standard `Logger`) not rebound in `func`:
        `<name>` when it is `__name__` or a string literal, else None."""
        if not isinstance(recv, cst.Name) or not self.is_logger(recv, func):
            return None
        local = self._assigns(func, self._funcs)
        if recv.value in local.params or any(n == recv.value for n, _ in local.pairs):
            return None
        value = self.facts.scope.index.module_aliases.get(recv.value)
        if not isinstance(value, cst.Call) or not _standard_factory(value.func, self.facts):
            return None
        if len(value.args) != 1 or value.args[0].keyword is not None or value.args[0].star:
            return None
        name = value.args[0].value
        if (isinstance(name, cst.Name) and name.value == "__name__") or isinstance(name, cst.SimpleString):
            return name
        return None


STANDARD_FACTORIES = frozenset({"logging.getLogger", "transformers.utils.logging.get_logger",
                                "transformers.logging.get_logger", "diffusers.utils.logging.get_logger"})


def _standard_factory(func: cst.BaseExpression, facts) -> bool:
    """A factory that returns `logging.getLogger(name)`: the stdlib's, or transformers'/diffusers'
    `get_logger`, also as `logging.get_logger` after their own `from ..utils import logging`."""
    if facts.bindings.qualify(func) in STANDARD_FACTORIES:
        return True
    if dotted(func) != "logging.get_logger":
        return False
    return any(isinstance(stmt, cst.SimpleStatementLine) and isinstance(imp := stmt.body[0], cst.ImportFrom)
               and imp.relative and imp.module is not None and dotted(imp.module) in ("utils", "utils.logging")
               and not isinstance(imp.names, cst.ImportStar)
               and any(a.name.value == "logging" and a.asname is None for a in imp.names)
               for stmt in facts.module.body)


# Calls an argument of a guarded print/log/warn may make: skipped under compile, they must change
# nothing (audit: sam2's `logging.info("loading", self.load_state_dict(ckpt))` loaded no weights).
# Builtins that only read (a consuming one, `list(it)`, only of something that is not a bare name,
# which could be an iterator the code reads later; `tuple(x.shape)` is kept):
READING_BUILTINS = frozenset({
    "len", "str", "repr", "ascii", "type", "isinstance", "issubclass", "hasattr", "getattr", "callable", "id",
    "hex", "oct", "bin", "abs", "round", "int", "float", "bool", "complex", "format", "chr", "ord", "divmod",
    "pow", "range", "slice",
})
CONSUMING_BUILTINS = frozenset({"list", "tuple", "set", "frozenset", "dict", "sorted", "sum", "min", "max",
                                "any", "all", "zip", "enumerate", "reversed"})
# Methods that read their object: tensors' (shape, dtype, reductions, copies), str's, dict's.
READING_METHODS = frozenset({
    "size", "dim", "numel", "nelement", "stride", "element_size", "get_device", "is_floating_point",
    "is_complex", "is_contiguous", "data_ptr", "storage_offset", "type", "item", "tolist", "numpy", "cpu",
    "detach", "clone", "contiguous", "float", "double", "half", "bfloat16", "long", "int", "bool", "to",
    "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "std", "var", "norm", "abs", "any",
    "all", "count_nonzero", "nonzero", "unique", "isnan", "isinf", "isfinite", "flatten", "view",
    "reshape", "squeeze", "unsqueeze", "transpose", "permute", "t", "eq", "ne", "lt", "le", "gt", "ge",
    "equal", "allclose", "square", "sqrt", "exp", "log", "round", "prod", "cumsum",
    "format", "join", "upper", "lower", "strip", "lstrip", "rstrip", "replace", "split", "rsplit",
    "startswith", "endswith", "capitalize", "title", "center", "ljust", "rjust", "zfill", "encode",
    "decode", "splitlines", "count", "find", "index", "keys", "values", "items", "get", "copy",
})
# Modules whose functions only compute (their random draws and state changes excluded below).
READING_MODULES = ("torch", "numpy", "math", "os.path", "time", "string", "json", "operator")
STATEFUL = frozenset({"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
                      "bernoulli", "multinomial", "normal", "poisson", "manual_seed", "seed", "set_rng_state",
                      "get_rng_state", "dropout", "save", "load", "sleep", "dump",
                      "set_printoptions", "set_default_dtype", "use_deterministic_algorithms"})
_STATEFUL_PARTS = {"random", "distributed", "cuda", "mps", "xpu", "_dynamo", "compiler", "backends", "hub"}


def side_effect(call: cst.Call, b: Bindings | None = None) -> str | None:
    """A short description of the first argument expression that may change state, if any: a call
    not known to only read (`self.load_state_dict(...)`, `self.bump()`), `:=`, `yield`, `await`."""
    for arg in call.args:
        for node in _walk(arg.value):
            if isinstance(node, cst.NamedExpr):
                return "`:=`"
            if isinstance(node, (cst.Yield, cst.Await)):
                return "`yield`" if isinstance(node, cst.Yield) else "`await`"
            if isinstance(node, cst.Call) and not _reads_only(node, b):
                name = dotted(node.func)
                if isinstance(node.func, cst.Attribute):
                    return f"`.{node.func.attr.value}()`" if name is None or len(name) > 40 else f"`{name}()`"
                return f"`{name}()`" if name is not None and len(name) <= 40 else "a call"
    return None


def _reads_only(node: cst.Call, b: Bindings | None) -> bool:
    """`node` is a call known to change nothing (its arguments are checked on their own)."""
    func = node.func
    q = b.qualify(func) if b is not None else None
    if q is not None:
        parts = q.split(".")
        return (any(q == m or q.startswith(m + ".") for m in READING_MODULES) and parts[-1] not in STATEFUL
                and not parts[-1].endswith("_") and not _STATEFUL_PARTS.intersection(parts[1:]))
    if isinstance(func, cst.Name):  # not an import (those are qualified above)
        if func.value in READING_BUILTINS:
            return True
        if func.value in CONSUMING_BUILTINS:
            positional = [a for a in node.args if a.keyword is None and not a.star]
            return len(positional) != 1 or not isinstance(positional[0].value, cst.Name)
        return False
    if isinstance(func, cst.Attribute):
        name = func.attr.value
        if name.endswith("_") and not name.startswith("_") or name in MUTATING_METHODS:
            return False
        return name in READING_METHODS
    return False


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)
