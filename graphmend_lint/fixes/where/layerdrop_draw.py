"""LayerDrop's draw: `torch.rand([])` (a name bound to it, or the call) compared below a probability.

Shared by layerdrop.py (the p <= 0.0 guard) and layerdrop_cond.py (the torch.cond form, p > 0.0).
"""
from __future__ import annotations

import libcst as cst

from ..syntax import flatten


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


def draw_below(rule, ff, atom: cst.BaseExpression, inclusive: bool = False) -> cst.BaseExpression | None:
    """The probability `p` of an atom `draw < p` (or `p > draw`; the draw a name or `torch.rand([])`
    itself), else None. `inclusive`: `draw <= p` and `p >= draw` too (wav2vec2-bert), which the
    p <= 0.0 guard cannot decide (a draw can be 0.0) but the torch.cond form keeps as written."""
    if not isinstance(atom, cst.Comparison) or len(atom.comparisons) != 1:
        return None
    op, right = atom.comparisons[0].operator, atom.comparisons[0].comparator
    below = (cst.LessThan, cst.LessThanEqual) if inclusive else cst.LessThan
    above = (cst.GreaterThan, cst.GreaterThanEqual) if inclusive else cst.GreaterThan
    if isinstance(op, below) and _drawn(rule, ff, atom.left) and probability(ff, right):
        return right
    if isinstance(op, above) and _drawn(rule, ff, right) and probability(ff, atom.left):
        return atom.left
    return None


def _drawn(rule, ff, e: cst.BaseExpression) -> bool:
    return is_draw(rule, ff, e) or rand_call(rule, e)


def draw_at_least(rule, ff, atom: cst.BaseExpression) -> cst.BaseExpression | None:
    """The probability `p` of an atom `draw >= p` (or `p <= draw`), which is True whenever
    p <= 0.0: torchvision's v2 transforms, `if torch.rand(1) >= self.p: return inpt`."""
    if not isinstance(atom, cst.Comparison) or len(atom.comparisons) != 1:
        return None
    op, right = atom.comparisons[0].operator, atom.comparisons[0].comparator
    if isinstance(op, cst.GreaterThanEqual) and _drawn(rule, ff, atom.left) and probability(ff, right):
        return right
    if isinstance(op, cst.LessThanEqual) and _drawn(rule, ff, right) and probability(ff, atom.left):
        return atom.left
    return None


def draw_part(rule, ff, test: cst.BaseExpression, inclusive: bool = False, at_least: bool = False):
    """(the `and` operands of `test`, the one that compares a draw below a probability, that
    probability) when exactly one does (`draw_below`; with `at_least`, at least it: `draw_at_least`),
    else None."""
    parts = flatten(test, cst.And)
    found = [(p, prob) for p in parts if (prob := draw_at_least(rule, ff, p) if at_least
                                          else draw_below(rule, ff, p, inclusive)) is not None]
    if len(found) != 1:
        return None
    return parts, *found[0]


def is_name(node: cst.BaseExpression | None, name: str) -> bool:
    """`node` is the bare name `name` (`False`, `True`)."""
    return isinstance(node, cst.Name) and node.value == name


def the_draw(rule, ff, atom: cst.Comparison, at_least: bool = False) -> cst.BaseExpression:
    """The draw of an atom `draw_below` accepts: its left side for `<`/`<=`, its right side for `>`/`>=`;
    with `at_least` (`draw_at_least`'s atoms), its left side for `>=`, its right side for `<=`."""
    first = cst.GreaterThanEqual if at_least else (cst.LessThan, cst.LessThanEqual)
    return atom.left if isinstance(atom.comparisons[0].operator, first) else atom.comparisons[0].comparator
