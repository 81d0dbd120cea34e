"""Values seen through the assignments before them: `z * 3` after `y = h + 1; z = y.relu()` is
`(h + 1).relu() * 3`, for proofs only (the fix keeps the assignments). A proof about shapes, dtypes,
raising or gradients then reads what the value is computed from, not a fresh name."""
from __future__ import annotations

import libcst as cst

from ..syntax import names_in

ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)


class _Substitute(cst.CSTTransformer):
    def __init__(self, env: dict[str, cst.BaseExpression]) -> None:
        self.env = env

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return False  # `.relu` is no name: only the value is visited (below)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(value=original.value.visit(self))

    def visit_Arg(self, node: cst.Arg) -> bool:
        return False  # `dim=` is no name

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(value=original.value.visit(self))

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        value = self.env.get(original.value)
        if value is None:
            return updated
        if isinstance(value, ATOMS) or value.lpar:
            return value
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def substitute(e: cst.BaseExpression, env: dict[str, cst.BaseExpression]) -> cst.BaseExpression:
    """`e` with each name of `env` replaced by its value (parenthesised unless it is an atom); `e`
    itself when it reads none of them."""
    return e.visit(_Substitute(env)) if env and not names_in(e).isdisjoint(env) else e


def environment(assigns: list[cst.Assign]) -> dict[str, cst.BaseExpression]:
    """Each name the assignments (`name = value`, run in order) bind -> its value in terms of the
    names bound before them."""
    env: dict[str, cst.BaseExpression] = {}
    for s in assigns:
        env[s.targets[0].target.value] = substitute(s.value, env)
    return env


def renamed(stmts: list, clash: set[str], new_name) -> list:
    """Assignments then a `return` (the lines after an `if` that are its `else` arm), with each name
    of `clash` they bind renamed from its first binding on, `new_name(name)` giving the new name:
    `x = x + 1; return x * 3` -> `x2 = x + 1; return x2 * 3` (the first `x` read is the one from
    before the `if`)."""
    names: dict[str, str] = {}
    env: dict[str, cst.BaseExpression] = {}
    out = []
    for s in stmts:
        if isinstance(s, cst.Return):
            out.append(s.with_changes(value=substitute(s.value, env)))
            continue
        value, name = substitute(s.value, env), s.targets[0].target.value
        if name in clash:
            names.setdefault(name, new_name(name))
            env[name] = cst.Name(names[name])
            s = s.with_changes(targets=[s.targets[0].with_changes(target=cst.Name(names[name]))])
        out.append(s.with_changes(value=value))
    return out
