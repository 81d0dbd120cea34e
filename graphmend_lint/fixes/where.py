"""GM1xx shared analysis: tensor conditions, branch values, and the proofs behind a torch.where fix.

`Prover(rule, node, func)` answers, for one `if`/`a if c else b`:
  - `condition(test)`: the test as a 0-d bool tensor expression (and/or/not -> torch.logical_*);
  - `pair(a, b)`: can `torch.where(c, a, b)` replace the branch choice of `a` and `b`?
Each answer is a `Verdict`: `refuse` (no fix, with the reason), else `missing` (the proofs that
could not be made: the fix is unsafe) or neither (safe).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..analysis import context
from ..analysis import tables as T
from ..analysis.bindings import dotted

FLOAT_DTYPES = {"float16", "float32", "float64", "bfloat16", "half", "float", "double"}
FINFO_ATTRS = {"max", "min", "eps", "tiny", "resolution", "smallest_normal"}
CAST_OK = set(T.CAST_METHODS)
SHAPES = "shapes"  # Prover.checks value: compare shapes and dtypes of the bound branch values
# Prover.checks value: a proof only the eager path needs. Printing a tensor shows its grad_fn
# (WhereBackward0 after torch.where); under torch.compile a value handed across a break carries the
# compiled graph's grad_fn (CompiledFunctionBackward) either way, and a print guarded by
# `if not is_compiling()` does not run there at all.
EAGER_ONLY = "eager only"
GRAD_OFF = "gradients off"  # holds with gradients off: the compiled form checks `not torch.is_grad_enabled()`
SYMBOLS = {"Add": "`+`", "Subtract": "`-`", "Multiply": "`*`", "Divide": "`/`", "Power": "`**`"}


@dataclass
class Verdict:
    refuse: str | None = None
    missing: list[str] = field(default_factory=list)
    # double where: (base name, guard side a, guard side b) -- the side's base is replaced by
    # torch.where(c, base, 1.0) so its untaken evaluation has finite derivatives
    guard: tuple[str, bool, bool] | None = None

    def add(self, other: "Verdict") -> "Verdict":
        if self.refuse is None:
            self.refuse = other.refuse
        self.guard = self.guard or other.guard
        for m in other.missing:
            if m not in self.missing:
                self.missing.append(m)
        return self


@dataclass
class Chain:
    """`expr` is a chain of shape-preserving ops applied to the name `base`."""

    base: str
    needs_float: bool  # some op keeps the dtype only for floating tensors
    ops: list[str]  # op names, outermost first
    bad_grad: list[str]  # ops whose derivative is not finite everywhere


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def flatten(node: cst.BaseExpression, op: type) -> list[cst.BaseExpression]:
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, op):
        return flatten(node.left, op) + flatten(node.right, op)  # `and`/`or` are associative
    return [node]


def atoms(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of `and`/`or`/`not` in a test."""
    if isinstance(node, cst.BooleanOperation):
        return atoms(node.left) + atoms(node.right)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return atoms(node.expression)
    return [node]


def breaks_on(ff, test: cst.BaseExpression) -> bool:
    """Python's truth test of `test` is where the graph breaks: some operand is a tensor, or a
    Python value computed from tensor data right here (`x.item() > 0`). A Python bool computed
    earlier (`flag = x.any().item()`) broke the graph where it was computed, not at the test.
    `not is_compiling() and <tensor test>` never evaluates the tensor test under compile."""
    if ff.short_circuited(test):
        return False
    for atom in atoms(test):
        val = ff.value(atom)
        if val.kind == "tensor":
            return True
        if val.kind == "data":
            found = []

            class V(cst.CSTVisitor):
                def visit_Call(self, n: cst.Call) -> None:
                    if ff.value(n).kind == "data":
                        found.append(n)

            atom.visit(V())
            if found:
                return True
    return False


def names_in(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)  # skip keyword names
            return False

    node.visit(V())
    return found


