"""The facts a GM1xx proof reads about values: tensor or not, floating or not, Python numbers,
autograd history, and how torch names are spelled in the file (`Values`, the base of `Prover`)."""
from __future__ import annotations

import libcst as cst

from ... import fastwalk
from ...analysis import context
from ...analysis import tables as T
from ...analysis.bindings import dotted
from ..syntax import atoms, code, flatten, literal_int, strip_parens
from .verdict import FINFO_ATTRS, FLOAT_DTYPES


def breaks_on(ff, test: cst.BaseExpression) -> bool:
    """Python's truth test of `test` is where the graph breaks: some operand is a tensor (on some
    paths at least: `skip = False`, then `skip = torch.rand([]) < p` in training), or holds a
    Python value computed from tensor data right here (`x.item() > 0`, also beside a value the
    analysis cannot see: `x.item() < self.p`). A Python bool computed earlier
    (`flag = x.any().item()`) broke the graph where it was computed, not at the test.
    `not is_compiling() and <tensor test>` never evaluates the tensor test under compile."""
    if ff.short_circuited(test):
        return False
    for atom in atoms(test):
        val = ff.value(atom)
        if val.kind in ("tensor", "mixed"):
            return True
        if not val.numpy and reads_data(ff, atom):
            return True
    return False


class _DataCalls(cst.CSTVisitor):
    """Whether a call below the node is a Python value read from tensor data (`.item()`)."""

    def __init__(self, ff) -> None:
        self.ff = ff
        self.found = False

    def visit_Call(self, node: cst.Call) -> bool:
        if not self.found and self.ff.value(node).kind == "data":
            self.found = True
        return not self.found


def reads_data(ff, atom: cst.BaseExpression) -> bool:
    """Some call in `atom` reads a Python value from tensor data (`.item()`, `bool(t)`)."""
    v = _DataCalls(ff)
    fastwalk.visit(atom, v)
    return v.found


def comma_args(*values: cst.BaseExpression) -> list[cst.Arg]:
    args = []
    for i, v in enumerate(values):
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if i < len(values) - 1 else cst.MaybeSentinel.DEFAULT
        args.append(cst.Arg(v, comma=comma))
    return args


def any_tensor_dims(args: list[cst.Arg]) -> bool:
    """`softmax(x, -1)`, `x.softmax(dim=0)`: one dim argument, -1 or 0, valid for a tensor of any
    rank (a 0-d one included)."""
    return len(args) == 1 and not args[0].star and (args[0].keyword is None or args[0].keyword.value == "dim") \
        and literal_int(args[0].value) in (-1, 0)


class Values:

    def __init__(self, rule, node: cst.CSTNode, func: cst.FunctionDef) -> None:
        self.rule = rule
        self.node = node
        self.func = func
        self.ff = rule.facts.function(func)
        self.b = rule.facts.bindings
        self.imports = False
        self.grad_off = context.grad_disabled(node, rule.parent, self.b)
        self.local: dict[str, cst.BaseExpression] = {}  # setup names of the branches -> their values
        self.tail: list = []  # the lines after an `if` that are its `else` arm (branches.return_after)
        self.inline_env: dict[str, cst.BaseExpression] = {}  # their assignments' names -> values (inline.py)
        # missing proof -> a check that is a Python constant while Dynamo traces (dtypes, types),
        # so the compile-only form can test it instead (SHAPES: compare the bound branch values)
        self.checks: dict[str, str] = {}
        self.float_names = self._float_guards()
        # branch values that are names or attributes: the `if` hands on that tensor itself, where
        # torch.where makes a new one, which under no_grad never requires grad (compiled.build)
        self.passed_on: dict[str, cst.BaseExpression] = {}

    def _grad_off_region(self) -> cst.CSTNode | None:
        for _, up in context.ancestors(self.node, self.rule.parent):
            if isinstance(up, cst.With) and any(context.grad_off_expr(i.item, self.b) for i in up.items):
                return up
            if isinstance(up, cst.FunctionDef) and any(context.grad_off_expr(d.decorator, self.b) for d in up.decorators):
                return up
        return None

    def computed_without_grad(self, name: str) -> bool:
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
        active = self.__dict__.setdefault("_float_active", set())
        if isinstance(node, cst.Name) and node.value not in self.ff.params and node.value not in seen \
                and node.value not in active:
            # every assignment is floating, or a dtype-keeping chain of the name itself (`h = h * 2`);
            # `active`: a chain's number arguments may ask about the name again (`finfo(h.dtype)`)
            values = self.ff.assigned.get(node.value, [])
            seen = seen | {node.value}
            active.add(node.value)
            try:
                return bool(values) and all(v is not None and self._float_value(v, node.value, seen) for v in values)
            finally:
                active.discard(node.value)
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

    def no_history(self, e: cst.BaseExpression) -> bool:
        """`e` is a tensor with no autograd history: a constructor (`torch.zeros_like(h)`,
        `torch.tensor(...)`), a bool or int value, `.detach()`, a cast of one of these, or arithmetic
        of one with Python numbers."""
        if self.ff.value(e).dtype in ("bool", "int") or isinstance(e, cst.Comparison):
            return True  # never requires grad
        if isinstance(e, cst.Call):
            if self.b.qualify(e.func) in T.CONSTRUCTORS:
                return True
            op, recv, _ = self.op_name(e)
            if op in T.PREDICATES or op in ("detach", "argmax", "argmin"):
                return True
            return recv is not None and (op in T.CAST_METHODS or op == "to") and self.no_history(recv)
        if isinstance(e, cst.UnaryOperation):
            return self.no_history(e.expression)
        if isinstance(e, cst.BinaryOperation):
            sides = [e.left, e.right]
            return any(self.no_history(x) for x in sides) and all(
                self.no_history(x) or self.number(x)[0] for x in sides)
        return False

    def op_name(self, call: cst.Call) -> tuple[str | None, cst.BaseExpression | None, list[cst.Arg]]:
        """(op, receiver, other args) for `torch.op(x, ...)`, `F.op(x, ...)` or `x.op(...)`."""
        q = self.b.qualify(call.func)
        if q is not None:
            if q.startswith(("torch.", "torch.nn.functional.")) and call.args and call.args[0].keyword is None:
                return q.rsplit(".", 1)[-1], call.args[0].value, list(call.args[1:])
            return None, None, []
        if isinstance(call.func, cst.Attribute):
            return call.func.attr.value, call.func.value, list(call.args)
        return None, None, []
