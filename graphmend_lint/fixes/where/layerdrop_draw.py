"""LayerDrop's draw: `torch.rand([])` (a name bound to it, or the call) compared below a probability.

Shared by layerdrop.py (the p <= 0.0 guard) and layerdrop_cond.py (the torch.cond form, p > 0.0).
"""
from __future__ import annotations

import libcst as cst


def is_draw(rule, ff, node: cst.BaseExpression) -> bool:
    """`node` is a name bound once in the function, to `torch.rand([])` (one element, one call)."""
    if not isinstance(node, cst.Name) or node.value in ff.params:
        return False
    values = ff.assigned.get(node.value, [])
    return bool(values) and all(rand_call(rule, v) for v in values)


def rand_call(rule, call) -> bool:
    if not isinstance(call, cst.Call) or rule.facts.bindings.qualify(call.func) != "torch.rand":
        return False
    if len(call.args) != 1 or call.args[0].keyword:
        return False
    size = call.args[0].value
    return isinstance(size, (cst.List, cst.Tuple)) and not size.elements or \
        isinstance(size, cst.Integer) and size.value == "1"


def probability(ff, node: cst.BaseExpression) -> bool:
    """A name or attribute chain that is not a tensor (`self.layerdrop`, `self.config.layerdrop`)."""
    probe = node
    while isinstance(probe, cst.Attribute):
        probe = probe.value
    return isinstance(probe, cst.Name) and not ff.value(node).is_tensor


def draw_below(rule, ff, atom: cst.BaseExpression) -> cst.BaseExpression | None:
    """The probability `p` of an atom `draw < p` (or `p > draw`; the draw a name or `torch.rand([])`
    itself), else None."""
    if not isinstance(atom, cst.Comparison) or len(atom.comparisons) != 1:
        return None
    op, right = atom.comparisons[0].operator, atom.comparisons[0].comparator

    def drawn(e):
        return is_draw(rule, ff, e) or rand_call(rule, e)

    if isinstance(op, cst.LessThan) and drawn(atom.left) and probability(ff, right):
        return right
    if isinstance(op, cst.GreaterThan) and drawn(right) and probability(ff, atom.left):
        return atom.left
    return None


def the_draw(rule, ff, atom: cst.Comparison) -> cst.BaseExpression:
    """The draw of an atom `draw_below` accepts: its left side for `<`, its right side for `>`."""
    return atom.left if isinstance(atom.comparisons[0].operator, cst.LessThan) else atom.comparisons[0].comparator
