"""fastwalk gives exactly libcst's traversal, parent map and batched-visit results."""
from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from graphmend_lint import engine, fastwalk, settings
from graphmend_lint.analysis.filecontext import FileContext
from graphmend_lint.rules.base import FileContextProvider

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted(p for p in (ROOT / "tests/fixtures").rglob("*.py"))
SOURCES = sorted((ROOT / "graphmend_lint").rglob("*.py"))

# Syntax the fixtures may not have: every statement and expression kind libcst knows.
ZOO = '''
from __future__ import annotations
import a.b as c, d
from .x import (y as z, w)
from e import *
@dec(1)
@other.attr
async def f(a, /, b: int = 1, *args, c, d=2, **kw) -> "T":
    global g
    async with x as (p, q), y:
        await z
    async for i in aiter():
        yield i
    yield from gen()
    def inner():
        nonlocal a
    return [i async for i in x if i], {k: v for k, v in d.items()}, {s for s in t}, (g for g in h)
class C(B, metaclass=M):
    x: int = 1
    def m(self): return lambda a, *, b=1: (a, b)
try:
    pass
except* ValueError as e:
    raise RuntimeError("x") from e
try:
    a[1:2:3, ...] = b @ c
except (A, B):
    pass
else:
    del x
finally:
    assert x, "m"
while (n := n - 1) > 0 and not done or x is not None:
    break
else:
    continue_ = 1
for i, (j, *k) in enumerate(z):
    continue
match command:
    case [x, *rest] if x > 0:
        pass
    case {"k": v, **kw}:
        pass
    case Point(x=0, y=_) | None:
        pass
    case str() as s:
        pass
    case _:
        pass
s = f"{x!r:>{w}} {y=}" "implicit" + rb"raw" + u"u"
t = x if y else -z ** ~w // 2 % 3 << 1 >> 2 & 3 | 4 ^ 5
u = {**a, "b": 1}, [*b], print(*a, **k, sep=""), x[::], 1j, 0x1F, 1_000.5e-3
v += 1; v -= 1; v *= 2; v /= 2; v //= 2; v %= 2; v **= 2; v >>= 1; v <<= 1; v &= 1; v |= 1; v ^= 1; v @= m
with open(p) as fh, lock: pass
if a: pass
elif b: pass
else: pass
'''


class Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.events: list = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(("visit", id(node)))
        return not isinstance(node, cst.Lambda)  # a subtree skipped, as a visitor may do

    def on_leave(self, node: cst.CSTNode) -> None:
        self.events.append(("leave", id(node)))


def _modules():
    yield "zoo", cst.parse_module(ZOO)
    yield "crlf", cst.parse_module(ZOO.replace("\n", "\r\n"))
    yield "tabs", cst.parse_module("if x:\n\tif y:\n\t\tz = (1,\n\t\t\t2)\n")
    for p in FIXTURES + SOURCES:
        yield p.name, cst.parse_module(p.read_bytes())


@pytest.mark.parametrize("name,module", list(_modules()), ids=lambda v: v if isinstance(v, str) else "")
def test_same_events_and_parents(name, module):
    theirs, ours = Recorder(), Recorder()
    module.visit(theirs)
    fastwalk.visit(module, ours)
    assert ours.events == theirs.events
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    theirs = dict(wrapper.resolve(ParentNodeProvider))
    assert fastwalk.parents(module, every=True) == theirs
    assert fastwalk.parents(module) == {k: v for k, v in theirs.items() if type(k) not in fastwalk.TRIVIAL}
    assert fastwalk.positions(module) == dict(wrapper.resolve(PositionProvider))
    # what a walk skips holds nothing else: no rule hook is missed below a trivial node
    for child, parent in theirs.items():
        assert type(parent) not in fastwalk.TRIVIAL or type(child) in fastwalk.TRIVIAL, (parent, child)
        assert type(parent) not in fastwalk.LEAVES or type(child) in fastwalk.TRIVIAL, (parent, child)


