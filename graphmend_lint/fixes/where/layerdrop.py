"""LayerDrop: `if <static> and dropout_probability < self.layerdrop:` with `dropout_probability = torch.rand([])`.

A draw of `torch.rand` lies in [0, 1), so `draw < p` is False whenever p <= 0.0, the default of
every config that has a layerdrop. While Dynamo traces, `self.layerdrop` is a Python constant, so

    if <static> and not (torch.compiler.is_compiling() and self.layerdrop <= 0.0) and draw < self.layerdrop:

is decided at trace time when p <= 0.0 (no graph break), and is the original test otherwise, in eager
always. `draw <= p` and `draw > p` are not rewritten: a draw can be exactly 0.0, so their outcome at
p = 0.0 is not known.

The random stream: the guard must not skip the draw, or every later random number (dropout masks,
random transforms) shifts. A draw whose value is no longer used is dropped by AOTAutograd
(`aot_eager`, inductor without `fallback_random`: measured on torch 2.13, the next `torch.rand`
after it differs), so the guard *uses* it, in a check that always holds and that no pass removes
(`aten._assert_async.msg` is side-effectful):

    not (is_compiling() and p <= 0.0 and torch._assert_async(draw < 1.0, "...") is None) and draw < p

With an inline draw (`if torch.rand(1) < self.p:`) the draw is written in the guard too; each path
(eager; compiled with p <= 0.0; compiled with p > 0.0) still draws exactly once, in the same place.
"""
from __future__ import annotations

import enum

import libcst as cst
from libcst.metadata import PositionProvider

from ... import fastwalk
from ...analysis import context
from ..fix import Elsewhere, Fix, NoFix
from ..syntax import code, flatten
from . import layerdrop_cond
from .layerdrop_draw import draw_at_least, draw_part, is_name, the_draw
from .layerdrop_noop import default_note, no_fix_reason


def guarded(rule, ff, test: cst.BaseExpression) -> bool:
    """A conjunct `not (is_compiling() ...)` comes before every tensor conjunct: under compile the
    test stops there (`not is_compiling() and ...`), or it is a LayerDrop fix applied before."""
    for part in flatten(test, cst.And):
        if isinstance(part, cst.UnaryOperation) and isinstance(part.operator, cst.Not):
            head = flatten(part.expression, cst.And)[0]
            if context.is_compiling_check(head, rule.facts.bindings):
                return True
        if isinstance(part, cst.BooleanOperation) and isinstance(part.operator, cst.Or) and \
                draw_at_least(rule, ff, part.right) is not None:  # the `draw >= p` fix
            if context.is_compiling_check(flatten(part.left, cst.And)[0], rule.facts.bindings):
                return True
        if ff.value(part).kind != "static":
            return False
    return False


KEEP = "keeps the draw of torch.rand"  # the message of the check that keeps a draw under compile


def _keep_guard(rule, ff, atom: cst.Comparison, prob: str, at_least: bool = False) -> tuple[str, bool]:
    """`is_compiling() and p <= 0.0 and torch._assert_async(draw < 1.0, KEEP) is None` (True only while
    tracing with p <= 0.0, and it uses the draw), and whether `import torch` must be added."""
    is_compiling, needs = rule.spell("torch.compiler.is_compiling")
    keep, needs_keep = rule.spell("torch._assert_async")
    draw = code(the_draw(rule, ff, atom, at_least))
    return f"{is_compiling}() and {prob} <= 0.0 and {keep}({draw} < 1.0, \"{KEEP}\") is None", needs or needs_keep


def _static_besides(ff, parts: list, atom: cst.BaseExpression) -> bool:
    """Every `and` operand but the draw's comparison is static (another tensor test keeps the break)."""
    return all(ff.value(p).kind == "static" for p in parts if p is not atom)


def rewrite(rule, ff, test: cst.BaseExpression) -> tuple[cst.BaseExpression, str, bool] | None:
    """The test with the trace-time guard before its draw comparison, the probability's source, and
    whether `import torch` must be added."""
    got = draw_part(rule, ff, test)
    if got is None or not _static_besides(ff, got[0], got[1]):
        return None
    parts, atom, prob_node = got
    prob = code(prob_node)
    guard, needs = _keep_guard(rule, ff, atom, prob)
    texts = [code(p) for p in parts]
    texts.insert(next(i for i, p in enumerate(parts) if p is atom), f"not ({guard})")
    return cst.parse_expression(" and ".join(texts)), prob, needs


