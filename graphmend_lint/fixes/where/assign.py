"""GM101: turn a tensor-valued `if` statement into `torch.where` assignments or a `torch.where` return.

`plan(prover, node)` -> (Verdict, replacement or None). Accepted shapes:
  - every arm assigns names (`y = ...`), optionally after setup assignments whose names are not
    used anywhere else (they are hoisted); a name missing from an arm keeps its prior value;
  - every arm ends in `return <value>` (an `else` is required, or the `return` after the `if` is
    one, maybe after assignments: `branches.return_after`; their names are renamed in the compiled
    form where the tests or other arms read them, and proofs read values through them, inline.py);
  - a static leading conjunct (`h.dtype == torch.float16 and ...`) of an `if` without `else`
    stays a Python `if` around the fix.
"""
from __future__ import annotations

import libcst as cst

from ...analysis.bindings import dotted
from ...analysis.context import calls_below
from ...analysis.tables import PURE_BUILTINS
from ..build import line
from ..fix import Refused
from ..syntax import body_statements, code, flatten, names_in, strip_parens
from .after import after_of, alias_of, rebind_proofs
from .branches import arms, comments, refusal_of, return_after, without_logging
from .compiled import fresh
from .flow import bound_before, live_after, none_here
from .inline import environment, renamed
from .proof import Prover
from .quiet import ONLY_LOGGED
from .rewrite import guarded_arm, index_guarded
from .values import breaks_on
from .verdict import EAGER_ONLY, GapKind, Verdict


def plan(prover: Prover, node: cst.If) -> tuple[Verdict, list | cst.If | None]:
    """The torch.where form of the tensor `if` statement `node`: (verdict, replacement), where the
    replacement is a list of statements, an `if` on the static prefix of the test around them, or
    None when the verdict refuses (or a proof failed). The steps: split off a static prefix, build
    each arm's condition, read the arms (setups, then results or a return), check the hoisted setups
    and the results, then build the assignments or the return."""
    steps = _Plan(prover, node)
    try:
        return steps.v, steps.run()
    except Refused:
        return steps.v, None


def _pairs(prover: Prover, v: Verdict, values: list, conds: list) -> list:
    """Prove every value against the first and apply the double-where guard to each value that needs
    it (rewrite.guarded_arm; one test or an `elif` chain); with one test, the index guard too.
    Values that read the assignments hoisted from after the `if` (`return_after`) are proved as
    what they compute (`Prover.inlined`); the guards, which rewrite the value itself, are off then
    (an op with an infinite derivative there becomes a missing proof: gradients off)."""
    proved = [prover.inlined(x) for x in values]
    own = [len(values) == len(conds) + 1 and p is x for p, x in zip(proved, values)]  # not inlined: rewritable
    single = all(own) and len(conds) == 1
    bases: list[str | None] = [None] * len(values)  # the tensor each value's double where guards
    for i, other in enumerate(proved[1:], 1):
        pv = prover.pair(proved[0], other, can_guard=(own[0], own[i]), can_index=single)
        v.add(pv)
        if pv.guard:
            base, on_first, on_other = pv.guard
            if on_first:
                bases[0] = bases[0] or base
            if on_other:
                bases[i] = base
    values = [guarded_arm(prover, x, b, conds, i) if b else x for i, (x, b) in enumerate(zip(values, bases))]
    if single:
        values = [index_guarded(prover, values[0], conds[0], True),
                  index_guarded(prover, values[1], conds[0], False)]
    return values


