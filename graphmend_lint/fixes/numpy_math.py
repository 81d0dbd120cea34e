"""GM915 fix: a NumPy call on Python numbers -> its `math` equivalent under compile only.

    np.lcm(a, b)
 -> (math.lcm(a, b) if torch.compiler.is_compiling() and isinstance(a, int) and isinstance(b, int)
     else np.lcm(a, b))

Eager runs the NumPy call verbatim. Under compile the checks are Python constants while Dynamo
traces (the arguments are Python numbers there, or the original runs, break included), and the
`math` function gives the same number: `lcm`/`gcd` of ints and `math.prod` of a list of ints are
exact, `sqrt` is correctly rounded in both (IEEE 754) for a number >= 0 (`math.sqrt` raises on a
negative one, NumPy gives nan), `floor`/`ceil` of a finite number are exact (`float(...)`: NumPy
gives a float). `log`/`exp` may differ in the last bit between libm and torch's kernels: unsafe.
The value under compile is a Python number where the original had a NumPy value traced as a
0-d tensor: equal as a number; only code that checks its type could tell them apart.
"""
from __future__ import annotations

import libcst as cst

from ..analysis.bindings import dotted
from .fix import Fix, NoFix
from .safety import Safety
from .syntax import code

INT = "int"
NONNEG = "nonneg"
FINITE = "finite"
NUMBER = "number"
INT_SEQ = "int sequence"
# numpy name -> (math name, arity, argument check, wrap the result in float(), exact)
EQUIVALENTS = {
    "lcm": ("lcm", 2, INT, False, True),
    "gcd": ("gcd", 2, INT, False, True),
    "sqrt": ("sqrt", 1, NONNEG, False, True),
    "floor": ("floor", 1, FINITE, True, True),
    "ceil": ("ceil", 1, FINITE, True, True),
    "prod": ("prod", 1, INT_SEQ, False, True),
    "log": ("log", 1, NONNEG, False, False),
    "exp": ("exp", 1, NUMBER, False, False),
    "log2": ("log2", 1, NONNEG, False, False),
    "log10": ("log10", 1, NONNEG, False, False),
}
INEXACT = "`math.{0}` and the traced `np.{0}` may differ in the last bit"


def _simple(arg: cst.BaseExpression) -> bool:
    """Reading it twice is harmless: a name, an attribute chain, a number literal."""
    if isinstance(arg, cst.UnaryOperation) and isinstance(arg.operator, cst.Minus):
        arg = arg.expression
    return isinstance(arg, (cst.Integer, cst.Float)) or dotted(arg) is not None


def _literal(arg: cst.BaseExpression) -> bool:
    if isinstance(arg, cst.UnaryOperation) and isinstance(arg.operator, cst.Minus):
        arg = arg.expression
    return isinstance(arg, (cst.Integer, cst.Float))


def _plain(arg: cst.BaseExpression, kind: str) -> bool:
    """A literal that passes the check as written (`np.sqrt(2)`, `np.lcm(4, 6)`)."""
    if not _literal(arg) or kind == INT_SEQ:
        return False
    negative = isinstance(arg, cst.UnaryOperation)
    if kind == INT:
        return isinstance(arg.expression if negative else arg, cst.Integer)
    return not (negative and kind == NONNEG)


def _check(kind: str, a: str, spell) -> str:
    if kind == INT:
        return f"isinstance({a}, int)"
    if kind == NONNEG:
        return f"isinstance({a}, (int, float)) and {a} >= 0"
    if kind == FINITE:
        return f"isinstance({a}, (int, float)) and {spell('math.isfinite')}({a})"
    if kind == INT_SEQ:
        return f"isinstance({a}, (list, tuple)) and all(isinstance(v, int) for v in {a})"
    return f"isinstance({a}, (int, float))"


def fix(rule, call: cst.Call, qualified: str) -> Fix | NoFix:
    """The compile-only `math` form of `call` (`numpy.<name>(...)`), or why none."""
    name = qualified.split(".", 1)[1]
    if name not in EQUIVALENTS:
        return NoFix(f"`np.{name}` has no exact `math` equivalent; compute it with Python numbers or torch")
    math_name, arity, kind, wrap, exact = EQUIVALENTS[name]
    args = [a.value for a in call.args]
    if len(args) != arity or any(a.keyword is not None or a.star for a in call.args):
        return NoFix(f"`np.{name}` is called with other arguments than {arity} positional ones")
    if not all(_simple(a) for a in args):
        return NoFix("an argument is not a name, an attribute or a number (it would be evaluated twice)")
    imports: set[str] = set()

    def spell(q: str) -> str:
        got = rule.facts.bindings.spell(q)
        if got is None:
            imports.add(q.split(".")[0])
            return q
        return got

    is_compiling, needs_torch = rule.spell("torch.compiler.is_compiling")
    texts = [code(a) for a in args]
    checks = [_check(kind, t, spell) for a, t in zip(args, texts) if not _plain(a, kind)]
    value = f"{spell('math.' + math_name)}({', '.join(texts)})"
    if wrap:
        value = f"float({value})"
    test = " and ".join([f"{is_compiling}()", *checks])
    new = cst.parse_expression(f"({value} if {test} else {code(call)})")
    up = rule.parent(call)
    if isinstance(up, (cst.Assign, cst.Return, cst.AnnAssign, cst.Arg)):
        new = new.with_changes(lpar=[], rpar=[])
    checked = ", ".join(f"`{c}`" for c in checks) or "nothing"
    title = (f"fix: `math.{math_name}` under torch.compile only (eager runs `np.{name}` unchanged), "
             f"checked while tracing ({checked})")
    if not exact:
        return Fix(new, Safety.UNSAFE, f"{title}; unsafe: {INEXACT.format(name)}", needs_torch, node=call,
                   imports=tuple(sorted(imports)))
    return Fix(new, Safety.SAFE, title, needs_torch, node=call, imports=tuple(sorted(imports)))