def rewrite_at_least(rule, ff, test: cst.BaseExpression) -> tuple[cst.BaseExpression, str, bool] | None:
    """`draw >= p` (True whenever p <= 0.0): `(is_compiling() and p <= 0.0 and <keep the draw>) or
    draw >= p`, with the same parts as `rewrite`; each path still draws exactly once."""
    got = draw_part(rule, ff, test, at_least=True)
    if got is None or not _static_besides(ff, got[0], got[1]):
        return None
    parts, atom, prob_node = got
    prob = code(prob_node)
    guard, needs = _keep_guard(rule, ff, atom, prob, at_least=True)
    either = f"({guard}) or {code(atom)}"
    texts = [(f"({either})" if len(parts) > 1 else either) if p is atom else code(p) for p in parts]
    return cst.parse_expression(" and ".join(texts)), prob, needs


class Done(enum.Enum):
    FIXED = "fixed already"  # the test is decided while tracing when the probability is 0.0


def fix(rule, node: cst.If | cst.IfExp, func: cst.FunctionDef) -> Fix | NoFix | Elsewhere | Done | None:
    """The LayerDrop fix of `node` when its test has that form: a `Fix`, an `Elsewhere` (the fix is
    at the binding the test reads), Done.FIXED (nothing to report), or None when it has not that form."""
    if isinstance(node, cst.If) and isinstance(node.orelse, cst.If):
        return None  # an elif chain: later tests would need the same care
    if guarded(rule, rule.facts.function(func), node.test):
        return Done.FIXED
    got = rewrite(rule, rule.facts.function(func), node.test)
    if got is None:
        at_least = rewrite_at_least(rule, rule.facts.function(func), node.test)
        if at_least is not None:
            return _fix_at_least(rule, node, *at_least)
        return _fix_binding(rule, node, func)
    test, prob, needs = got
    noop = no_fix_reason(rule, node, node.test, prob)
    if noop is not None:  # p > 0.0 here: the unsafe torch.cond form, where the loop body has its shape
        return layerdrop_cond.fix(rule, node, func) or NoFix(noop + layerdrop_cond.not_offered(rule, node))
    return Fix(node.with_changes(test=test), title=message(prob) + default_note(rule, node, prob),
               needs_torch_import=needs)


def _fix_at_least(rule, node: cst.If | cst.IfExp, test: cst.BaseExpression, prob: str, needs: bool) -> Fix | NoFix:
    noop = no_fix_reason(rule, node, node.test, prob)
    if noop is not None:
        return NoFix(noop)
    title = (f"fix: while tracing, `{prob} <= 0.0` (LayerDrop's default, or a random transform switched off) decides the test, True, as a draw of "
             "torch.rand is never below 0.0 (the draw is still made, and kept, so later random numbers are "
             f"unchanged); eager runs the test unchanged. With `{prob}` > 0.0 the graph still breaks here: "
             "the draw decides on every call")
    return Fix(node.with_changes(test=test), title=title + default_note(rule, node, prob), needs_torch_import=needs)


def message(prob: str) -> str:
    return (f"fix: while tracing, `{prob} <= 0.0` (LayerDrop's default, or a random transform switched off) decides the test, as a draw of torch.rand "
            f"is never below 0.0 (the draw is still made, and kept, so later random numbers are unchanged); "
            f"eager runs the test unchanged. With `{prob}` > 0.0 the graph still breaks "
            "here: the draw decides on every call which layers run")


