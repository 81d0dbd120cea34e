"""A read-only libcst traversal that skips libcst's node rebuilding.

`libcst.CSTNode.visit` rebuilds every node it passes (`_visit_and_replace_children`),
even for a read-only `CSTVisitor`; that is most of the cost of a lint run. `visit`
here calls the same `on_visit`/`on_leave` hooks in the same order without rebuilding.
The child order of each node class is read once from libcst's own
`_visit_and_replace_children` source, so it follows the installed libcst.
Visitors with attribute hooks (`visit_Call_func`), or node classes whose order cannot
be read, fall back to libcst's own traversal. tests/test_speed_walk.py compares
the event sequences with libcst's on real files.
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap
import weakref
from typing import Callable

import libcst as cst
from libcst._batched_visitor import _BatchedCSTVisitor
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from .positions import LazyPositions, positions  # noqa: F401  (fastwalk's API)

_VISITS = {"visit_required", "visit_optional", "visit_sentinel", "visit_iterable", "visit_sequence",
           "visit_body_iterable", "visit_body_sequence"}
_ATTR_HOOK = re.compile(r"^(visit|leave)_[A-Z][A-Za-z]*_[a-z_]+$")
_orders: dict[type, tuple[str, ...] | None] = {}


def _read_order(cls: type) -> tuple[str, ...] | None:
    """Field names in the order libcst visits them, or None when the source is not the usual shape."""
    try:
        src = textwrap.dedent(inspect.getsource(cls._visit_and_replace_children))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError):
        return None
    calls = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            name = n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", None)
            if name in _VISITS:
                if len(n.args) < 2 or not isinstance(n.args[1], ast.Constant):
                    return None
                calls.append((n.lineno, n.col_offset, n.args[1].value))
            elif name == "visit":  # a direct `child.visit(visitor)`: not the usual shape
                return None
    fields: list[str] = []
    for _, _, f in sorted(calls):
        if f not in fields:
            fields.append(f)
    return tuple(fields)


def order(cls: type) -> tuple[str, ...] | None:
    if cls not in _orders:
        _orders[cls] = _read_order(cls)
    return _orders[cls]


def _has_attribute_hooks(visitor: object) -> bool:
    methods = getattr(visitor, "visitor_methods", None)  # libcst's batched visitor
    if isinstance(methods, dict):
        return any(_ATTR_HOOK.match(n) for n in methods)
    for klass in type(visitor).__mro__:  # libcst's own classes only define empty hooks
        if not klass.__module__.startswith("libcst") and any(
                _ATTR_HOOK.match(n) or n in ("on_visit_attribute", "on_leave_attribute") for n in vars(klass)):
            return True
    return False


_MISSING = object()
_is_node: dict[type, bool] = {}


def _trivial() -> frozenset[type]:
    ops = (cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp)
    return frozenset({
        cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.Newline, cst.EmptyLine,
        cst.Comment, cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual, cst.LeftParen, cst.RightParen,
        cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.ImportStar,
        cst.Asynchronous,
        *(c for c in vars(cst).values() if isinstance(c, type) and issubclass(c, ops) and c not in ops)})


# Node classes that hold only whitespace, comments and tokens (about two thirds of a module's nodes):
# a walk for hooks on other classes skips them (tests/test_speed_walk.py checks what they hold).
TRIVIAL = _trivial()
_TRIVIAL_NAMES = tuple(c.__name__ for c in TRIVIAL)


# Leaves: nodes whose children are all TRIVIAL (parentheses and whitespace). A walk skips the ones no
# visitor hooks, with TRIVIAL (names and numbers are about half of what is left to walk).
LEAVES = frozenset({cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis,
                    cst.FormattedStringText})


def _skip(has_hook: Callable[[str], bool]) -> frozenset[type]:
    """TRIVIAL and the unhooked LEAVES, unless a visitor hooks a TRIVIAL class (a comment, a
    comma...): then nothing."""
    if any(has_hook(n) for n in _TRIVIAL_NAMES):
        return frozenset()
    return TRIVIAL | {c for c in LEAVES if not has_hook(c.__name__)}


def _walk(root: cst.CSTNode, on_visit: Callable, on_leave: Callable, visitor: cst.CSTVisitor,
          skip: frozenset[type] = frozenset()) -> None:
    """Visit `root`'s subtree in libcst's order; nodes of the classes in `skip` are not visited."""
    orders, is_node = _orders, _is_node

    def walk(node: cst.CSTNode) -> None:
        fields = orders.get(node.__class__, _MISSING)
        if fields is _MISSING:
            fields = order(node.__class__)
        if fields is None:
            node.visit(visitor)  # libcst's own traversal for this subtree
            return
        if on_visit(node):
            for f in fields:
                v = getattr(node, f)
                t = v.__class__
                if t is tuple or t is list:
                    for c in v:
                        if c.__class__ not in skip:
                            walk(c)
                elif t not in skip:
                    known = is_node.get(t)
                    if known is None:
                        known = is_node[t] = issubclass(t, cst.CSTNode)
                    if known:
                        walk(v)
        on_leave(node)

    try:
        walk(root)
    finally:
        walk = None  # noqa: F841 - `walk` refers to itself: a cycle that would keep the visitor's data


def _hook(visitor: cst.CSTVisitor, name: str) -> Callable | None:
    fn = getattr(visitor, name, None)
    return None if fn is None or getattr(fn, "_is_no_op", False) else fn  # libcst's empty stubs


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """`node.visit(visitor)` for a read-only CSTVisitor, without rebuilding nodes."""
    if not isinstance(visitor, cst.CSTVisitor) or _has_attribute_hooks(visitor):
        node.visit(visitor)
        return
    cls = type(visitor)
    if cls.on_visit is not cst.CSTVisitor.on_visit or cls.on_leave is not cst.CSTVisitor.on_leave:
        _walk(node, visitor.on_visit, visitor.on_leave, visitor)
        return
    # CSTVisitor.on_visit/on_leave look up `visit_<Class>` per node; look up once per class instead
    skip = _skips.get(cls)
    if skip is None:
        skip = _skips[cls] = _skip(lambda n: bool(_hook(visitor, "visit_" + n) or _hook(visitor, "leave_" + n)))
    visits: dict[type, Callable | None] = {}
    leaves: dict[type, Callable | None] = {}

    def on_visit(n: cst.CSTNode) -> bool:
        t = n.__class__
        fn = visits.get(t, _MISSING)
        if fn is _MISSING:
            fn = visits[t] = _hook(visitor, "visit_" + t.__name__)
        return fn is None or fn(n) is not False

    def on_leave(n: cst.CSTNode) -> None:
        t = n.__class__
        fn = leaves.get(t, _MISSING)
        if fn is _MISSING:
            fn = leaves[t] = _hook(visitor, "leave_" + t.__name__)
        if fn is not None:
            fn(n)

    _walk(node, on_visit, on_leave, visitor, skip)


# weak: many visitors are classes made per call (they would all be kept, with what their methods hold)
_skips: "weakref.WeakKeyDictionary[type, frozenset[type]]" = weakref.WeakKeyDictionary()


class _Parents(cst.CSTVisitor):
    """child -> parent of the nodes walked; a module-level class, so the map it fills is freed with
    the tree (a class made per call is a cycle that would hold both until the collector runs)."""

    def __init__(self) -> None:
        self.out: dict[cst.CSTNode, cst.CSTNode] = {}
        self.stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.out[node] = self.stack[-1]
        self.stack.append(node)
        return True

    def on_leave(self, node: cst.CSTNode) -> None:
        self.stack.pop()


def parents(module: cst.Module, every: bool = False) -> dict[cst.CSTNode, cst.CSTNode]:
    """libcst's ParentNodeProvider mapping (child -> parent) for every node but the TRIVIAL ones
    (none of which holds another kind of node); `every`: the whole mapping. Read-only.
    A lint computes it once per module: its file context keeps it (analysis/filecontext.py)."""
    p = _Parents()
    _walk(module, p.on_visit, p.on_leave, p, frozenset() if every else TRIVIAL)
    return p.out


_visitor_names: dict[type, list[str]] = {}


def _visitor_methods(v: object) -> dict[str, Callable]:
    """What libcst's `get_visitors()` returns, with the (slow) member scan done once per class."""
    names = _visitor_names.get(type(v))
    if names is None:
        names = _visitor_names[type(v)] = [
            name for name, _ in inspect.getmembers(v, lambda m: inspect.ismethod(m) and (
                m.__name__.startswith("visit_") or m.__name__.startswith("leave_"))
                and not getattr(m, "_is_no_op", False))]
    return {name: getattr(v, name) for name in names}