def body_statements(block: cst.BaseSuite) -> list[cst.BaseSmallStatement | cst.BaseCompoundStatement]:
    """Statements of a block, one per small statement (`a = 1; b = 2` counts two)."""
    out: list = []
    stmts = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for s in stmts:
        if isinstance(s, cst.SimpleStatementLine):
            out.extend(s.body)
        elif isinstance(s, cst.SimpleStatementSuite):
            out.extend(s.body)
        else:
            out.append(s)
    return out


def comma_args(*values: cst.BaseExpression) -> list[cst.Arg]:
    args = []
    for i, v in enumerate(values):
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if i < len(values) - 1 else cst.MaybeSentinel.DEFAULT
        args.append(cst.Arg(v, comma=comma))
    return args


class _Rename(cst.CSTTransformer):
    def __init__(self, name: str, new: cst.BaseExpression) -> None:
        self.name, self.new = name, new

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.new if original.value == self.name else updated

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        return updated.with_changes(attr=original.attr)  # never rename attribute names

    def visit_Arg(self, node: cst.Arg) -> bool:
        return True

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)  # never rename keywords


def guarded(prover: "Prover", value: cst.BaseExpression, base: str, cond: cst.BaseExpression,
            taken_when_true: bool) -> cst.BaseExpression:
    """`sqrt(h)` -> `sqrt(torch.where(c, h, 1.0))`: same values where taken, finite gradients elsewhere."""
    one = cst.Float("1.0")
    inner = prover.call("torch.where", cond, cst.Name(base), one) if taken_when_true else \
        prover.call("torch.where", cond, one, cst.Name(base))
    return value.visit(_Rename(base, inner))


def _literal_int(node: cst.BaseExpression | None) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, cst.Integer):
        return -int(node.expression.value, 0)
    return None


def _any_tensor_dims(args: list[cst.Arg]) -> bool:
    """`softmax(x, -1)`, `x.softmax(dim=0)`: one dim argument, -1 or 0, valid for a tensor of any
    rank (a 0-d one included)."""
    return len(args) == 1 and not args[0].star and (args[0].keyword is None or args[0].keyword.value == "dim") \
        and _literal_int(args[0].value) in (-1, 0)


class _IndexZero(cst.CSTTransformer):
    """In the subscripts of a branch value, tensor index `i` -> `torch.where(c, i, 0)` (or
    `torch.where(c, 0, i)` in the `else` branch): the value where taken, a valid index elsewhere."""

    def __init__(self, prover: "Prover", cond: cst.BaseExpression, taken_when_true: bool) -> None:
        self.prover, self.cond, self.when_true = prover, cond, taken_when_true
        self.names: list[set[str]] = []

    def visit_Subscript(self, node: cst.Subscript) -> bool:
        guard = self.prover.index_guard(node)
        self.names.append(set(guard[0]) if guard else set())
        return True

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.Subscript:
        names = self.names.pop()
        if not names:
            return updated
        elements = []
        for el in updated.slice:
            part = el.slice
            if isinstance(part, cst.Index) and dotted(part.value) in names:
                zero = cst.Integer("0")
                args = (self.cond, part.value, zero) if self.when_true else (self.cond, zero, part.value)
                part = part.with_changes(value=self.prover.call("torch.where", *args))
            elements.append(el.with_changes(slice=part))
        return updated.with_changes(slice=elements)


def index_guarded(prover: "Prover", value: cst.BaseExpression, cond: cst.BaseExpression,
                  taken_when_true: bool) -> cst.BaseExpression:
    """`x[idx]` -> `x[torch.where(c, idx, 0)]`: the double-where idiom for an index that may be out
    of range where its branch is not taken (torch.where computes both branches)."""
    return value.visit(_IndexZero(prover, cond, taken_when_true))


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(node, "lpar", None):
        return node.with_changes(lpar=[], rpar=[])
    return node


