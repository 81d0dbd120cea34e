"""Shared pieces of the GM3xx rules: validation checks -> graph-native assertions.

Every fix has the same shape: the original check stays, verbatim, for eager mode, and
the compiled branch asserts the same condition as a 0-d tensor:

    if not torch.compiler.is_compiling():
        <original check>
    else:
        <graph-native assertion>

`Tensorize` turns a Python-truth condition on tensors into a tensor expression (source
text), or raises `Refused` with the reason no fix is offered.
"""
from __future__ import annotations

import ast
import builtins
import json
from typing import Callable

import libcst as cst

from .. import fastwalk
from ..analysis import tables as T
from ..analysis.bindings import dotted
from .fix import Refused
from .syntax import code

BUILTIN_EXCEPTIONS = frozenset(
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
)
# Calls a compiled-branch condition may evaluate an extra time (pure, no RNG).
_IMPURE = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "dropout", "empty",
           "empty_like", "bernoulli", "multinomial", "normal"}
_PURE_NAMES = (set(T.REDUCTIONS) | T.PREDICATES | set(T.ELEMENTWISE) | T.TENSOR_FUNCS | T.TENSOR_METHODS
               | T.STATIC_METHODS | {"isclose", "allclose", "equal", "abs"}) - _IMPURE
_SHAPE_LIKE = {"shape", "size", "stride"}


TITLE = "eager keeps the check; under compile it runs on the tensor"


def atom(node: cst.BaseExpression) -> str:
    """Source of `node`, parenthesised unless it is already an atom."""
    text = code(node)
    if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and "\n" not in text:
        return text
    if node.lpar and "\n" not in text:
        return text
    return f"({text})"


def literal(value: str) -> str:
    """A double-quoted Python string literal for `value`."""
    return json.dumps(value, ensure_ascii=False)


def _fstring_text(node: cst.FormattedString, part: cst.FormattedStringText) -> str:
    prefix = node.prefix.lower().replace("f", "")
    text = part.value.replace("{{", "{").replace("}}", "}")
    return ast.literal_eval(f"{prefix}{node.quote}{text}{node.quote}")


def message_value(node: cst.BaseExpression | None) -> tuple[str, bool] | None:
    """(text under compile, whether it is the full message) for a literal or f-string message."""
    if node is None:
        return "", True
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return (value, True) if isinstance(value, str) else None
    if isinstance(node, cst.FormattedString):
        parts = [_fstring_text(node, p) for p in node.parts if isinstance(p, cst.FormattedStringText)]
        return "".join(parts), not any(isinstance(p, cst.FormattedStringExpression) for p in node.parts)
    if isinstance(node, cst.ConcatenatedString):
        left, right = message_value(node.left), message_value(node.right)
        if left is None or right is None:
            return None
        return left[0] + right[0], left[1] and right[1]
    return None


_SIZE_CALLS = {"size", "numel", "len", "nelement"}


def _fstring_parts(node: cst.BaseExpression) -> list[cst.FormattedStringExpression] | None:
    if isinstance(node, cst.FormattedString):
        return [p for p in node.parts if isinstance(p, cst.FormattedStringExpression)]
    if isinstance(node, cst.ConcatenatedString):
        left, right = _fstring_parts(node.left), _fstring_parts(node.right)
        return None if left is None or right is None else left + right
    return [] if isinstance(node, cst.SimpleString) else None


def _size_derived(node: cst.CSTNode, facts, depth: int = 0) -> bool:
    """Reads a size (`x.shape`, `x.size()`, `numel()`, `len()`, or a name bound to one)."""
    if isinstance(node, cst.Attribute):  # the attribute's own name is no variable (`x.dtype`)
        return node.attr.value == "shape" or _size_derived(node.value, facts, depth)
    if isinstance(node, cst.Call):
        f = node.func
        name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
        if name in _SIZE_CALLS:
            return True
    if isinstance(node, cst.Name) and node.value in facts.assigned:
        values = facts.assigned[node.value]
        return depth > 3 or any(v is None or _size_derived(v, facts, depth + 1) for v in values)
    return any(_size_derived(c, facts, depth) for c in node.children)