def visit_batched(module: cst.Module, visitors: list, metadata: dict | None = None,
                  skip: frozenset = frozenset()) -> None:
    """`MetadataWrapper(module).visit_batched(visitors)` with cheaper metadata and dispatch.

    `metadata`: provider -> its mapping for this module, computed by the caller (the engine hands
    in parents, positions and the file context); the providers it lacks are resolved by libcst.
    Parents default to the fast walk's, positions are computed only when asked for.
    Visitors that use attribute hooks take libcst's traversal (with the same metadata).
    `skip`: nodes not visited, nor anything below them (defs no rule reports in: skeleton.lean).
    """
    deps = set().union(*(v.get_inherited_dependencies() for v in visitors)) if visitors else set()
    methods: dict[str, list[Callable]] = {}
    for v in visitors:
        for name, fn in _visitor_methods(v).items():
            methods.setdefault(name, []).append(fn)
    given = dict(metadata or {})
    for d in deps:  # provider.py: data only under Fixit; our engine hands in the file context
        if getattr(d, "ONLY_UNDER_FIXIT", False) and d not in given:
            given[d] = {}
    if ParentNodeProvider in deps and ParentNodeProvider not in given:
        given[ParentNodeProvider] = parents(module)
    if PositionProvider in deps and PositionProvider not in given:
        given[PositionProvider] = LazyPositions(module, given.get(ParentNodeProvider), None)
    missing = deps - given.keys()
    if missing:
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        given.update(wrapper.resolve_many(missing))
    for v in visitors:
        v.metadata = {k: given[k] for k in v.get_inherited_dependencies()}
    if any(_ATTR_HOOK.match(n) for n in methods):  # libcst's traversal: every node (`skip` unused)
        try:
            module.visit(_BatchedCSTVisitor(methods))
        finally:
            for v in visitors:
                v.metadata = {}
        return
    on_visit_of: dict[type, list[Callable]] = {}
    on_leave_of: dict[type, list[Callable]] = {}

    def on_visit(node: cst.CSTNode) -> bool:
        if skip and node in skip:
            return False
        fns = on_visit_of.get(node.__class__)
        if fns is None:
            fns = on_visit_of[node.__class__] = methods.get(f"visit_{node.__class__.__name__}", [])
        for fn in fns:
            fn(node)
        return True  # like libcst's batched visitor: children are always visited

    def on_leave(node: cst.CSTNode) -> None:
        if skip and node in skip:
            return
        fns = on_leave_of.get(node.__class__)
        if fns is None:
            fns = on_leave_of[node.__class__] = methods.get(f"leave_{node.__class__.__name__}", [])
        for fn in fns:
            fn(node)

    try:
        _walk(module, on_visit, on_leave, _BatchedCSTVisitor(methods),
              _skip(lambda n: f"visit_{n}" in methods or f"leave_{n}" in methods))
    finally:
        for v in visitors:
            v.metadata = {}