class Prover:
    def __init__(self, rule, node: cst.CSTNode, func: cst.FunctionDef) -> None:
        self.rule = rule
        self.node = node
        self.func = func
        self.ff = rule.facts.function(func)
        self.b = rule.facts.bindings
        self.imports = False
        self.grad_off = context.grad_disabled(node, rule.parent, self.b)
        self.local: dict[str, cst.BaseExpression] = {}  # setup names of the branches -> their values
        # missing proof -> a check that is a Python constant while Dynamo traces (dtypes, types),
        # so the compile-only form can test it instead (SHAPES: compare the bound branch values)
        self.checks: dict[str, str] = {}
        self.float_names = self._float_guards()

    def _grad_off_region(self) -> cst.CSTNode | None:
        for _, up in context.ancestors(self.node, self.rule.parent):
            if isinstance(up, cst.With) and any(context.grad_off_expr(i.item, self.b) for i in up.items):
                return up
            if isinstance(up, cst.FunctionDef) and any(context.grad_off_expr(d.decorator, self.b) for d in up.decorators):
                return up
        return None

    def _computed_without_grad(self, name: str) -> bool:
        """Every value `name` is bound to is computed inside the no_grad region (so it never
        requires grad): no parameter, no alias of another name or attribute."""
        region = self._grad_off_region()
        values = self.ff.assigned.get(name, [])
        if region is None or name in self.ff.params or not values:
            return False
        for v in values:
            if v is None or isinstance(v, (cst.Name, cst.Attribute)):
                return False
            if not any(up is region for _, up in context.ancestors(v, self.rule.parent)):
                return False
        return True

    # -- spelling --------------------------------------------------------------
    def torch(self, qualified: str) -> cst.BaseExpression:
        spelled, needs = self.rule.spell(qualified)
        self.imports = self.imports or needs
        return cst.parse_expression(spelled)

    def call(self, qualified: str, *args: cst.BaseExpression) -> cst.Call:
        return cst.Call(self.torch(qualified), comma_args(*[strip_parens(a) for a in args]))

    # -- static dtype facts ----------------------------------------------------
    def _dtype_tests(self, test: cst.BaseExpression) -> set[str]:
        out = set()
        for part in flatten(test, cst.And):
            if isinstance(part, cst.Comparison) and len(part.comparisons) == 1:
                left, cmp = part.left, part.comparisons[0]
                if isinstance(left, cst.Attribute) and left.attr.value == "dtype" and isinstance(cmp.operator, cst.Equal):
                    q = self.b.qualify(cmp.comparator) or ""
                    if q.startswith("torch.") and q[6:] in FLOAT_DTYPES and (n := dotted(left.value)):
                        out.add(n)
            if isinstance(part, cst.Call) and isinstance(part.func, cst.Attribute) and \
                    part.func.attr.value == "is_floating_point" and not part.args and (n := dotted(part.func.value)):
                out.add(n)
        return out

    def _float_guards(self) -> set[str]:
        """Names proved floating by a static dtype test around (or leading) this node."""
        names: set[str] = set()
        if isinstance(self.node, cst.If):
            names |= self._dtype_tests(self.node.test)
        for child, up in context.ancestors(self.node, self.rule.parent):
            if isinstance(up, cst.FunctionDef):
                break
            if isinstance(up, cst.If) and child is up.body:
                names |= self._dtype_tests(up.test)
        return names

    def is_float(self, node: cst.BaseExpression, seen: frozenset = frozenset()) -> bool:
        name = dotted(node)
        if name is not None and name in self.float_names:
            return True  # guarded by a static dtype test; the fixes we make keep the dtype
        if self.ff.value(node).dtype == "float":
            return True
        if isinstance(node, cst.Name) and node.value not in self.ff.params and node.value not in seen:
            # every assignment is floating, or a dtype-keeping chain of the name itself (`h = h * 2`)
            values = self.ff.assigned.get(node.value, [])
            seen = seen | {node.value}
            return bool(values) and all(v is not None and self._float_value(v, node.value, seen) for v in values)
        return False

    def _float_value(self, value: cst.BaseExpression, name: str, seen: frozenset) -> bool:
        if self.ff.value(value).dtype == "float":
            return True
        if isinstance(value, cst.IfExp):
            return all(self._float_value(v, name, seen) for v in (value.body, value.orelse))
        if isinstance(value, cst.Call) and self.b.qualify(value.func) == "torch.where" and len(value.args) == 3:
            return all(self._float_value(a.value, name, seen) for a in value.args[1:])
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                T.CAST_METHODS.get(value.func.attr.value) == "float":
            return True
        c = self.chain(value)
        return c is not None and (c.base == name or self.is_float(cst.Name(c.base), seen))

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        name = dotted(node)
        return self.ff.value(node).is_tensor or (name is not None and name in self.float_names) or self.is_float(node)

    # -- Python numbers ----------------------------------------------------------
    def number(self, node: cst.BaseExpression, depth: int = 0) -> tuple[bool, str | None]:
        """(is a Python number, what may raise while computing it)."""
        if depth > 8:
            return False, None
        if isinstance(node, (cst.Integer, cst.Float)):
            return True, None
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
            return self.number(node.expression, depth + 1)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply)):
            a, b = self.number(node.left, depth + 1), self.number(node.right, depth + 1)
            return a[0] and b[0], a[1] or b[1]
        if isinstance(node, cst.Attribute) and node.attr.value in FINFO_ATTRS and isinstance(node.value, cst.Call):
            call = node.value
            if self.b.qualify(call.func) == "torch.finfo" and len(call.args) == 1:
                arg = call.args[0].value
                q = self.b.qualify(arg) or ""
                if q.startswith("torch.") and q[6:] in FLOAT_DTYPES:
                    return True, None
                if isinstance(arg, cst.Attribute) and arg.attr.value == "dtype" and self.is_float(arg.value):
                    return True, None
                why = f"`{code(call)}` raises TypeError unless the dtype is floating, which is not proved"
                if isinstance(arg, cst.Attribute) and arg.attr.value == "dtype" and dotted(arg.value):
                    self.checks[why] = f"{dotted(arg.value)}.is_floating_point()"
                return True, why
        if isinstance(node, cst.Name) and node.value in self.local:
            return self.number(self.local[node.value], depth + 1)
        if isinstance(node, cst.Name):
            values = self.ff.assigned.get(node.value, [])
            if node.value not in self.ff.params and len(values) == 1 and values[0] is not None:
                return self.number(values[0], depth + 1)
        return False, None

    # -- purity and totality -----------------------------------------------------
    def total(self, node: cst.BaseExpression, value: bool = False) -> Verdict:
        """Evaluating `node` has no side effects and cannot raise (refuse otherwise).

        `value`: `node` is a branch value that the caller rewrites with `index_guarded` (the tensor
        indices of its untaken branch become 0), so indexing it needs only the checks of `index_guard`."""
        v = Verdict()
        prover = self

        class Walk(cst.CSTVisitor):
            def visit_Subscript(self, n: cst.Subscript) -> None:
                why = f"indexing `{code(n)}` may raise when its branch is not taken"
                guard = prover.index_guard(n) if value else None
                if guard is None:
                    v.refuse = v.refuse or why
                elif guard[1]:
                    prover.checks[why] = " and ".join(guard[1])
                    if why not in v.missing:
                        v.missing.append(why)

            def visit_Lambda(self, n: cst.Lambda) -> bool:
                v.refuse = v.refuse or "a lambda in a branch"
                return False

            def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
                op = n.operator
                if isinstance(op, cst.MatrixMultiply):
                    v.refuse = v.refuse or f"`{code(n)}` may raise on shapes valid only in its branch"
                if not isinstance(op, (cst.Divide, cst.FloorDivide, cst.Modulo)):
                    return
                nonzero = prover.number(n.right)[0] and code(n.right).strip("-+ ").rstrip("0.") != ""
                tensor_div = isinstance(op, cst.Divide) and (prover.is_tensor(n.left) or prover.is_tensor(n.right))
                float_div = prover.is_float(n.left) or prover.is_float(n.right)
                if not (nonzero and isinstance(n.right, (cst.Integer, cst.Float)) or tensor_div or float_div):
                    v.refuse = v.refuse or f"`{code(n)}` may raise (division by zero) when its branch is not taken"

            def visit_Call(self, n: cst.Call) -> None:
                reason = prover.call_problem(n)
                empty = prover.empty_check(n) if reason else None
                if empty is not None:  # raises only on an empty tensor: a shape, known while tracing
                    why, check = empty
                    prover.checks[why] = check
                    if why not in v.missing:
                        v.missing.append(why)
                elif reason:
                    v.refuse = v.refuse or reason
                if prover.b.qualify(n.func) in T.CONSTRUCTORS:
                    why, check = prover.tensor_data(n)
                    if why is None:
                        why, check = prover.like_data(n)
                    if why is None:
                        why = f"`{code(n.func)}(...)` may raise on arguments not proved valid when its branch is not taken"
                    if why and why not in v.missing:  # "": proved
                        v.missing.append(why)
                    if why and check:
                        prover.checks[why] = check
                op, recv, _ = prover._op_name(n)
                if op in T.ELEMENTWISE and recv is not None and T.ELEMENTWISE[op].raises and not prover.is_float(recv):
                    why = f"`{code(recv)}` is not provably floating (`{op}` raises on some other dtypes)"
                    if dotted(recv):
                        prover.checks[why] = f"{dotted(recv)}.is_floating_point()"
                    if why not in v.missing:
                        v.missing.append(why)

            def visit_Attribute(self, n: cst.Attribute) -> None:
                ok, why = prover.number(n)
                if why and why not in v.missing:
                    v.missing.append(why)

        node.visit(Walk())
        return v

    def index_guard(self, n: cst.Subscript) -> tuple[list[str], list[str]] | None:
        """`x[idx]`, `x[:, 0]`, `x[1:, idx]`: (the tensor indices, the trace-time checks under which the
        indexing cannot raise once each tensor index is 0 where its branch is not taken), or None for
        other forms. A tensor index must be a long tensor (not a mask, whose result shape depends on
        the data) and the dim it indexes non-empty; an integer index within its dim's size."""
        base = dotted(n.value)
        if base is None or base.split(".")[0] in self.local or not n.slice:
            return None
        tensor = code(self.torch("torch.Tensor"))
        checks = [] if self.is_tensor(n.value) else [f"isinstance({base}, {tensor})"]
        names: list[str] = []
        for d, el in enumerate(n.slice):
            part = el.slice
            if isinstance(part, cst.Slice):
                for bound in (part.lower, part.upper, part.step):
                    if bound is not None and _literal_int(bound) is None:
                        return None
                if part.step is not None and _literal_int(part.step) == 0:
                    return None  # slice step cannot be zero
                continue
            k = _literal_int(part.value)
            if k is not None:
                checks.append(f"{base}.shape[{d}] > {k}" if k >= 0 else f"{base}.shape[{d}] >= {-k}")
                continue
            name = dotted(part.value)
            if name is None or name in ("None", "True", "False") or name.split(".")[0] in self.local:
                return None
            is_t = "" if self.is_tensor(part.value) else f"isinstance({name}, {tensor}) and "
            checks.append(f"{is_t}{name}.dtype == {code(self.torch('torch.long'))}")
            checks.append(f"{base}.shape[{d}] > 0")
            names.append(name)
        if len(checks) == (0 if self.is_tensor(n.value) else 1):
            return names, []  # slices with literal bounds: they cannot raise
        return names, list(dict.fromkeys(checks))

    def _evaluated_first(self) -> set[str]:
        """Calls in the part of the test that always runs (before any `and`/`or`), as source."""
        test = getattr(self.node, "test", None)
        if test is None:
            return set()
        while isinstance(test, cst.BooleanOperation):
            test = test.left
        found: set[str] = set()

        class V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                found.add(code(n))

        test.visit(V())
        return found

    def tensor_data(self, call: cst.Call) -> tuple[str | None, str | None]:
        """`torch.tensor(self.factors, dtype=torch.float32, device=x.device)`: it cannot raise when the
        data is a flat list or tuple of numbers, a Python constant while tracing, so the compile-only
        form can check it. (missing proof, check) or (None, None) for other constructors."""
        if self.b.qualify(call.func) not in ("torch.tensor", "torch.as_tensor") or not call.args:
            return None, None
        data, rest = call.args[0], call.args[1:]
        name = dotted(data.value)
        if data.keyword is not None or data.star or name is None:
            return None, None
        for a in rest:
            kw = a.keyword.value if a.keyword is not None else None
            if kw == "dtype" and (self.b.qualify(a.value) or "").startswith("torch.") and \
                    (self.b.qualify(a.value) or "")[6:] in FLOAT_DTYPES | {"int64", "int32", "long", "int"}:
                continue
            if kw == "device" and isinstance(a.value, cst.Attribute) and a.value.attr.value == "device":
                continue
            return None, None
        return (f"`{name}` is not provably a flat list of numbers (`{code(call.func)}` raises on other data "
                "when its branch is not taken)",
                f"isinstance({name}, (list, tuple)) and all(isinstance(v, (int, float)) for v in {name})")

    def _no_history(self, e: cst.BaseExpression) -> bool:
        """`e` is a tensor with no autograd history: a constructor (`torch.zeros_like(h)`,
        `torch.tensor(...)`), a bool or int value, `.detach()`, a cast of one of these, or arithmetic
        of one with Python numbers."""
        if self.ff.value(e).dtype in ("bool", "int") or isinstance(e, cst.Comparison):
            return True  # never requires grad
        if isinstance(e, cst.Call):
            if self.b.qualify(e.func) in T.CONSTRUCTORS:
                return True
            op, recv, _ = self._op_name(e)
            if op in T.PREDICATES or op in ("detach", "argmax", "argmin"):
                return True
            return recv is not None and (op in T.CAST_METHODS or op == "to") and self._no_history(recv)
        if isinstance(e, cst.UnaryOperation):
            return self._no_history(e.expression)
        if isinstance(e, cst.BinaryOperation):
            sides = [e.left, e.right]
            return any(self._no_history(x) for x in sides) and all(
                self._no_history(x) or self.number(x)[0] for x in sides)
        return False

    def like_data(self, call: cst.Call) -> tuple[str | None, str | None]:
        """`torch.zeros_like(h)`, `torch.full_like(h, 0.5)`: it cannot raise when `h` is a tensor
        (a Python constant while tracing); (missing proof, check), or (None, None) for other forms."""
        q = self.b.qualify(call.func) or ""
        if q not in ("torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like") or not call.args:
            return None, None
        first, rest = call.args[0], call.args[1:]
        name = dotted(first.value)
        if first.keyword is not None or first.star or name is None or name.split(".")[0] in self.local:
            return None, None
        if q == "torch.full_like":
            if len(rest) != 1 or rest[0].keyword is not None or not self.number(rest[0].value)[0]:
                return None, None
        elif rest:
            return None, None
        why = f"`{name}` is not provably a tensor (`{code(call.func)}` raises on other values when its branch is not taken)"
        if self.is_tensor(first.value):
            return "", None  # proved
        return why, f"isinstance({name}, {code(self.torch('torch.Tensor'))})"

    def _op_name(self, call: cst.Call) -> tuple[str | None, cst.BaseExpression | None, list[cst.Arg]]:
        """(op, receiver, other args) for `torch.op(x, ...)`, `F.op(x, ...)` or `x.op(...)`."""
        q = self.b.qualify(call.func)
        if q is not None:
            if q.startswith(("torch.", "torch.nn.functional.")) and call.args and call.args[0].keyword is None:
                return q.rsplit(".", 1)[-1], call.args[0].value, list(call.args[1:])
            return None, None, []
        if isinstance(call.func, cst.Attribute):
            return call.func.attr.value, call.func.value, list(call.args)
        return None, None, []

    def empty_check(self, call: cst.Call) -> tuple[str, str] | None:
        """`x.amax()` raises on an empty `x` (`x.std()` warns on one element): the element count is
        a shape, a Python constant while Dynamo traces (sizes 0 and 1 are always specialized), so the
        compile-only form can check it instead of refusing. (missing proof, check) or None."""
        op, recv, rest = self._op_name(call)
        name = dotted(recv) if recv is not None else None
        if name is None or op not in T.RAISES_ON_EMPTY | T.WARNS_ON_EMPTY or op not in T.REDUCTIONS:
            return None
        if op in T.WARNS_ON_EMPTY and (rest or call.args and self.b.qualify(call.func) is None):
            return None  # a reduction over one dim warns on a size-1 dim: not a count of elements
        least = 1 if op in T.WARNS_ON_EMPTY else 0
        check = f"{name}.numel() > {least}"
        if not self.is_tensor(recv):
            check = f"isinstance({name}, {code(self.torch('torch.Tensor'))}) and {check}"
        verb = "warns on fewer than two elements" if least else "raises on an empty tensor"
        return f"`{code(call.func)}` {verb} when its branch is not taken", check

    def call_problem(self, call: cst.Call) -> str | None:
        """Why this call may have side effects or raise; None when it cannot."""
        q = self.b.qualify(call.func)
        if q == "torch.finfo":
            return None  # checked with its attribute (see number())
        if q in ("torch.logical_and", "torch.logical_or", "torch.logical_not") or q in T.CONSTRUCTORS:
            return None  # constructors: see total(), which makes their arguments a missing proof
        op, recv, rest = self._op_name(call)
        name = code(call.func)
        if op is None or recv is None:
            return f"`{name}(...)` may have side effects: torch.where runs both branches"
        if op in T.ELEMENTWISE and T.ELEMENTWISE[op].dim_arg and not _any_tensor_dims(rest):
            return f"`{name}` raises on a dim out of range when its branch is not taken"
        if op in T.ELEMENTWISE:
            return None  # dtype-dependent raising: see total(), which makes it a missing proof
        if op in T.PREDICATES or op in CAST_OK:
            return None
        if op in T.REDUCTIONS:
            if op in T.RAISES_ON_EMPTY and code(call) in self._evaluated_first():
                return None  # the test already ran it: had it raised, the branch would not be chosen
            if op in T.RAISES_ON_EMPTY:
                return f"`{name}` raises on an empty tensor when its branch is not taken"
            if op in T.WARNS_ON_EMPTY:
                return f"`{name}` warns on too few elements when its branch is not taken"
            return None
        return f"`{name}(...)` may have side effects or raise: torch.where runs both branches"

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
        if val.kind == "data":
            v.refuse = f"the test reads a Python value from tensor data (`{code(test)}`); keep it a tensor first"
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

    # -- branch values ---------------------------------------------------------------
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
                if isinstance(node.operator, cst.Power) and not (
                        isinstance(node.right, cst.Integer) and int(node.right.value) >= 1):
                    inner.bad_grad.append(f"`** {code(node.right)}`")
                return inner
            if left_num and not right_num and not isinstance(node.operator, cst.Power):
                inner = self.chain(node.right, depth + 1)
                if inner is None:
                    return None
                inner.needs_float = True
                inner.ops.insert(0, SYMBOLS[type(node.operator).__name__])
                if isinstance(node.operator, cst.Divide):
                    inner.bad_grad.append(f"`{code(node.left)} / ...`")
                return inner
            return None
        if isinstance(node, cst.Call):
            op, recv, rest = self._op_name(node)
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
            if e.dim_arg and not _any_tensor_dims(rest):
                return None
            inner.needs_float = inner.needs_float or e.dtype == "float" or e.raises
            inner.ops.insert(0, f"`{op}`")
            if not e.finite_grad:
                inner.bad_grad.append(f"`{op}`")
            return inner
        return None

    def bad_grad_ops(self, node: cst.BaseExpression) -> list[str]:
        """Ops in `node` whose derivative is not finite everywhere (for non-chain values)."""
        found: list[str] = []
        prover = self

        class V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                op, _, _ = prover._op_name(n)
                if op in T.ELEMENTWISE and not T.ELEMENTWISE[op].finite_grad:
                    found.append(f"`{op}`")

            def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
                # `h / m` with a tensor `m`: the derivative is infinite where `m` is 0
                if isinstance(n.operator, cst.Divide) and not prover.number(n.right)[0]:
                    found.append(f"`/ {code(n.right)}`")
                if isinstance(n.operator, cst.Power) and not (
                        isinstance(n.right, cst.Integer) and int(n.right.value) >= 1):
                    found.append(f"`** {code(n.right)}`")

        node.visit(V())
        return found

    def pair(self, a: cst.BaseExpression, b: cst.BaseExpression, can_guard: bool = False) -> Verdict:
        """Can `torch.where(c, a, b)` stand for `a if c else b`?

        `can_guard`: the caller can apply the double-where guard (`v.guard`) for ops whose derivative
        is infinite somewhere (one condition only)."""
        v = Verdict()
        for side in (a, b):
            val = self.ff.value(side)
            if val.kind == "static" or isinstance(side, (cst.Integer, cst.Float, cst.SimpleString)):
                v.refuse = (f"`{code(side)}` is a Python value, not a tensor: torch.where would turn it "
                            "into a tensor and code using it as a number would change")
                return v
            if isinstance(side, cst.Name) and side.value == "None":
                v.refuse = "a branch value is None"
                return v
        va, vb = self.ff.value(a), self.ff.value(b)
        if va.is_tensor and vb.is_tensor and va.dtype and vb.dtype and va.dtype != vb.dtype:
            v.refuse = f"the branch values have different dtypes ({va.dtype} vs {vb.dtype}): torch.where would promote"
            return v
        v.add(self.total(a, value=can_guard)).add(self.total(b, value=can_guard))
        if v.refuse:
            return v
        if self.grad_off and any(isinstance(side, cst.Name) and not self._computed_without_grad(side.value)
                                 for side in (a, b)):
            # the `if` hands on the tensor itself (with its autograd history); under no_grad
            # torch.where returns a new tensor that never requires grad (tests/fuzz_regressions/GM101_2.py)
            v.missing.append("under no_grad torch.where detaches a value the `if` passes on unchanged, "
                             "so gradients taken outside the block would be lost")
        fresh = [self._no_history(side) for side in (a, b)]
        if fresh[0] != fresh[1] and not self.grad_off:
            why = (f"`{code(a if fresh[0] else b)}` has no autograd history: where its branch is taken the `if` "
                   "gives a tensor that does not require grad, torch.where one that does")
            self.checks[why] = GRAD_OFF
            v.missing.append(why)
        ca, cb = self.chain(a), self.chain(b)
        if ca is not None and cb is not None and ca.base == cb.base:
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
            bad = ca.bad_grad + cb.bad_grad
            if bad and not self.grad_off and can_guard and "`detach`" not in bad:
                # every such op has a finite derivative at 1.0 (tests/test_gm1_tables.py)
                v.guard = (ca.base, bool(ca.bad_grad), bool(cb.bad_grad))
                bad = []
        else:
            why = ("the two branch values are not provably of the same shape and dtype "
                   "(torch.where broadcasts and promotes silently)")
            self.checks[why] = SHAPES
            v.missing.append(why)
            bad = self.bad_grad_ops(a) + self.bad_grad_ops(b)
        if bad and not self.grad_off:
            ops = ", ".join(dict.fromkeys(bad))
            why = (f"{ops} has an infinite derivative somewhere: under autograd torch.where gives NaN "
                   "gradients where the untaken branch's derivative is infinite (or run it under no_grad)")
            self.checks[why] = GRAD_OFF
            v.missing.append(why)
        return v
