"""GM304 fix: an `assert` whose test reads a Python number out of a tensor (`.item()`, `int(t)`,
`float(t)`, `bool(t)`) -> eager keeps it, compiled code asserts on the tensor:

    if not torch.compiler.is_compiling():
        assert lengths.max().item() <= slen
    else:
        torch._assert_async(lengths.max() <= slen)

The compiled comparison gives what Python's gives (`t` is proved 0-d: `.item()` raises on more
elements, `_assert_async` under Inductor checks each one):
  - `t.item()` / `bool(t)` of an integer or bool tensor compared with an int (a literal or a size)
    compares the same integers as `t.long()` (an int8/uint8/int16/int32 tensor compared as it is
    would turn the int into its own dtype first: `int8 <= 200` wraps 200 to -56; xlm's
    `lengths.max().item() <= slen` with int8 lengths, found by an audit; uint64 values past 2**63
    are the one case `.long()` does not keep); of a floating tensor, `t.double()` is the exact value `.item()`
    returns (a float64), compared with a Python number as Python compares it (numbers up to 2**53,
    which every size is);
  - `float(t)` is `t.double()`; `int(t)` of a floating tensor is `t.double().trunc()` (truncation
    toward zero, as `int()`), of an integer one `t`;
  - a dtype not proved is decided while tracing: `(t.double() if t.is_floating_point() else t.long())`
    (a Python constant there); then the other side must be a proved int: an integer tensor
    compared with a Python float would be compared in float32.
"""
from __future__ import annotations

import libcst as cst

from .. import fastwalk
from ..analysis.bindings import dotted
from . import trap
from .fix import Refused
from .syntax import code

CONVERSIONS = {"int", "float", "bool"}


def conversion(tz: trap.Tensorize, node: cst.BaseExpression) -> tuple[str, cst.BaseExpression] | None:
    """("item"|"int"|"float"|"bool", the tensor) for a conversion of a tensor to a Python value."""
    if isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value == "item" and tz.facts.value(node.func.value).is_tensor:
        return "item", node.func.value
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in CONVERSIONS \
            and tz.b.qualify(node.func) is None and len(node.args) == 1 and not node.args[0].star \
            and node.args[0].keyword is None and tz.facts.value(node.args[0].value).is_tensor:
        return node.func.value, node.args[0].value
    return None


def has_conversion(tz: trap.Tensorize, test: cst.BaseExpression) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            if conversion(tz, n) is not None:
                found.append(n)

    fastwalk.visit(test, V())
    return bool(found)


def _int_proved(tz: trap.Tensorize, node: cst.BaseExpression) -> bool:
    inner = node.expression if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) else node
    if isinstance(inner, cst.Integer):
        return True
    return trap._size_derived(node, tz.facts) and (tz.facts.value(node).kind == "static" or tz.scalar_static(node))


def _number(tz: trap.Tensorize, node: cst.BaseExpression) -> bool:
    inner = node.expression if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) else node
    return isinstance(inner, (cst.Integer, cst.Float)) or _int_proved(tz, node)


def tensor_side(tz: trap.Tensorize, kind: str, t: cst.BaseExpression, other: cst.BaseExpression | None,
                checks: list[str]) -> str:
    """The tensor expression whose comparison with `other` gives Python's (see the module doc)."""
    if not tz.zero_dim(t):
        raise Refused(f"`{code(t)}` is not provably a single value (a 0-d tensor)")
    if not tz.pure(t):
        raise Refused(f"`{code(t)}` calls something not known to be free of side effects")
    dtype = tz.facts.value(t).dtype
    a = trap.atom(t)
    if tz.facts.assumed(t):  # tensor methods below: a NumPy value (traced by Dynamo) has none of them
        checks.append(f"isinstance({a}, {tz.name('torch.Tensor')})")
    if kind == "float":
        if other is not None and not _number(tz, other):
            name = dotted(other)
            if name is None:
                raise Refused(f"`{code(other)}` is not provably a Python number")
            checks.append(f"isinstance({name}, (int, float))")
        return f"{a}.double()"
    floating = f"{a}.double().trunc()" if kind == "int" else f"{a}.double()"
    if kind == "bool":
        if other is not None:
            raise Refused("`bool(...)` compared with a value")
        return a
    if other is None:  # truth of `t.item()` / `int(t)`: nonzero, as `_assert_async` tests it
        if kind == "item" or dtype in ("int", "bool"):
            return a
        return floating if dtype == "float" else f"({floating} if {a}.is_floating_point() else {a})"
    if not _int_proved(tz, other) and (dtype != "float" or not _number(tz, other)):
        name = dotted(other)
        if name is None:
            raise Refused(f"`{code(other)}` is not provably an int (an integer tensor compared with a float "
                          "would be compared in float32)")
        checks.append(f"isinstance({name}, int)")
    if dtype in ("int", "bool"):
        return f"{a}.long()"
    if dtype == "float":
        return floating
    return f"({floating} if {a}.is_floating_point() else {a}.long())"


def compiled_test(tz: trap.Tensorize, test: cst.BaseExpression) -> tuple[str, list[str]]:
    """(the test as a 0-d tensor expression, its conversions replaced; trace-time checks), or Refused."""
    checks: list[str] = []
    conv = conversion(tz, test)
    if conv is not None:
        return tensor_side(tz, conv[0], conv[1], None, checks), checks
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, right = test.left, test.comparisons[0].comparator
        op = code(test.comparisons[0].operator).strip()
        if op not in ("<", "<=", ">", ">=", "==", "!="):
            raise Refused(f"the comparison `{op}` is not one torch computes elementwise")
        lc, rc = conversion(tz, left), conversion(tz, right)
        if (lc is None) == (rc is None):
            raise Refused("both or neither side of the comparison convert a tensor")
        if lc is not None:
            return f"{tensor_side(tz, lc[0], lc[1], right, checks)} {op} {trap.operand(right)}", checks
        return f"{trap.operand(left)} {op} {tensor_side(tz, rc[0], rc[1], left, checks)}", checks
    raise Refused("the test is not a conversion or one comparison with one")
