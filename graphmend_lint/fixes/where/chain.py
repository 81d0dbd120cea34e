"""Branch values as chains of shape-preserving ops on one name (`h * 2`, `h.sqrt()`), and the ops
through which torch.where's zero gradient for the untaken branch may not stay zero (a derivative
infinite somewhere, or one that depends on the input: NaN where the input is NaN or inf)."""
from __future__ import annotations

import libcst as cst

from ... import fastwalk
from ...analysis import tables as T
from ..syntax import code
from .values import Values, any_tensor_dims
from .verdict import SYMBOLS, Chain


# calls that give numbers or static facts, not tensors on the gradient's path
_NO_GRADIENT = T.STATIC_METHODS | {q.rsplit(".", 1)[1] for q in T.STATIC_FUNCS}
_NO_GRADIENT_BUILTINS = T.DATA_BUILTINS | T.STATIC_BUILTINS  # `float("-inf")`, `len(x)`


def _power_one(e: cst.BaseExpression) -> bool:
    """`x ** 1`: derivative 1 everywhere; any other exponent's derivative depends on x."""
    return isinstance(e, cst.Integer) and e.value == "1"


class Chains(Values):
    def chain(self, node: cst.BaseExpression, depth: int = 0) -> Chain | None:
        """`node` as shape-preserving ops (with Python-number arguments) applied to one name."""
        if depth > 12:
            return None
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return None
            return Chain(node.value, False, [], [])
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
            inner = self.chain(node.expression, depth + 1)
            if inner is not None:
                inner.needs_float = True  # -bool raises; ints would be fine but keep it simple
                inner.ops.insert(0, "unary `-`")
            return inner
        if isinstance(node, cst.BinaryOperation) and isinstance(
                node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)):
            left_num, right_num = self.number(node.left)[0], self.number(node.right)[0]
            if right_num and not left_num:
                inner, op = self.chain(node.left, depth + 1), SYMBOLS[type(node.operator).__name__]
                if inner is None:
                    return None
                inner.needs_float = True
                inner.ops.insert(0, op)
                if isinstance(node.operator, cst.Power) and not _power_one(node.right):
                    inner.bad_grad.append(f"`** {code(node.right)}`")  # x ** 2: 2x, NaN at NaN and inf
                if isinstance(node.operator, cst.Power) and "x ** n" in T.AUTOCAST_ARITHMETIC:
                    inner.autocast.append(f"`** {code(node.right)}`")
                return inner
            if left_num and not right_num and not isinstance(node.operator, cst.Power):
                inner = self.chain(node.right, depth + 1)
                if inner is None:
                    return None
                inner.needs_float = True
                inner.ops.insert(0, SYMBOLS[type(node.operator).__name__])
                if isinstance(node.operator, cst.Divide):
                    inner.bad_grad.append(f"`{code(node.left)} / ...`")
                    if "n / x" in T.AUTOCAST_ARITHMETIC:
                        inner.autocast.append(f"`{code(node.left)} / ...`")
                return inner
            return None
        if isinstance(node, cst.Call):
            op, recv, rest = self.op_name(node)
            if op not in T.ELEMENTWISE or recv is None or not T.ELEMENTWISE[op].shape:
                return None
            if not all(self.number(a.value)[0] or isinstance(a.value, (cst.Name,)) and a.value.value in ("True", "False")
                       for a in rest if a.star == ""):
                return None
            if any(a.star for a in rest):
                return None
            inner = self.chain(recv, depth + 1)
            if inner is None:
                return None
            e = T.ELEMENTWISE[op]
            if e.dim_arg and not any_tensor_dims(rest):
                return None
            inner.needs_float = inner.needs_float or e.dtype == "float" or e.raises
            inner.ops.insert(0, f"`{op}`")
            if not e.finite_grad:
                inner.bad_grad.append(f"`{op}`")
            if e.autocast:
                inner.autocast.append(f"`{op}`")
            return inner
        return None

    def bad_grad_ops(self, node: cst.BaseExpression) -> list[str]:
        """Ops in `node` whose derivative is not finite everywhere (for non-chain values)."""
        found: list[str] = []
        prover = self

        class V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                op, _, _ = prover.op_name(n)
                if op in T.ELEMENTWISE:
                    if not T.ELEMENTWISE[op].finite_grad:
                        found.append(f"`{op}`")
                elif op not in T.ROUTING_GRAD and op not in _NO_GRADIENT and not (
                        op is None and isinstance(n.func, cst.Name) and n.func.value in _NO_GRADIENT_BUILTINS):
                    found.append(f"`{op or code(n.func)}`")

            def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
                # `h / m` with a tensor `m`: the derivative is infinite where `m` is 0
                if isinstance(n.operator, cst.Divide) and not prover.number(n.right)[0]:
                    found.append(f"`/ {code(n.right)}`")
                if isinstance(n.operator, cst.Power) and not _power_one(n.right):
                    found.append(f"`** {code(n.right)}`")
                # `h * m` of two tensors: the derivative of each is the other, NaN or inf there
                if isinstance(n.operator, (cst.Multiply, cst.MatrixMultiply)) and not (
                        prover.number(n.left)[0] or prover.number(n.right)[0]):
                    found.append(f"`{code(n.left)} {'@' if isinstance(n.operator, cst.MatrixMultiply) else '*'} "
                                 f"{code(n.right)}`")

        fastwalk.visit(node, V())
        return found