class _Hooks(cst.CSTVisitor):
    def __init__(self) -> None:
        self.seen: list = []

    def visit_Name(self, node: cst.Name) -> None:
        self.seen.append(("name", id(node)))

    def leave_Call(self, node: cst.Call) -> None:
        self.seen.append(("call", id(node)))


class _CommentHooks(_Hooks):
    def visit_Comment(self, node: cst.Comment) -> None:
        self.seen.append(("comment", id(node)))


class _CallHooks(cst.CSTVisitor):  # no hook on a leaf: the walk skips names and numbers
    def __init__(self) -> None:
        self.seen: list = []

    def visit_Call(self, node: cst.Call) -> None:
        self.seen.append(("call", id(node)))

    def leave_Subscript(self, node: cst.Subscript) -> None:
        self.seen.append(("subscript", id(node)))


@pytest.mark.parametrize("hooks", [_Hooks, _CommentHooks, _CallHooks])
def test_class_hooks_see_what_libcst_shows_them(hooks):
    """A visitor's hooks get the same nodes in the same order; one that hooks a trivial class
    (comments) walks everything."""
    module = cst.parse_module(ZOO + "x = f(a)  # c\n# d\n")
    theirs, ours = hooks(), hooks()
    module.visit(theirs)
    fastwalk.visit(module, ours)
    assert ours.seen == theirs.seen and len(ours.seen) > (5 if hooks is _CallHooks else 50)
    assert any(kind == "comment" for kind, _ in ours.seen) is (hooks is _CommentHooks)


def test_every_node_class_has_a_readable_order():
    classes = [c for c in vars(cst).values() if isinstance(c, type) and issubclass(c, cst.CSTNode)
               and not getattr(c, "__abstractmethods__", None)]
    assert len(classes) > 150
    assert [c.__name__ for c in classes if fastwalk.order(c) is None] == []


def test_attribute_hooks_fall_back_to_libcst():
    seen: list[str] = []

    class V(cst.CSTVisitor):
        def visit_Call_func(self, node: cst.Call) -> None:
            seen.append("func")

    fastwalk.visit(cst.parse_module("f(g(x))\n"), V())
    assert seen == ["func", "func"]


def _fix_code(rep) -> str | None:
    if isinstance(rep, cst.FlattenSentinel):
        return "|".join(_fix_code(n) for n in rep.nodes)
    return cst.Module([]).code_for_node(rep) if isinstance(rep, cst.CSTNode) else repr(rep)


def test_batched_rules_find_what_metadata_wrapper_finds():
    s = settings.Settings(can_add_imports=True)
    for p in FIXTURES:
        module = cst.parse_module(p.read_bytes())
        instances = [r() for r in engine.selected_rules(s)]
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # the rules' context as Fixit gets it, with `s`
        wrapper._metadata[FileContextProvider] = {module: FileContext(module, s)}
        wrapper.visit_batched(instances)
        theirs = sorted((f.line, f.col, f.end_line, f.end_col, f.code, f.message, f.safety, f.fix_range,
                         _fix_code(f.replacement)) for r in instances for f in r.findings)
        ours = sorted((f.line, f.col, f.end_line, f.end_col, f.code, f.message, f.safety, f.fix_range,
                       _fix_code(f.replacement)) for f in engine.lint_module(module, s))
        assert ours == theirs, p


class _RebuildAll(cst.CSTTransformer):
    """engine.apply_fixes before it rebuilt only the nodes above a replaced one."""

    def __init__(self, replacements: dict) -> None:
        self.replacements = replacements

    def on_visit(self, node: cst.CSTNode) -> bool:
        return node not in self.replacements

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
        return self.replacements.get(original, updated)


