"""Where a node sits: enclosing function, compile guards, loops, no_grad, try."""
from __future__ import annotations

from typing import Callable, Iterator

import libcst as cst

from .. import fastwalk
from .bindings import Bindings, dotted
from .tables import IS_COMPILING, IS_COMPILING_NAMES, NOT_COMPILING

Parent = Callable[[cst.CSTNode], "cst.CSTNode | None"]

NameConst = Callable[[str], "bool | None"]
GRAD_OFF = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"}


def ancestors(node: cst.CSTNode, parent: Parent) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    """(child, ancestor) pairs from `node` upwards."""
    child, up = node, parent(node)
    while up is not None:
        yield child, up
        child, up = up, parent(up)


_TERMINATORS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def unreachable(node: cst.CSTNode, parent: Parent, dead: dict | None = None) -> bool:
    """`node` lies after a `return`, `raise`, `continue` or `break` of its own block, or of a block
    around it within its function: it never runs (muse's `raise Exception()` then a `with`).
    `dead`: block -> ids of its statements after such a statement (filled here, one pass a block)."""
    memo = dead if dead is not None else {}
    for child, up in ancestors(node, parent):
        if up.__class__ is cst.FunctionDef:
            return False
        if up.__class__ is cst.IndentedBlock:
            after = memo.get(up)
            if after is None:
                after = memo[up] = _after_terminator(up)
            if after and id(child) in after:
                return True
    return False


def _after_terminator(block: cst.IndentedBlock) -> frozenset[int]:
    body = block.body
    for i, stmt in enumerate(body[:-1]):
        if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, _TERMINATORS) for s in stmt.body):
            return frozenset(id(s) for s in body[i + 1:])
    return frozenset()


def enclosing_function(node: cst.CSTNode, parent: Parent) -> cst.FunctionDef | None:
    """The def whose body holds `node`. A def's decorators, defaults and annotations run where the
    def statement runs (`eps: float = np.finfo(np.float32).eps.item()` once, at import)."""
    for child, up in ancestors(node, parent):
        if up.__class__ is cst.FunctionDef and child is up.body:
            return up
    return None