def _tested_names(rule, ff, test: cst.BaseExpression) -> list[cst.Name] | None:
    """The names a test reads through `not`/`and`/`or`, when every other operand is static."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _tested_names(rule, ff, test.expression)
    if isinstance(test, cst.BooleanOperation):
        left, right = _tested_names(rule, ff, test.left), _tested_names(rule, ff, test.right)
        return None if left is None or right is None else left + right
    if isinstance(test, cst.Name) and ff.value(test).kind != "static":
        return [test]
    return [] if ff.value(test).kind == "static" else None


def _only_tested(rule, func: cst.FunctionDef, name: str, bindings: list[cst.CSTNode]) -> list[cst.CSTNode] | None:
    """The `if`/ternary tests that read `name`, when it is read nowhere else (under compile the fixed
    binding is the Python value False instead of a 0-d bool tensor: only a test cannot tell)."""
    tests: list[cst.CSTNode] = []
    ok = True

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is func

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_Name(self, n: cst.Name) -> None:
            nonlocal ok
            if n.value != name or any(up is b for _, up in context.ancestors(n, rule.parent) for b in bindings):
                return
            child, up = n, rule.parent(n)
            while isinstance(up, cst.BooleanOperation) or \
                    isinstance(up, cst.UnaryOperation) and isinstance(up.operator, cst.Not):
                child, up = up, rule.parent(up)
            if isinstance(up, (cst.If, cst.IfExp, cst.While)) and up.test is child:
                tests.append(up)
            else:
                ok = False

    fastwalk.visit(func, V())
    return tests if ok else None


INCLUSIVE = ("`<=` keeps a draw of exactly 0.0, so even `{prob} <= 0.0` does not decide the test while "
             "tracing (only `draw < p` is guarded)")


def _inclusive(rule, ff, value: cst.BaseExpression) -> str | None:
    """The probability of a binding `S and draw <= p` (S static), else None."""
    got = draw_part(rule, ff, value, inclusive=True)
    if got is None or not _static_besides(ff, got[0], got[1]):
        return None
    return code(got[2])


def _fix_binding(rule, node: cst.If | cst.IfExp, func: cst.FunctionDef) -> Fix | NoFix | Elsewhere | Done | None:
    """`skip = self.training and dropout_probability < self.layerdrop`, then `if not skip or synced:`
    (wav2vec2 and its family; in transformers 5.x `skip = False; if S: ...; skip = draw < p`): the
    guard goes into the binding, which decides every test of it."""
    ff = rule.facts.function(func)
    for n in _tested_names(rule, ff, node.test) or []:
        every = ff.assigned.get(n.value, [])
        values = [v for v in every if not is_name(v, "False")]  # `skip = False` first: decided while tracing
        assign = rule.parent(values[0]) if len(values) == 1 and values[0] is not None else None
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or assign.value is not values[0]:
            continue
        if guarded(rule, ff, assign.value):
            return Done.FIXED
        got = rewrite(rule, ff, assign.value)
        if got is None:
            inclusive = _inclusive(rule, ff, assign.value)
            tests = _only_tested(rule, func, n.value, [rule.parent(v) for v in every]) if inclusive else None
            if tests and tests[0] is node:  # `draw <= p`: only the torch.cond form, where p > 0.0 is shown
                noop = no_fix_reason(rule, assign, assign.value, inclusive)
                return (noop and layerdrop_cond.fix(rule, node, func)) or NoFix(
                    f"{noop or INCLUSIVE.format(prob=inclusive)}{layerdrop_cond.not_offered(rule, node)}")
            continue
        tests = _only_tested(rule, func, n.value, [rule.parent(v) for v in every])
        if not tests:
            continue
        test, prob, needs = got
        noop = no_fix_reason(rule, assign, assign.value, prob)
        if noop is not None:
            cond = layerdrop_cond.fix(rule, node, func) if tests[0] is node else None
            noop += layerdrop_cond.not_offered(rule, node)
            return cond or (NoFix(noop) if tests[0] is node else Elsewhere(f"no fix: {noop}"))
        line = rule.get_metadata(PositionProvider, assign).start.line
        if tests[0] is not node:  # one fix, on the first test reading the binding
            return Elsewhere(f"{message(prob)} (fixed at the binding of `{n.value}`, line {line})")
        title = f"{message(prob)}{default_note(rule, assign, prob)} (fix at the binding of `{n.value}`, line {line})"
        return Fix(assign.with_changes(value=test), title=title, needs_torch_import=needs, node=assign)
    return None
