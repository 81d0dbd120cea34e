"""Totality: evaluating a branch value has no side effects and cannot raise (torch.where runs
both branches), or the missing proofs and their trace-time checks."""
from __future__ import annotations

import libcst as cst

from ... import fastwalk
from ...analysis import tables as T
from ...analysis.bindings import dotted
from ..syntax import code, strip_parens
from .checks import Checks, float_literal
from .modules import module_checks
from .values import any_tensor_dims
from .verdict import Verdict

CAST_OK = set(T.CAST_METHODS)


class _Walk(cst.CSTVisitor):
    """Collects into `v` why evaluating the visited value may raise or have side effects."""

    def __init__(self, prover: Totality, value: bool) -> None:
        self.prover, self.value, self.v = prover, value, Verdict()
        self.fill_masks: set[int] = set()  # masks of masked_fill: their index checks go with its own

    def _refuse(self, why: str) -> None:
        self.v.refuse = self.v.refuse or why

    def _miss(self, why: str, check: str | None = None) -> None:
        if check:
            self.prover.checks[why] = check
        if why not in self.v.missing:
            self.v.missing.append(why)

    def visit_Subscript(self, n: cst.Subscript) -> None:
        why = f"indexing `{code(n)}` may raise when its branch is not taken"
        guard = self.prover.index_guard(n) if self.value else None
        mask = self.prover.mask_index(n) if self.value and guard is None else None
        if mask:
            self._refuse(f"`{code(n)}` indexes by the bool mask `{mask}`: its shape depends on the data")
        elif guard is None:
            self._refuse(why)
        elif id(n) in self.fill_masks and not guard[0]:
            return  # checked first in the check of the masked_fill around it (leave_Call)
        elif guard[1]:
            self._miss(why, " and ".join(guard[1]))

    def visit_Lambda(self, n: cst.Lambda) -> bool:
        self._refuse("a lambda in a branch")
        return False

    def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
        prover, op = self.prover, n.operator
        if isinstance(op, cst.MatrixMultiply):
            self._refuse(f"`{code(n)}` may raise on shapes valid only in its branch")
        if not isinstance(op, (cst.Divide, cst.FloorDivide, cst.Modulo)):
            return
        nonzero = prover.number(n.right)[0] and code(n.right).strip("-+ ").rstrip("0.") != ""
        tensor_div = isinstance(op, cst.Divide) and (prover.is_tensor(n.left) or prover.is_tensor(n.right))
        float_div = prover.is_float(n.left) or prover.is_float(n.right)
        if not (nonzero and isinstance(n.right, (cst.Integer, cst.Float)) or tensor_div or float_div):
            self._refuse(f"`{code(n)}` may raise (division by zero) when its branch is not taken")

    def visit_Call(self, n: cst.Call) -> None:
        module = module_checks(self.prover, n)
        if module is not None:  # `self.proj(h)`: a known torch layer, checked while tracing
            for why, check in module:
                self._miss(why, check)
            return
        reason = self.prover.call_problem(n)
        empty = self.prover.empty_check(n) if reason else None
        if empty is not None:  # raises only on an empty tensor: a shape, known while tracing
            self._miss(*empty)
        elif reason:
            self._refuse(reason)
        if self.prover.b.qualify(n.func) in T.CONSTRUCTORS:
            self._constructor(n)
        self._float_only(n)
        op, _, rest = self.prover.op_name(n)
        if op == "masked_fill" and rest:
            mask = strip_parens(rest[0].value)
            if isinstance(mask, cst.Comparison):
                mask = strip_parens(mask.left)
            self.fill_masks.add(id(mask))

    def leave_Call(self, n: cst.Call) -> None:
        """After its arguments (their index checks come first): what `masked_fill` needs."""
        found = self.prover.masked_fill(n)
        if found is not None:
            self._miss(*found)

    def _constructor(self, n: cst.Call) -> None:
        """A constructor's arguments: a missing proof, checked while tracing when it can be."""
        why, check = self.prover.tensor_data(n)
        if why is None:
            why, check = self.prover.like_data(n)
        if why is None:
            why = f"`{code(n.func)}(...)` may raise on arguments not proved valid when its branch is not taken"
        if why and why not in self.v.missing:  # "": proved
            self.v.missing.append(why)
        if why and check:
            self.prover.checks[why] = check

    def _float_only(self, n: cst.Call) -> None:
        """An elementwise op that raises on some non-floating dtypes."""
        op, recv, _ = self.prover.op_name(n)
        if op in T.ELEMENTWISE and recv is not None and T.ELEMENTWISE[op].raises and not self.prover.is_float(recv):
            why = f"`{code(recv)}` is not provably floating (`{op}` raises on some other dtypes)"
            self._miss(why, f"{dotted(recv)}.is_floating_point()" if dotted(recv) else None)

    def visit_Attribute(self, n: cst.Attribute) -> None:
        _, why = self.prover.number(n)
        if why and why not in self.v.missing:
            self.v.missing.append(why)