def test_apply_fixes_rebuilds_only_the_path_to_the_fix():
    """Same code as libcst rebuilding every node, for each fix alone and for all of a file's fixes."""
    s = settings.Settings(unsafe_fixes=True)
    fixed = 0
    for p in FIXTURES:
        try:
            module = cst.parse_module(p.read_bytes())
        except cst.ParserSyntaxError:
            continue
        fixes = [f for f in engine.lint_module(module, s)
                 if f.replacement is not None and not f.needs_torch_import and not f.imports]  # no import to add
        for group in [*([f] for f in fixes), fixes[:]] if fixes else []:
            want = module.visit(_RebuildAll({f.node: f.replacement for f in group})).code
            assert engine.apply_fixes(module, group).code == want, p
            fixed += 1
    assert fixed > 30


ODD = '''# header comment

@dec  # trailing
# between decorators
@ other . attr(1,
    2)

async def f(): return 1
x = 1; y = 2;
class A: pass
class B(A):
    """doc"""
    # comment before a method
    @property
    def p(self): return 1; z = 3
    class Inner:
        def g(self):
            pass
      # odd comment
    q = \\
        4
if x: y = 1
# footer
'''


def _statement_modules():
    yield "odd", ODD
    yield "odd-cr", ODD.replace("\n", "\r")
    yield "zoo", ZOO
    for p in FIXTURES + SOURCES:
        yield p.name, p.read_text()


@pytest.mark.parametrize("name,source", list(_statement_modules()), ids=lambda v: v if len(v) < 80 else "")
def test_positions_one_statement_at_a_time_equal_libcst(name, source):
    """Positions computed per statement (with the source) equal libcst's for every node, and only
    nodes outside every statement (the module's header and footer) need the whole module's code."""
    module = cst.parse_module(source)
    expected = dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
    up = fastwalk.parents(module)
    lazy = fastwalk.LazyPositions(module, up, source)
    outside = {n for n in up if up[n] is module and not isinstance(n, cst.BaseStatement)}
    inside = [n for n in up if not any(a in outside for a in _ancestors(n, up, module))]
    assert {n: lazy[n] for n in inside} == {n: expected[n] for n in inside}
    assert lazy._map is None  # no whole-module codegen was needed
    assert {n: lazy[n] for n in expected} == expected
    if name.startswith("odd"):
        assert len(lazy._units) >= 8  # methods of top-level classes are units of their own


def _ancestors(node, up, module):
    while node is not module:
        yield node
        node = up[node]


def test_a_statement_found_elsewhere_than_its_code_falls_back_to_the_whole_module():
    """The line Python's ast gives is checked against the statement's own code: where the source
    there is not the statement's code, the whole module's code gives the positions."""
    module = cst.parse_module("x = 1\nclass A:\n    def f(self):\n        return 2\n")
    up = fastwalk.parents(module)
    lazy = fastwalk.LazyPositions(module, up, "x = 1\nclass A:\n    def f(self):\n        return (3)\n")
    expected = dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
    ret = next(n for n in up if isinstance(n, cst.Return))
    assert lazy[ret] == expected[ret] and lazy[ret].start.line == 4
    assert lazy._map is not None  # computed from the whole module


def test_a_statement_of_a_method_is_its_own_unit():
    """A node in a method's body needs the code of its own statement only, not the method's."""
    source = ("import torch\n\n\nclass A:\n    def f(self, x):\n        y = x + 1\n        if y.sum() > 0:\n"
              "            y = y * 2\n        return y.item()\n\n\ndef g(x):\n    z = x\n    return z.tolist()\n")
    module = cst.parse_module(source)
    up = fastwalk.parents(module)
    lazy = fastwalk.LazyPositions(module, up, source)
    expected = dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
    calls = [n for n in up if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)]
    assert [lazy[c] for c in calls] == [expected[c] for c in calls] and len(calls) == 3
    assert lazy._map is None
    assert all(isinstance(u, (cst.SimpleStatementLine, cst.If)) for u in lazy._units)  # no def, no class