def formattable(part: cst.FormattedStringExpression, facts) -> bool:
    """torch 2.13 formats this f-string value inside a graph (`torch._assert_async(c, f"...")`, no
    break, no recompile): a trace-time value (a dtype, `dim()`, a config number) that is not a size;
    sizes would specialise dynamic shapes (a recompile per size), tensors and torch.Size break."""
    if part.conversion is not None or (part.format_spec and not all(
            isinstance(s, cst.FormattedStringText) for s in part.format_spec)):
        return False
    if isinstance(part.expression, cst.Name) and part.expression.value in ("self", "cls"):
        return False  # the module itself: Dynamo cannot pass it to the assertion (GB "Failed to convert args")
    return (facts.value(part.expression).kind == "static" or _dtype(part.expression, facts)) \
        and not _size_derived(part.expression, facts)


def _dtype(node: cst.BaseExpression, facts, depth: int = 0) -> bool:
    """`x.dtype`, or a name bound only to one (torchvision's `dtype = tensor.dtype`): a constant
    while tracing, which torch formats inside a graph (`torch.float32`)."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "dtype"
    if isinstance(node, cst.Name) and depth < 3 and node.value in facts.assigned and node.value not in facts.params:
        values = facts.assigned[node.value]
        return bool(values) and all(v is not None and _dtype(v, facts, depth + 1) for v in values)
    return False


def compiled_message(node: cst.BaseExpression | None, facts) -> tuple[str | None, bool, str]:
    """(message source for the compiled branch, whether it keeps f-string values, a note for the
    finding when some are left out). The message must be one `message_value` accepts."""
    value = message_value(node)
    assert value is not None
    if node is None:
        return None, False, ""
    if value[1]:
        return literal(value[0]), False, ""
    parts = _fstring_parts(node) or []
    left_out = [p for p in parts if not formattable(p, facts)]
    text = code(node)
    if not left_out and "\n" not in text:
        return text, True, ""
    left_out = [p for p in left_out if _when_number(p, facts, '"') is None]
    names = ", ".join(f"`{{{code(p.expression)}}}`" for p in left_out[:3]) + (", ..." if len(left_out) > 3 else "")
    kept = _with_placeholders(node, facts)
    if not left_out:
        return kept[0], kept[1], ""
    return kept[0], kept[1], (f"; under compile the message keeps its constant parts, with a "
                              f"`<... not available under torch.compile>` placeholder: torch cannot format {names} "
                              "inside a graph (sizes and tensors)")


UNAVAILABLE = "<not available under torch.compile>"


def placeholder(part: cst.FormattedStringExpression) -> str:
    """What the compiled message shows for a value it cannot format: `<x.max(): not available ...>`."""
    name = code(part.expression)
    label = ""
    if part.equal is not None:  # `{x=}` shows "x=" before the value
        label = "".join((part.whitespace_before_expression.value, name, part.whitespace_after_expression.value,
                         part.equal.whitespace_before.value, "=", part.equal.whitespace_after.value))
    if len(name) > 40 or any(c in name for c in "{}\\\"'\n"):
        return UNAVAILABLE
    return f"{label}<{name}: {UNAVAILABLE[1:]}"


def placeholder_text(node: cst.BaseExpression | None) -> str:
    """The message's text with every f-string value replaced by its placeholder."""
    if node is None:
        return ""
    if isinstance(node, cst.SimpleString):
        return str(node.evaluated_value)
    if isinstance(node, cst.FormattedString):
        return "".join(_fstring_text(node, p) if isinstance(p, cst.FormattedStringText) else placeholder(p)
                       for p in node.parts)
    if isinstance(node, cst.ConcatenatedString):
        return placeholder_text(node.left) + placeholder_text(node.right)
    return ""


def _with_placeholders(node: cst.BaseExpression, facts) -> tuple[str, bool]:
    """(message source, whether it still formats values): a single f-string keeps the values torch
    can format inside a graph and shows a placeholder for the others; anything else is a literal."""
    bare = node.with_changes(lpar=[], rpar=[]) if isinstance(node, cst.FormattedString) else node
    if isinstance(node, cst.FormattedString) and "\n" not in code(bare) and "\\" not in code(bare):
        keep = [p for p in node.parts if isinstance(p, cst.FormattedStringExpression) and formattable(p, facts)]
        quote = "'" if '"' in node.start else '"'
        parts = [p if not isinstance(p, cst.FormattedStringExpression) or p in keep else _when_number(p, facts, quote)
                 for p in node.parts]
        if keep or any(isinstance(p, cst.FormattedStringExpression) for p in parts):
            parts = [p or cst.FormattedStringText(placeholder(orig).replace("{", "{{").replace("}", "}}"))
                     for p, orig in zip(parts, node.parts)]
            return code(bare.with_changes(parts=parts)), True
    return literal(placeholder_text(node)), False


