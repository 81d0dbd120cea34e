"""GM1xx shared analysis: tensor conditions, branch values, and the proofs behind a torch.where fix.

`Prover(rule, node, func)` answers, for one `if`/`a if c else b`:
  - `condition(test)`: the test as a 0-d bool tensor expression (and/or/not -> torch.logical_*);
  - `pair(a, b)`: can `torch.where(c, a, b)` replace the branch choice of `a` and `b`?
Each answer is a `Verdict`: `refuse` (no fix, with the reason), else `missing` (the proofs that
could not be made: the fix is unsafe) or neither (safe). `Prover` builds on values.py (value
facts), chain.py (op chains), checks.py (trace-time checks) and total.py (no side effects, no raise).
"""
from __future__ import annotations

import libcst as cst

from ...analysis.bindings import dotted
from ..syntax import code, flatten, names_in
from .chain import Chains
from .inline import substitute
from .total import Totality
from .values import reads_data
from .verdict import GRAD_OFF, SHAPES, Verdict


class Prover(Totality, Chains):
    """The proofs for one `if` or ternary `node` in `func` (see the module docstring)."""

    # -- conditions ----------------------------------------------------------------
    def condition(self, test: cst.BaseExpression, always: bool = True) -> tuple[cst.BaseExpression | None, Verdict]:
        """The test as a 0-d bool tensor expression.

        `always`: the original evaluates this test whenever the `if` runs (so it needs no proof that it
        cannot raise); later operands of `and`/`or` and `elif` tests were evaluated only sometimes.
        """
        v = Verdict()
        for op, fn in ((cst.Or, "torch.logical_or"), (cst.And, "torch.logical_and")):
            parts = flatten(test, op)
            if len(parts) > 1:
                conv = []
                for i, p in enumerate(parts):
                    c, pv = self.condition(p, always and i == 0)
                    v.add(pv)
                    if c is None:
                        return None, v
                    conv.append(c)
                out = conv[0]
                for c in conv[1:]:
                    out = self.call(fn, out, c)
                return out, v
        if isinstance(test, cst.BooleanOperation):  # parenthesised: look inside
            return self.condition(test.with_changes(lpar=[], rpar=[]), always)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            c, v = self.condition(test.expression, always)
            return (self.call("torch.logical_not", c) if c is not None else None), v
        val = self.ff.value(test)
        if val.kind == "data" or val.kind in ("static", "unknown") and not val.numpy and reads_data(self.ff, test):
            v.refuse = f"the test reads a Python value from tensor data (`{code(test)}`); keep it a tensor first"
            return None, v
        if val.kind == "mixed":
            v.refuse = f"`{code(test)}` is a tensor on some paths and a Python value on others"
            return None, v
        if val.kind != "tensor":
            v.refuse = f"`{code(test)}` is not provably a tensor"
            return None, v
        if not always:
            v.add(self.total(test))
        if not val.zero_dim:
            why = self._not_zero_dim(test)
            if why is None:
                v.refuse = v.refuse or f"`{code(test)}` is not provably 0-d: `if` needs one element, torch.where would broadcast it"
                return None, v
            v.missing.append(why)
        if val.dtype != "bool":
            test = cst.Call(cst.Attribute(test if not isinstance(test, cst.BinaryOperation) or test.lpar
                                          else test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
                                          cst.Name("bool")))
        return test, v

    def _not_zero_dim(self, test: cst.BaseExpression) -> str | None:
        """A comparison of a 0-d tensor with a value not proved to be a Python number: unsafe, not refused."""
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            left, right = test.left, test.comparisons[0].comparator
            lv, rv = self.ff.value(left), self.ff.value(right)
            for t, tv, other, ov in ((left, lv, right, rv), (right, rv, left, lv)):
                if tv.is_tensor and tv.zero_dim and not ov.is_tensor:
                    why = f"`{code(other)}` is not provably a Python number, so the test is not provably 0-d"
                    if dotted(other):
                        self.checks[why] = f"isinstance({dotted(other)}, (int, float))"
                    return why
        return None

    def pair(self, a: cst.BaseExpression, b: cst.BaseExpression, can_guard: bool | tuple[bool, bool] = False,
             can_index: bool | None = None) -> Verdict:
        """Can `torch.where(c, a, b)` stand for `a if c else b`? The steps: values that are no
        tensors (refused), no side effects or raising (`total`), autograd history, then one shape
        and dtype (`_same_kind`), and ops whose derivative is infinite somewhere.

        `can_guard`: the caller can apply the double-where guard (`v.guard`) for ops whose derivative
        is infinite somewhere (to `a`, to `b`: a pair when it can rewrite one only); `can_index`
        (default: `can_guard`): it can apply the index guard (rewrite.index_guarded, one condition only)."""
        sides = can_guard if isinstance(can_guard, tuple) else (can_guard, can_guard)
        v = Verdict()
        v.refuse = self._not_tensors(a, b)
        if v.refuse:
            return v
        index = all(sides) if can_index is None else can_index
        v.add(self.total(a, value=index)).add(self.total(b, value=index))
        if v.refuse:
            return v
        self._history(v, a, b)
        bad = self._same_kind(v, a, b, sides)
        if bad and not self.grad_off:
            ops = ", ".join(dict.fromkeys(bad))
            why = (f"{ops} has an infinite derivative somewhere, or one that is NaN at a NaN or infinite input: "
                   "under autograd torch.where gives NaN gradients there for the untaken branch (or run it "
                   "under no_grad)")
            self.checks[why] = GRAD_OFF
            v.missing.append(why)
        return v

    def inlined(self, e: cst.BaseExpression) -> cst.BaseExpression:
        """`e` seen through the assignments of the lines after the `if` that are its `else` arm
        (`z * 3` after `y = h + 1; z = y.relu()` -> `(h + 1).relu() * 3`), for proofs; `e` itself
        when there are none. Those names occur in no other arm nor in the test (`_Plan._setups`)."""
        return substitute(e, self.inline_env)

    def _not_tensors(self, a: cst.BaseExpression, b: cst.BaseExpression) -> str | None:
        """Why torch.where cannot take these values at all: a Python value, None, two dtypes."""
        for side in (a, b):
            if isinstance(side, cst.Name) and side.value == "None":
                return "a branch value is None, which torch.where cannot produce"
            val = self.ff.value(side)
            if val.kind == "static" or isinstance(side, (cst.Integer, cst.Float, cst.SimpleString)):
                return (f"`{code(side)}` is a Python value, not a tensor: torch.where would turn it "
                        "into a tensor and code using it as a number would change")
        va, vb = self.ff.value(a), self.ff.value(b)
        if va.is_tensor and vb.is_tensor and va.dtype and vb.dtype and va.dtype != vb.dtype:
            return f"the branch values have different dtypes ({va.dtype} vs {vb.dtype}): torch.where would promote"
        return None

    def _history(self, v: Verdict, a: cst.BaseExpression, b: cst.BaseExpression) -> None:
        """torch.where's result requires grad when either value does, where the `if` gave one of them."""
        if self.grad_off and any(isinstance(side, cst.Name) and not self.computed_without_grad(side.value)
                                 for side in (a, b)):
            # the `if` hands on the tensor itself (with its autograd history); under no_grad
            # torch.where returns a new tensor that never requires grad (tests/fuzz_regressions/GM101_2.py)
            v.missing.append("under no_grad torch.where detaches a value the `if` passes on unchanged, "
                             "so gradients taken outside the block would be lost")
        if not self.grad_off:  # the compiled form may yet wait for gradients off: build() checks these then
            for side in (a, b):
                if isinstance(side, (cst.Name, cst.Attribute)):
                    self.passed_on.setdefault(code(side), side)
        fresh = [self.no_history(side) for side in (a, b)]
        if fresh[0] != fresh[1] and not self.grad_off:
            why = (f"`{code(a if fresh[0] else b)}` has no autograd history: where its branch is taken the `if` "
                   "gives a tensor that does not require grad, torch.where one that does")
            self.checks[why] = GRAD_OFF
            v.missing.append(why)

    def _only_leaf(self, a: cst.BaseExpression, b: cst.BaseExpression) -> str | None:
        """The one name both values compute from, when it is a tensor and they read
        nothing else but torch's functions (`h - h.amax(dim=0, keepdim=True)` and `h`): the
        double where then reaches every input that can take a gradient."""
        names = {n for n in names_in(a) | names_in(b) if n not in ("True", "False", "None")}
        leaves = [n for n in names if not (self.b.qualify(cst.Name(n)) or "").split(".")[0] == "torch"]
        if len(leaves) != 1 or not self.is_tensor(cst.Name(leaves[0])):
            return None
        return leaves[0]

    def _guardable(self, sides: tuple[bool, bool], bad_a: list[str], bad_b: list[str]) -> bool:
        """The double where covers these ops: some value has one, gradients may be on, the caller
        can rewrite each value that has one, and none is `detach` (whose result has no history)."""
        return bool(bad_a or bad_b) and not self.grad_off and (sides[0] or not bad_a) and \
            (sides[1] or not bad_b) and "`detach`" not in bad_a + bad_b

    def _same_kind(self, v: Verdict, a: cst.BaseExpression, b: cst.BaseExpression,
                   sides: tuple[bool, bool]) -> list[str]:
        """Proofs that both values have one shape and dtype (op chains on one name), or the missing
        proof checked by comparing them while tracing. Returns the ops with an infinite (or NaN) derivative
        somewhere that the double-where guard (set on `v` when it can be) does not cover."""
        ca, cb = self.chain(a), self.chain(b)
        if ca is None or cb is None or ca.base != cb.base:
            why = ("the two branch values are not provably of the same shape and dtype "
                   "(torch.where broadcasts and promotes silently)")
            self.checks[why] = SHAPES
            v.missing.append(why)
            bad_a, bad_b = self.bad_grad_ops(a), self.bad_grad_ops(b)
            base = self._only_leaf(a, b)
            if base and self._guardable(sides, bad_a, bad_b):
                v.guard = (base, bool(bad_a), bool(bad_b))  # any value of one floating tensor: guarded alike
                if not self.is_float(cst.Name(base)):  # an integer tensor would turn floating
                    why = f"`{base}` is not provably floating (needed for the double where's 1.0 to keep its dtype)"
                    self.checks[why] = f"{base}.is_floating_point()"
                    v.missing.append(why)
                return []
            return bad_a + bad_b
        base = cst.Name(ca.base)
        if not self.is_tensor(base) and not self.is_float(base):
            why = f"`{ca.base}` is not provably a tensor"
            self.checks[why] = f"isinstance({ca.base}, {code(self.torch('torch.Tensor'))})"
            v.missing.append(why)
        if (ca.needs_float or cb.needs_float) and not self.is_float(base):
            ops = ", ".join(dict.fromkeys(ca.ops + cb.ops))
            why = f"`{ca.base}` is not provably floating (needed for {ops} to keep its dtype)"
            self.checks[why] = f"{ca.base}.is_floating_point()"
            v.missing.append(why)
        if bool(ca.autocast) != bool(cb.autocast):  # one value float32 under CUDA autocast, the other not
            ops = ", ".join(dict.fromkeys(ca.autocast + cb.autocast))
            why = (f"{ops} may give float32 for a float16/bfloat16 `{ca.base}` under autocast (CUDA's does), "
                   "and torch.where would promote the other value")
            # CPU autocast keeps these ops' dtypes; CUDA's state is `is_autocast_enabled()` (the form
            # TorchScript compiles too); other devices' half tensors run the `if`
            f32, enabled = code(self.torch("torch.float32")), code(self.torch("torch.is_autocast_enabled"))
            b = ca.base
            self.checks[why] = f"({b}.dtype == {f32} or {b}.is_cpu or ({b}.is_cuda and not {enabled}()))"
            v.missing.append(why)
        bad = ca.bad_grad + cb.bad_grad
        if self._guardable(sides, ca.bad_grad, cb.bad_grad):
            # every such op has a finite derivative at 1.0 (tests/test_gm1_tables.py)
            v.guard = (ca.base, bool(ca.bad_grad), bool(cb.bad_grad))
            bad = []
        return bad