def reaching_value(node: cst.CSTNode, name: str, parent: Parent) -> cst.BaseExpression | None:
    """The value of the `name = <value>` statement (alone on its line) that last binds `name` before
    `node`, in `node`'s block or a block around it inside its def; None when there is none, or when a
    statement in between may bind `name` another way (`for`, `with ... as`, an `if` that assigns it)."""
    for child, up in ancestors(node, parent):
        if isinstance(up, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if not isinstance(up, cst.IndentedBlock):
            continue
        for stmt in reversed(up.body[: up.body.index(child)]):
            value = _assigned_value(stmt, name)
            if value is not None:
                return value
            if name in bound_names(stmt):
                return None
    return None


def calls_below(node: cst.CSTNode, into_lambdas: bool = True) -> list[cst.Call]:
    """Every call in `node`'s subtree (itself included), in walk order; `into_lambdas=False`: not
    those in a lambda's body (they run only where the lambda is called)."""
    v = _Calls(into_lambdas)
    fastwalk.visit(node, v)
    return v.found


class _Calls(cst.CSTVisitor):  # module-level: a class made per call is a cycle holding its nodes
    def __init__(self, into_lambdas: bool = True) -> None:
        super().__init__()
        self.found: list[cst.Call] = []
        self.into_lambdas = into_lambdas

    def visit_Call(self, call: cst.Call) -> None:
        self.found.append(call)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self.into_lambdas


def is_generator(func: cst.FunctionDef) -> bool:
    """`func` yields (not a def or lambda nested in it): Dynamo traces it where it is iterated."""
    v = _Yields(func)
    fastwalk.visit(func, v)
    return v.found


class _Yields(cst.CSTVisitor):
    def __init__(self, func: cst.FunctionDef) -> None:
        super().__init__()
        self.func, self.found = func, False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.func  # a nested def's yields are its own

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True


def declared_names(func: cst.FunctionDef) -> set[str]:
    """Names a `global` or `nonlocal` statement in `func` declares (assigning them is a side effect)."""
    v = _Declared()
    fastwalk.visit(func, v)
    return v.found


class _Declared(cst.CSTVisitor):  # module-level: fastwalk compiles a walk per visitor class
    def __init__(self) -> None:
        super().__init__()
        self.found: set[str] = set()

    def visit_Global(self, n: cst.Global) -> None:
        self.found.update(item.name.value for item in n.names)

    def visit_Nonlocal(self, n: cst.Nonlocal) -> None:
        self.found.update(item.name.value for item in n.names)


def binds_before(node: cst.CSTNode, name: str, parent: Parent) -> bool:
    """A statement before `node`, in its block or a block around it inside its def, may bind `name`."""
    for child, up in ancestors(node, parent):
        if isinstance(up, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(up, cst.IndentedBlock) and any(name in bound_names(s) for s in up.body[: up.body.index(child)]):
            return True
    return False


def _assigned_value(stmt: cst.BaseStatement, name: str) -> cst.BaseExpression | None:
    """The value of `stmt` when it is `name = <value>` alone on its line."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        targets = stmt.body[0].targets
        if len(targets) == 1 and isinstance(targets[0].target, cst.Name) and targets[0].target.value == name:
            return stmt.body[0].value
    return None


def bound_names(stmt: cst.CSTNode) -> set[str]:
    """Names `stmt` may bind: assignment, `for`, `with ... as`, `:=`, `del` and `import` targets."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def _add(self, target: cst.CSTNode) -> None:
            found.update(target_names(target))

        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            self._add(n.target)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            self._add(n.target)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            self._add(n.target)

        def visit_For(self, n: cst.For) -> None:
            self._add(n.target)

        def visit_AsName(self, n: cst.AsName) -> None:
            self._add(n.name)

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            self._add(n.target)

        def visit_Del(self, n: cst.Del) -> None:
            self._add(n.target)

        def visit_ImportAlias(self, n: cst.ImportAlias) -> None:
            if n.asname is None:
                self._add(n.name)

    fastwalk.visit(stmt, V())
    return found


def target_names(target: cst.CSTNode) -> list[str]:
    """The names an assignment or loop target binds (`a`, `a, (b, *c)`)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def is_compiling_check(test: cst.BaseExpression, b: Bindings) -> bool:
    """`torch.compiler.is_compiling()` and its relatives (any spelling, project wrappers too)."""
    if not isinstance(test, cst.Call):
        return False
    if b.qualify(test.func) in IS_COMPILING:
        return True
    if isinstance(test.func, cst.Name) and test.func.value in IS_COMPILING_NAMES:
        return True
    return bool(b.guards) and dotted(test.func) in b.guards


def compile_value(expr: cst.BaseExpression, b: Bindings, names: NameConst | None = None,
                  strict: bool = False) -> bool | None:
    """The value of `expr` under torch.compile when it is constant there, else None.

    `is_compiling()` (any spelling) is True, `torch.jit.is_scripting()/is_tracing()` False;
    `not`, `and`, `or` as Python evaluates them; a name through `names` (its assignments).
    `strict`: only when no non-constant operand is evaluated (`x.any() and False` is then None)."""
    t = expr.__class__  # exact classes: libcst's isinstance goes through ABCMeta
    if t is cst.Call:
        if is_compiling_check(expr, b):
            return True
        q = b.qualify(expr.func)
        if q is None and isinstance(expr.func, cst.Name) and expr.func.value == "hasattr" and len(expr.args) == 2 \
                and b.qualify(expr.args[0].value) == "torch":
            return True  # `hasattr(torch, "_dynamo") and torch._dynamo.is_compiling()`: torch has it when compiling
        if q in NOT_COMPILING or b.never and dotted(expr.func) in b.never:
            return False  # `torchvision._is_tracing()` returns `torch._C._get_tracing_state()`
        return None
    if t is cst.UnaryOperation and expr.operator.__class__ is cst.Not:
        v = compile_value(expr.expression, b, names, strict)
        return None if v is None else not v
    if t is cst.BooleanOperation:
        left = compile_value(expr.left, b, names, strict)
        is_and = expr.operator.__class__ is cst.And
        if left is (not is_and):  # short-circuits: `False and ...`, `True or ...`
            return left
        if strict and left is None:
            return None
        right = compile_value(expr.right, b, names, strict)
        if right is (not is_and):
            return right
        return left if left is not None and right is not None else None
    if t is cst.Name and names is not None:
        return names(expr.value)
    return None


def bool_parts(expr: cst.BaseExpression, op: type) -> list[cst.BaseExpression]:
    """The operands of a chain of one boolean operator (`a and b and c`), left to right."""
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, op):
        return [*bool_parts(expr.left, op), *bool_parts(expr.right, op)]
    return [expr]


def gate_note(test: cst.BaseExpression, const) -> str:
    """For `(is_training or not is_tracing) and <tensor test>`: under compile `not is_tracing` is
    False, so the tensor test runs (and breaks) only when `is_training` is true. The note says so."""
    gates = []
    for part in bool_parts(test, cst.And):
        if isinstance(part, cst.BooleanOperation) and isinstance(part.operator, cst.Or):
            ors = bool_parts(part, cst.Or)
            values = [const(p) for p in ors]
            if False in values and True not in values:
                rest = [cst.Module([]).code_for_node(p) for p, v in zip(ors, values) if v is None]
                if rest:
                    gates.append(" or ".join(f"`{r}`" for r in rest))
    if not gates:
        return ""
    return f" (under torch.compile only when {' and '.join(gates)} is true: the other operands are constant there)"


def _exits(block: cst.BaseSuite) -> bool:
    """The block always leaves the enclosing one: its last statement returns, raises, continues, breaks."""
    body = block.body
    if isinstance(block, cst.SimpleStatementSuite):
        last = body[-1] if body else None
    else:
        stmt = body[-1] if body else None
        last = stmt.body[-1] if isinstance(stmt, cst.SimpleStatementLine) and stmt.body else None
    return isinstance(last, (cst.Return, cst.Raise, cst.Continue, cst.Break))


def _skipped_by_early_exit(child: cst.CSTNode, block: cst.CSTNode, const) -> bool:
    """A statement after `if is_compiling(): return ...` (or `if torch.jit.is_scripting(): ... else: return`)."""
    for stmt in block.body:  # type: ignore[attr-defined]
        if stmt is child:
            return False
        if stmt.__class__ is cst.If:
            v = const(stmt.test)
            if v is True and _exits(stmt.body):
                return True
            if v is False and isinstance(stmt.orelse, cst.Else) and _exits(stmt.orelse.body):
                return True
    return False


def runs_only_in_eager(node: cst.CSTNode, parent: Parent, b: Bindings,
                       const: Callable[[cst.BaseExpression], "bool | None"] | None = None) -> bool:
    """True when `node` never runs under torch.compile: in a branch whose test is constant there
    (`if not is_compiling():`, the else of `if is_compiling():`, `if torch.jit.is_scripting():`),
    after `is_compiling() and`-style short-circuits, or after an early `if is_compiling(): return`.
    `const`: the compile-time value of a test (default: `compile_value` without names)."""
    if const is None:
        const = lambda e: compile_value(e, b)  # noqa: E731
    for child, up in ancestors(node, parent):
        t = up.__class__  # exact classes (none has a subclass): libcst's isinstance goes through ABCMeta
        if t is cst.FunctionDef or t is cst.Lambda:
            return False
        if t is cst.If or t is cst.IfExp or t is cst.While:
            if child is up.body and const(up.test) is False:
                return True
            if child is up.orelse and const(up.test) is True:
                return True
        elif t is cst.BooleanOperation and child is up.right:
            v = const(up.left)
            if v is (up.operator.__class__ is not cst.And):
                return True
        elif (t is cst.IndentedBlock or t is cst.Module) and _skipped_by_early_exit(child, up, const):
            return True
    return False


def runs_only_compiled(node: cst.CSTNode, parent: Parent, b: Bindings) -> str | None:
    """The test that makes `node` run only under torch.compile (the `else` of `if not
    is_compiling():`, the body of `if is_compiling():`), or None. Only a test that is exactly the
    compile check, or its `not`, counts: it is True under compile and False in eager."""
    for child, up in ancestors(node, parent):
        if isinstance(up, (cst.FunctionDef, cst.Lambda)):
            return None
        if isinstance(up, cst.If):
            test, negated = up.test, False
            while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, negated = test.expression, not negated
            if is_compiling_check(test, b):
                if child is (up.orelse if negated else up.body):
                    return cst.Module([]).code_for_node(up.test)
    return None


def in_loop(node: cst.CSTNode, parent: Parent) -> bool:
    for child, up in ancestors(node, parent):
        if isinstance(up, (cst.FunctionDef, cst.Lambda)):
            return False
        if isinstance(up, (cst.For, cst.While)) and child is up.body:
            return True
        if isinstance(up, cst.CompFor):
            return True
    return False


class _Try(cst.CSTVisitor):
    def __init__(self, func: cst.FunctionDef) -> None:
        super().__init__()
        self.func, self.found = func, False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.func  # a nested def is a code object of its own

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Try(self, node: cst.Try) -> bool:
        self.found = True
        return False

    visit_TryStar = visit_Try


def has_try(func: cst.FunctionDef) -> bool:
    """`func`'s own code has a `try` statement (an exception table), nested defs aside."""
    v = _Try(func)
    fastwalk.visit(func, v)
    return v.found


def in_try(node: cst.CSTNode, parent: Parent) -> bool:
    for child, up in ancestors(node, parent):
        if isinstance(up, cst.FunctionDef):
            return False
        if isinstance(up, (cst.Try, cst.TryStar)) and child is up.body:
            return True
    return False


def grad_off_expr(expr: cst.BaseExpression, b: Bindings) -> bool:
    if isinstance(expr, cst.Call):
        q = b.qualify(expr.func)
        if q in GRAD_OFF:
            return True
        if q == "torch.set_grad_enabled" and expr.args:
            v = expr.args[0].value
            return isinstance(v, cst.Name) and v.value == "False"
        return False
    return b.qualify(expr) in GRAD_OFF


def grad_disabled(node: cst.CSTNode, parent: Parent, b: Bindings) -> bool:
    """Under `with torch.no_grad()/inference_mode()` or a function decorated with them."""
    for _, up in ancestors(node, parent):
        if isinstance(up, cst.With) and any(grad_off_expr(i.item, b) for i in up.items):
            return True
        if isinstance(up, cst.FunctionDef) and any(grad_off_expr(d.decorator, b) for d in up.decorators):
            return True
    return False