class Totality(Checks):
    def total(self, node: cst.BaseExpression, value: bool = False) -> Verdict:
        """Evaluating `node` has no side effects and cannot raise (refuse otherwise).

        `value`: `node` is a branch value that the caller rewrites with `index_guarded` (the tensor
        indices of its untaken branch become 0), so indexing it needs only the checks of `index_guard`."""
        walk = _Walk(self, value)
        fastwalk.visit(node, walk)
        return walk.v

    def evaluated_first(self) -> set[str]:
        """Calls in the part of the test that always runs (before any `and`/`or`), as source."""
        return {code(n) for n in self._first_calls()}

    def emptiness_tested(self) -> set[str]:
        """Tensors (as source) that a reduction raising on an empty tensor, without a dim, took in the
        part of the test that always runs (`torch.min(x)`): had `x` been empty, that had raised."""
        out = set()
        for n in self._first_calls():
            op, recv, rest = self.op_name(n)
            if op in T.RAISES_ON_EMPTY and recv is not None and not rest:
                out.add(code(recv))
        return out

    def _first_calls(self) -> list[cst.Call]:
        test = getattr(self.node, "test", None)
        if test is None or getattr(self, "test_skipped", False):  # quiet.py: the fix skips the test itself
            return []
        while isinstance(test, cst.BooleanOperation):
            test = test.left
        found: list[cst.Call] = []

        class V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                found.append(n)

        fastwalk.visit(test, V())
        return found

    def call_problem(self, call: cst.Call) -> str | None:
        """Why this call may have side effects or raise; None when it cannot."""
        q = self.b.qualify(call.func)
        if q == "torch.finfo":
            return None  # checked with its attribute (see number())
        if q in ("torch.logical_and", "torch.logical_or", "torch.logical_not") or q in T.CONSTRUCTORS:
            return None  # constructors: see total(), which makes their arguments a missing proof
        if float_literal(call) is not None:
            return None  # `float("-inf")`: it parses
        op, recv, rest = self.op_name(call)
        name = code(call.func)
        if op is None or recv is None:
            return f"`{name}(...)` may have side effects: torch.where runs both branches"
        if op in T.ELEMENTWISE and T.ELEMENTWISE[op].dim_arg and not any_tensor_dims(rest):
            return f"`{name}` raises on a dim out of range when its branch is not taken"
        if op in T.ELEMENTWISE:
            return None  # dtype-dependent raising: see total(), which makes it a missing proof
        if op in T.PREDICATES or op in CAST_OK:
            return None
        if op in T.REDUCTIONS:
            if op in T.RAISES_ON_EMPTY and code(call) in self.evaluated_first():
                return None  # the test already ran it: had it raised, the branch would not be chosen
            if op in T.RAISES_ON_EMPTY and not rest and code(recv) in self.emptiness_tested():
                return None  # `torch.max(x)` after the test's `torch.min(x)`: x is not empty here
            if op in T.RAISES_ON_EMPTY:
                return f"`{name}` raises on an empty tensor when its branch is not taken"
            if op in T.WARNS_ON_EMPTY:
                return f"`{name}` warns on too few elements when its branch is not taken"
            return None
        return f"`{name}(...)` may have side effects or raise: torch.where runs both branches"