def _when_number(part: cst.FormattedStringExpression, facts, quote: str) -> cst.FormattedStringExpression | None:
    """`{self.vocab_size}` -> `{self.vocab_size if isinstance(self.vocab_size, (int, float, str)) else
    "<self.vocab_size: not available ...>"}`: an attribute of the module that may be a number (formatted
    while tracing, a constant Dynamo guards on) or a tensor (which cannot be formatted in a graph);
    isinstance is decided while tracing. Names and sizes stay placeholders (a size would specialise
    dynamic shapes)."""
    expr = part.expression
    if part.conversion is not None or part.format_spec or not _self_attribute(expr):
        return None
    if _size_derived(expr, facts) or facts.value(expr).kind == "tensor":
        return None
    shown = placeholder(part)
    if quote in shown or "{" in shown:
        return None
    test = cst.parse_expression(f"isinstance({code(expr)}, (int, float, str))")
    return part.with_changes(expression=cst.IfExp(test=test, body=expr, orelse=cst.SimpleString(f"{quote}{shown}{quote}")))


def _self_attribute(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
        if isinstance(node, cst.Name):
            return node.value == "self"
    return False


def is_constant_message(node: cst.BaseExpression | None) -> bool:
    value = message_value(node)
    return value is not None and value[1]


class Tensorize:
    """Classify conditions and rewrite them as 0-d tensor expressions (source text)."""

    def __init__(self, facts, bindings, spell, allow_unproved: bool = False) -> None:
        self.facts = facts
        self.b = bindings
        self.spell = spell  # qualified name -> (spelling, needs_import)
        self.needs_import = False
        # allow_unproved: a 0-d tensor compared with a value not proved to be a number is kept,
        # and the missing proof is recorded (the caller makes the fix unsafe)
        self.allow_unproved = allow_unproved
        self.missing: list[str] = []
        self.number_attrs: frozenset[str] = frozenset()  # `self.x` proved a Python number (analysis.number_attrs)
        # why evaluating an operand that `and`/`or` may skip could raise or have side effects (skipped_check)
        self.skipped: Callable[[cst.BaseExpression], str | None] | None = None

    def name(self, qualified: str) -> str:
        spelled, needs = self.spell(qualified)
        self.needs_import |= needs
        return spelled

    # -- classification --------------------------------------------------------
    def equal_args(self, node: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
        """(a, b) for `torch.equal(a, b)` / `a.equal(b)`."""
        if not isinstance(node, cst.Call) or any(a.keyword or a.star for a in node.args):
            return None
        if self.b.qualify(node.func) == "torch.equal" and len(node.args) == 2:
            return node.args[0].value, node.args[1].value
        if (isinstance(node.func, cst.Attribute) and node.func.attr.value == "equal" and len(node.args) == 1
                and self.b.qualify(node.func) is None):
            return node.func.value, node.args[0].value
        return None

    def is_allclose(self, node: cst.BaseExpression) -> bool:
        if not isinstance(node, cst.Call) or any(a.star for a in node.args):
            return False
        if self.b.qualify(node.func) == "torch.allclose":
            return True
        return (isinstance(node.func, cst.Attribute) and node.func.attr.value == "allclose"
                and self.b.qualify(node.func) is None)

    def kind(self, node: cst.BaseExpression) -> str:
        """"static" (known at trace time), "tensor" (a tensor check) or "other"."""
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return self.kind(node.expression)
        if isinstance(node, cst.BooleanOperation):
            kinds = {self.kind(node.left), self.kind(node.right)}
            if "other" in kinds:
                return "other"
            return "tensor" if "tensor" in kinds else "static"
        if self.equal_args(node) is not None or self.is_allclose(node):
            return "tensor"
        value = self.facts.value(node)
        if value.is_tensor:
            return "tensor"
        return "static" if value.kind == "static" else "other"

    def scalar_static(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """A trace-time value that is a number, not a shape or a sequence."""
        if depth > 5:
            return False
        name = dotted(node) if isinstance(node, cst.Attribute) else None
        if name is not None and name.startswith("self.") and name[5:] in self.number_attrs:
            return True
        if isinstance(node, cst.Name) and node.value in self.facts.assigned:
            values = self.facts.assigned[node.value]
            if values.count(None) != self._shape_unpacks(node.value):
                return False  # bound by a loop, `with`, or an unpacking of something else
            return node.value not in self.facts.params and all(
                v is None or self.scalar_static(v, depth + 1) for v in values)
        if self.facts.value(node).kind != "static":
            return False
        if isinstance(node, (cst.Integer, cst.Float)):
            return True
        if isinstance(node, cst.UnaryOperation):
            return self.scalar_static(node.expression, depth + 1)
        if isinstance(node, (cst.Tuple, cst.List, cst.Set, cst.Dict, cst.SimpleString, cst.FormattedString)):
            return False
        if isinstance(node, cst.Attribute):
            return node.attr.value not in _SHAPE_LIKE
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in _SHAPE_LIKE:
                return bool(node.args)
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in T.STATIC_METHODS - {"type"}:
                return True  # numel(), dim(), element_size(), ...
            return isinstance(node.func, cst.Name) and node.func.value in ("len", "int", "float")
        if isinstance(node, cst.Subscript):
            return True  # x.shape[0], config["n"]
        if isinstance(node, cst.BinaryOperation):
            return self.scalar_static(node.left, depth + 1) and self.scalar_static(node.right, depth + 1)
        if isinstance(node, cst.Name):
            return node.value in self.facts.params  # a static parameter (annotated int/float)
        return False

    def _shape_unpacks(self, name: str) -> int:
        """How many `..., name, ... = x.shape` (or `x.size()`) bind `name` in this function."""
        count = [0]

        class V(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False  # nested functions have their own names

            def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                return False

            def visit_Assign(self, node: cst.Assign) -> None:
                v = node.value
                shape = (isinstance(v, cst.Attribute) and v.attr.value == "shape") or (
                    isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute)
                    and v.func.attr.value == "size" and not v.args)
                for t in node.targets:
                    if shape and isinstance(t.target, (cst.Tuple, cst.List)) and all(
                            isinstance(e, cst.Element) for e in t.target.elements):
                        count[0] += sum(isinstance(e.value, cst.Name) and e.value.value == name
                                        for e in t.target.elements)

        fastwalk.visit(self.facts.func.body, V())
        return count[0]

    def zero_dim(self, node: cst.BaseExpression) -> bool:
        value = self.facts.value(node)
        if value.is_tensor and value.zero_dim:
            return True
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            ops = [node.left, node.comparisons[0].comparator]
        elif isinstance(node, cst.BinaryOperation):
            ops = [node.left, node.right]
        else:
            return False
        tensors = [o for o in ops if self.facts.value(o).is_tensor]
        return bool(tensors) and all(self.zero_dim(o) if o in tensors else self.scalar_static(o) for o in ops)

    def _unproved_number(self, node: cst.BaseExpression) -> str | None:
        """`t > self.limit` with `t` 0-d: the test is one value if `self.limit` is a number, which is not proved."""
        if not (isinstance(node, cst.Comparison) and len(node.comparisons) == 1):
            return None
        for t, other in ((node.left, node.comparisons[0].comparator), (node.comparisons[0].comparator, node.left)):
            if self.zero_dim(t) and not self.facts.value(other).is_tensor and isinstance(other, (cst.Name, cst.Attribute)):
                return f"`{code(other)}` is not provably a Python number, so the condition is not provably a single value"
        return None

    def pure(self, node: cst.BaseExpression) -> bool:
        """Every call in `node` is a known side-effect-free torch op."""
        calls: list[cst.Call] = []

        class V(cst.CSTVisitor):
            def visit_Call(self, c: cst.Call) -> None:
                calls.append(c)

        fastwalk.visit(node, V())
        for c in calls:
            f = c.func
            short = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
            if short not in _PURE_NAMES and short not in T.PURE_BUILTINS:
                return False
        return True

    def check_skipped(self, node: cst.BaseExpression) -> None:
        """Refuse when `node`, which Python's `and`/`or` may skip, could raise where it is skipped
        (`label.min()` of an empty tensor): torch.logical_and/or evaluate every operand."""
        why = self.skipped(node) if self.skipped is not None else None
        if why:
            raise Refused(f"`and`/`or` would evaluate `{code(node)}`, which Python may skip: {why}")

    # -- rewriting -------------------------------------------------------------
    def truth(self, node: cst.BaseExpression) -> str:
        """A 0-d tensor expression whose truth is `bool(node)`."""
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            inner = node.expression
            if isinstance(inner, cst.UnaryOperation) and isinstance(inner.operator, cst.Not):
                return self.truth(inner.expression)
            return f"{self.name('torch.logical_not')}({self.truth(inner)})"
        if isinstance(node, cst.BooleanOperation):
            if self.kind(node.left) != "tensor" or self.kind(node.right) != "tensor":
                raise Refused("the condition mixes a trace-time test into a tensor test")
            if not (self.pure(node.left) and self.pure(node.right)):
                raise Refused("`and`/`or` would evaluate a call that Python may skip")
            self.check_skipped(node.right)
            func = "torch.logical_and" if isinstance(node.operator, cst.And) else "torch.logical_or"
            return f"{self.name(func)}({self.truth(node.left)}, {self.truth(node.right)})"
        if self.equal_args(node) is not None:
            raise Refused("`torch.equal` is handled only as `not torch.equal(a, b)`")
        if self.is_allclose(node):
            call = node  # allclose(a, b, ...) == isclose(a, b, ...).all(), broadcasting included
            assert isinstance(call, cst.Call)
            args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in call.args]
            if isinstance(call.func, cst.Attribute) and self.b.qualify(call.func) is None:
                func = call.func.with_changes(attr=cst.Name("isclose"))
            else:
                func = cst.parse_expression(self.name("torch.isclose"))
            return f"{code(cst.Call(func, args))}.all()"
        if self.kind(node) != "tensor":
            raise Refused("the condition is not a tensor test")
        if not self.zero_dim(node):
            why = self._unproved_number(node) if self.allow_unproved else None
            if why is None:
                raise Refused("the condition is not provably a single value (a 0-d tensor)")
            self.missing.append(why)
        text = code(node)  # used as a call argument: no parentheses needed
        return text if "\n" not in text or node.lpar else f"({text})"

    def negate(self, node: cst.BaseExpression) -> str:
        """A 0-d tensor expression whose truth is `not bool(node)`."""
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return self.truth(node.expression)
        return f"{self.name('torch.logical_not')}({self.truth(node)})"


# -- building the fix ------------------------------------------------------------
def operand(node: cst.BaseExpression) -> str:
    """Source of `node` as an operand of `and`."""
    text = code(node)
    if "\n" in text or isinstance(node, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)):
        return text if node.lpar and "\n" not in text else f"({text})"
    return text


def branches(cases: list[tuple[str | None, list[str]]]) -> cst.If | cst.Else:
    """`elif test: stmts` ... / `else: stmts` clauses (test None = else) from source text."""
    text = "if True:\n    pass\n"
    for test, stmts in cases:
        text += (f"elif {test}:\n" if test is not None else "else:\n")
        text += "".join(f"{_indented(s)}\n" for s in stmts)
    node = cst.parse_statement(text)
    assert isinstance(node, cst.If) and node.orelse is not None
    return node.orelse


def _indented(stmt: str) -> str:
    """`stmt` one level in; its continuation lines too (a multi-line `raise E(...)` keeps its layout),
    unless a string could span them (triple quotes, a backslash at a line's end: its text must not change)."""
    if '"""' in stmt or "'''" in stmt or "\\\n" in stmt:  # or a backslash-continued string
        return "    " + stmt
    return "\n".join("    " + line if line.strip() else line for line in stmt.split("\n"))


def eager_split(original: cst.BaseCompoundStatement | cst.SimpleStatementLine, is_compiling: str,
                compiled: cst.If | cst.Else) -> cst.If:
    """`if not is_compiling(): <original>` + the compiled branch, comments above kept."""
    return cst.If(
        test=cst.parse_expression(f"not {is_compiling}()"),
        body=cst.IndentedBlock([original.with_changes(leading_lines=())]),
        orelse=compiled,
        leading_lines=original.leading_lines,
    )


def module_defines(module: cst.Module, name: str) -> bool:
    """A top-level class, function or assignment binds `name` (e.g. shadows a builtin)."""
    for stmt in module.body:
        if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)) and stmt.name.value == name:
            return True
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and any(
                        isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets):
                    return True
    return False


def skipped_check(rule, node: cst.CSTNode, func: cst.FunctionDef) -> Callable[[cst.BaseExpression], str | None]:
    """Tensorize.skipped for `node` in `func`: the totality walk of the where fixes (where/total.py),
    which knows what raises on an empty tensor, a dim or a dtype; any missing proof refuses here."""
    from .where.proof import Prover

    provers: list = []

    def why(e: cst.BaseExpression) -> str | None:
        if not provers:
            provers.append(Prover(rule, node, func))
        v = provers[0].total(e)
        reason = v.refuse or (v.missing[0] if v.missing else None)
        return reason.replace(" when its branch is not taken", "") if reason else None

    return why