class _Plan:
    """The steps of `plan`; a step that refuses sets `v.refuse` (when it says why) and raises."""

    def __init__(self, prover: Prover, node: cst.If) -> None:
        self.prover, self.node, self.rule, self.ff = prover, node, prover.rule, prover.ff
        self.v = Verdict()

    def _refuse(self, why: str | None = None) -> None:
        if why is not None:
            self.v.refuse = why
        raise Refused(why)

    def _stop_if_refused(self) -> None:
        if self.v.refuse:
            raise Refused(self.v.refuse)

    def run(self) -> list | cst.If:
        self.arms = arms(self.node) + return_after(self.prover, self.v, self.node)
        self._stop_if_refused()
        tensor_part = self._static_prefix()
        self.conds = self._conditions(tensor_part)
        self._read_arms()
        self._rename_tail()
        self.after = after_of(self.rule, self.node, self.prover.func)
        self.assigned = [[(s.targets[0].target.value, s.value) for s in stmts if isinstance(s, cst.Assign)]
                         for stmts in self.bodies]
        self.results = self._results()
        self.setups = self._setups()
        self._check_results()
        new: list[cst.BaseStatement] = [line(s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)) for s in self.setups]
        new += self._return() if all(self.returns) else self._assignments()
        return self._finish(new)

    def _static_prefix(self) -> list[cst.BaseExpression]:
        """A static leading conjunct of the first test stays a Python `if`: the tensor part is left."""
        parts = flatten(self.node.test, cst.And)
        n_static = 0
        while n_static < len(parts) and self.ff.value(parts[n_static]).kind == "static":
            n_static += 1
        self.prefix = parts[:n_static]
        if self.prefix and len(self.arms) > 1:
            self._refuse("a static test joined by `and` to a tensor test, with an `else`")
        if any(self.ff.value(p).kind == "static" for p in parts[n_static:]):
            self._refuse("a static test after a tensor test in `and`")
        return parts[n_static:]

    def _conditions(self, tensor_part: list[cst.BaseExpression]) -> list[cst.BaseExpression]:
        """Each arm's test as a 0-d bool tensor (the first one's `and` parts joined by logical_and)."""
        prover, v = self.prover, self.v
        for t, _ in self.arms:
            own = _own_call(t, self.ff.b) if t is not None else None
            if own is not None:  # each torch.where of the compiled form evaluates the test again
                v.missing.append(f"the test calls `{own}`, which the compiled form runs once per value it "
                                 "chooses, and which may have side effects")
                break
        conds: list[cst.BaseExpression] = []
        tests = [tensor_part[0] if len(tensor_part) == 1 else self.node.test] + \
            [t for t, _ in self.arms[1:] if t is not None]
        for i, test in enumerate(tests):
            if i == 0 and len(tensor_part) > 1:
                built = None
                for j, p in enumerate(tensor_part):
                    c, pv = prover.condition(p, always=j == 0)
                    v.add(pv)
                    if c is None:
                        self._refuse()
                    built = c if built is None else prover.call("torch.logical_and", built, c)
                conds.append(built)
                continue
            if not breaks_on(self.ff, test):
                self._refuse(f"`elif {code(test)}` is a static test among tensor tests")
            c, cv = prover.condition(test, always=i == 0)
            v.add(cv)
            if c is None:
                self._refuse()
            conds.append(c)
        return conds

    def _read_arms(self) -> None:
        """Each arm: setup assignments, then results (assignments) or a final return."""
        self.bodies = [without_logging(self.prover, self.v, body_statements(body)) for _, body in self.arms]
        if not any(self.bodies):
            self._refuse(ONLY_LOGGED)
        self.has_else = self.arms[-1][0] is None
        self.returns = [bool(b) and isinstance(b[-1], cst.Return) for b in self.bodies]
        if any(self.returns) and not (all(self.returns) and self.has_else):
            self._refuse("`return` in some branches only (torch.where needs a value from every branch)")
        for stmts in self.bodies:
            for s in stmts[:-1] if all(self.returns) else stmts:
                if not (isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name)):
                    self._refuse(refusal_of(s))

    def _rename_tail(self) -> None:
        """The lines after the `if` that are its `else` arm (`return_after`): the names they bind that
        the other arms or the tests read get new names in the compiled form (its assignments run
        before those are evaluated); their values, seen through the assignments, are what the
        proofs read (`Prover.inlined`)."""
        if len(self.prover.tail) < 2:
            return
        tests = set().union(*(names_in(t) for t, _ in self.arms if t is not None))
        others = set().union(set(), *(names_in(s) for b in self.bodies[:-1] for s in b))
        taken = set(self.ff.assigned) | set(self.ff.params) | names_in(self.prover.func)
        tail = renamed(self.bodies[-1], tests | others, lambda n: fresh(taken, n))
        self.bodies[-1] = tail
        self.prover.inline_env = environment([s for s in tail if isinstance(s, cst.Assign)])

    def _results(self) -> list[str]:
        """The names the arms assign that are used later (none when the arms return)."""
        if all(self.returns):
            return []
        node, func = self.node, self.prover.func
        results = list(dict.fromkeys(
            n for arm in self.assigned for n, _ in arm
            if live_after(self.rule, node, n) or bound_before(self.rule, node, func, n)))
        if not results:
            self._refuse("the branches assign nothing that is used later")
        return results

    def _setups(self) -> list[cst.Assign]:
        """Setups are hoisted: each name must be private to its arm and come before the results."""
        setups: list[cst.Assign] = []
        self.test_names = set().union(*(names_in(t) for t, _ in self.arms if t is not None))
        for k, (stmts, arm) in enumerate(zip(self.bodies, self.assigned)):
            seen_result = False
            others = set().union(set(), *(names_in(s) for j, b in enumerate(self.bodies) if j != k for s in b))
            for s, (name, value) in zip([s for s in stmts if isinstance(s, cst.Assign)], arm):
                if name in self.results:
                    seen_result = True
                    continue
                if seen_result:
                    self._refuse(f"setup `{name} = ...` follows a result assignment in its branch")
                tail = bool(self.prover.tail) and k == len(self.bodies) - 1  # nothing runs after its return
                if name in others or name in self.test_names or not tail and live_after(self.rule, self.node, name):
                    self._refuse(f"`{name}` is set in one branch and used elsewhere, so it cannot be hoisted")
                self.v.add(self.prover.total(value))
                setups.append(s)
        self._stop_if_refused()
        names = [s.targets[0].target.value for s in setups]
        self.prover.local = {s.targets[0].target.value: s.value for s in setups
                             if names.count(s.targets[0].target.value) == 1}
        return setups

    def _check_results(self) -> None:
        for arm in self.assigned:
            names = [n for n, _ in arm if n in self.results]
            if len(names) != len(set(names)):
                self._refuse("a name is assigned twice in one branch")
            for n, value in arm:
                if n in self.results and (names_in(value) & set(self.results)) - {n}:
                    self._refuse(f"`{n} = {code(value)}` reads another name the branches assign")

    def _choose(self, values: list[cst.BaseExpression]) -> cst.BaseExpression:
        out = values[-1]
        for c, val in zip(reversed(self.conds), reversed(values[:-1])):
            out = self.prover.call("torch.where", c, val, out)
        return out

    def _return(self) -> list[cst.BaseStatement]:
        """`return torch.where(...)`, or a tuple of them when every arm returns a tuple of one length."""
        rets = [b[-1].value for b in self.bodies]
        if any(r is None for r in rets):
            self._refuse("a bare `return` (None) in a branch")
        tuples = all(isinstance(r, cst.Tuple) for r in rets)
        if tuples and len({len(r.elements) for r in rets}) == 1 and not any(
                e.star for r in rets for e in r.elements if hasattr(e, "star") and e.star):
            columns = list(zip(*[[e.value for e in r.elements] for r in rets]))
        elif any(isinstance(r, cst.Tuple) for r in rets):
            self._refuse("the branches return tuples of different forms")
        else:
            columns = [tuple(rets)]
        outs = []
        for col in columns:
            if len({code(v) for v in col}) == 1 and isinstance(col[0], cst.Name):
                outs.append(col[0])  # the same name from every branch: returned as it is (its identity too)
                continue
            for v in col:  # a parameter handed back from one branch is the caller's own tensor there
                src = alias_of(v)
                if src is not None and self.after.callers_object(src):
                    self.v.missing.append(
                        f"`{code(v)}` is returned and may be the very tensor the caller passed as `{src}`: a "
                        "caller that modifies one of them in place changes the other too, not the new tensor "
                        "torch.where makes")
                    break
            outs.append(self._choose(_pairs(self.prover, self.v, list(col), self.conds)))
        self._stop_if_refused()
        value = outs[0] if not tuples else cst.Tuple([cst.Element(o) for o in outs], lpar=[], rpar=[])
        return [line(cst.Return(value))]

    def _assignments(self) -> list[cst.BaseStatement]:
        """`r = torch.where(...)` for each result name."""
        new = [line(cst.Assign([cst.AssignTarget(cst.Name(r))], self._choose(self._values(r))))
               for r in self.results]
        if len(self.results) > 1 and self.test_names & set(self.results):
            self.v.refuse = "the test reads a name the branches assign, and there are several results"
        self._stop_if_refused()
        return new

    def _values(self, r: str) -> list[cst.BaseExpression]:
        """The value of `r` from each arm (its prior value where an arm does not set it), proved."""
        node, func, rule = self.node, self.prover.func, self.rule
        values = []
        for arm in self.assigned:
            got = [val for n, val in arm if n == r]
            values.append(got[0] if got else cst.Name(r))
        if not self.has_else:
            values.append(cst.Name(r))
        kept = any(isinstance(val, cst.Name) and val.value == r for val in values)
        if kept and not bound_before(rule, node, func, r):
            self._refuse(f"`{r}` is not set in every branch and not provably bound before the `if`")
        if kept and none_here(rule, node, r):
            self._refuse(f"`{r}` is None here (a branch that does not set it keeps None), and torch.where needs tensors")
        sources = {a for a in map(alias_of, values) if a}
        values = _pairs(self.prover, self.v, values, self.conds)
        for gap in rebind_proofs(self.after, r, sources):
            self.v.missing.append(gap.why)
            if gap.kind is GapKind.SHOWN:  # printed, not read
                self.prover.checks[gap.why] = EAGER_ONLY
        return values

    def _finish(self, new: list) -> list | cst.If:
        """Keep the branches' comments, and the static prefix as an `if` around the statements."""
        kept = comments(self.node)
        if kept:
            first = len(self.setups)  # above the first rewritten assignment or return
            new[first] = new[first].with_changes(leading_lines=[*new[first].leading_lines, *kept])
        if self.prefix:
            test = self.prefix[0]
            for p in self.prefix[1:]:
                test = cst.BooleanOperation(test, cst.And(), p)
            return cst.If(test=strip_parens(test) if len(self.prefix) == 1 else test,
                          body=cst.IndentedBlock(body=new), leading_lines=self.node.leading_lines)
        new[0] = new[0].with_changes(leading_lines=[*self.node.leading_lines, *new[0].leading_lines])
        return new


def _own_call(test: cst.BaseExpression, b) -> str | None:
    """The first call in `test` of a function of the project (`check(x)`, `self.gate(x)`): not a torch
    op nor a method of a value, so not known to be free of side effects."""
    for node in calls_below(test, into_lambdas=False):
        name = dotted(node.func)
        if name is None:
            continue
        q = b.qualify(node.func)
        if q is not None and q.split(".")[0] == "torch":
            continue
        if "." not in name and name not in PURE_BUILTINS or name.split(".")[0] in ("self", "cls") or \
                q is not None and "." in name:
            return name + "(...)"
    return None
