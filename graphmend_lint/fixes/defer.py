"""`log-strategy = "defer"`: print, logging and warnings emitted under compile after the graph,
with the values their arguments had at the call.

Fixed code (torch + stdlib only):

    @torch.compiler.disable
    def _graphmend_print(*args):
        print(*args)


    torch._dynamo.config.reorderable_logging_functions.add(_graphmend_print)
    ...
            if not torch.compiler.is_compiling():
                print("mean", h)
            else:
                _graphmend_print("mean", h.detach().clone())

Only the helpers are registered (not `print` itself), so no other code is reordered.
Measured on torch 2.13 (see rules/GM201.md, GM202.md, GM203.md): reordering replays positional
arguments only, and only tensors, constants and format strings (a Logger object or a warning
class breaks: the helpers take the logger's name and the category's name), tensors are read at
the end of the graph (hence the clone), and the helpers run under `torch.compiler.disable` so
that Dynamo does not trace them when they are replayed. Calls deferred in frames Dynamo
inlines are not replayed (torch 2.13 keeps only the compiled frame's): there, as with the
guard, nothing is emitted under compile.
"""
from __future__ import annotations

import re

import libcst as cst

from ..analysis import context
from . import build
from .syntax import code

HELPER = "_graphmend_print"
LOG_HELPER = "_graphmend_log"
WARN_HELPER = "_graphmend_warn"
HELPERS = {"print": HELPER, "log": LOG_HELPER, "warn": WARN_HELPER}
_BODIES = {
    "print": ("*args", "print() deferred by graphmend-lint: torch.compile runs it after the graph",
              ["print(*args)"]),
    "log": ("name, method, *args",
            "a logging call deferred by graphmend-lint: torch.compile runs it after the graph",
            ["import logging", "", "getattr(logging if name is None else logging.getLogger(name), method)(*args)"]),
    "warn": ("message, category",
             "warnings.warn() deferred by graphmend-lint: torch.compile runs it after the graph",
             ["import builtins", "import warnings", "", "warnings.warn(message, getattr(builtins, category))"]),
}


def _fstring_static(node: cst.FormattedString, value) -> bool:
    for part in node.parts:
        if isinstance(part, cst.FormattedStringExpression):
            if value(part.expression).kind != "static" or _calls_item(part.expression):
                return False
            if part.format_spec and not all(isinstance(p, cst.FormattedStringText) for p in part.format_spec):
                return False
    return True


def _calls_item(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("item", "tolist"):
        return True
    return any(_calls_item(c) for c in node.children)


def _snapshot(expr: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(cst.Call(cst.Attribute(expr, cst.Name("detach"))), cst.Name("clone")))


def _pure_read(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) or (isinstance(expr, cst.Attribute) and _pure_read(expr.value))


def exception_names(node: cst.CSTNode, parent) -> frozenset[str]:
    """Names bound by the `except ... as e` handlers around `node` in its function: exceptions,
    which Dynamo does not reorder into a deferred call (the graph still breaks there)."""
    names = set()
    for _, up in context.ancestors(node, parent):
        if isinstance(up, (cst.FunctionDef, cst.Lambda)):
            break
        if isinstance(up, cst.ExceptHandler) and up.name is not None and isinstance(up.name.name, cst.Name):
            names.add(up.name.name.value)
    return frozenset(names)


def deferred_args(call: cst.Call, value, tensor_type: str, unusable: frozenset[str] = frozenset()) -> list[cst.Arg] | None:
    """Arguments for the helper (tensors cloned), or None when the call cannot be deferred:
    keywords and `*`/`**` (the reordering drops them), computed values that are neither
    tensors nor known at trace time, names in `unusable` (exception_names), and anything
    reading tensor data (`.item()` breaks anyway). A plain name or attribute of unknown type is
    cloned only if it is a tensor."""
    out = []
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            return None
        expr = arg.value
        if isinstance(expr, cst.Name) and expr.value in unusable:
            return None
        if _calls_item(expr) or "\n" in code(expr):  # a multi-line argument: its layout would not follow
            return None
        if isinstance(expr, cst.FormattedString):
            if not _fstring_static(expr, value):
                return None
            out.append(cst.Arg(expr))
            continue
        kind = value(expr).kind
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
            out.append(cst.Arg(expr))
        elif kind == "static":
            # `x.shape` reaches the reordering as a SizeVariable, which it refuses; an
            # f-string is accepted and prints the same text (format(v, "") == str(v)).
            text = code(expr)
            if "'" in text or '"' in text:
                return None
            out.append(cst.Arg(cst.FormattedString([cst.FormattedStringExpression(expr)])))
        elif kind == "tensor":
            out.append(cst.Arg(_snapshot(expr)))
        elif _pure_read(expr):  # a tensor or not: decided at trace time, where isinstance is static
            test = cst.Call(cst.Name("isinstance"), [cst.Arg(expr), cst.Arg(build.expr(tensor_type))])
            out.append(cst.Arg(cst.IfExp(test=test, body=_snapshot(expr), orelse=expr)))
        else:
            return None
    return out


BUILTIN_WARNINGS = frozenset({
    "Warning", "UserWarning", "DeprecationWarning", "PendingDeprecationWarning", "SyntaxWarning",
    "RuntimeWarning", "FutureWarning", "ImportWarning", "UnicodeWarning", "BytesWarning", "ResourceWarning",
    "EncodingWarning",
})
_ONLY_S = re.compile(r"%(?!%|s)")


def log_args(call: cst.Call, name: cst.BaseExpression, method: str, value, tensor_type: str,
             unusable: frozenset[str] = frozenset()) -> list[cst.Arg] | None:
    """`_graphmend_log(<logger name>, "<method>", <args>)`'s arguments, or None. A value known
    at trace time reaches the record as text (`f"{v}"`), so the format must then be a literal
    whose every conversion is `%s` (`%d` of a text raises inside logging)."""
    args = deferred_args(call, value, tensor_type, unusable)
    if args is None:
        return None
    fmt = 1 if method == "log" else 0
    if len(call.args) <= fmt:
        return None
    texted = any(a.value is not b.value and isinstance(a.value, cst.FormattedString)
                 for a, b in zip(args[fmt + 1:], call.args[fmt + 1:]))
    if texted:
        literal = call.args[fmt].value
        if not isinstance(literal, cst.SimpleString) or _ONLY_S.search(literal.evaluated_value or "%d"):
            return None
    return [cst.Arg(name), cst.Arg(cst.SimpleString(f'"{method}"')), *args]


def constant_args(args: list[cst.Arg]) -> bool:
    """Every argument is a literal or an f-string (the same text on every call)."""
    return all(isinstance(a.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer,
                                    cst.Float)) for a in args)


def builtin_category(call: cst.Call, module: cst.Module, bindings) -> str | None:
    """The name of the call's warning category when it is a builtin class the module does not
    rebind ("UserWarning" when none is given), else None; None too for arguments the helper
    cannot pass on (`source=`, `skip_file_prefixes=`, more than three positional)."""
    if any(a.star for a in call.args) or len(call.args) > 3:
        return None
    if any(a.keyword is not None and a.keyword.value not in ("message", "category", "stacklevel") for a in call.args):
        return None
    positional = [a for a in call.args if a.keyword is None]
    given = [a.value for a in positional[1:2] + [a for a in call.args if a.keyword and a.keyword.value == "category"]]
    if not given:
        return "UserWarning"
    cat = given[0]
    if not isinstance(cat, cst.Name) or cat.value not in BUILTIN_WARNINGS or bindings.qualify(cat) is not None:
        return None
    if cat.value in _module_names(module):
        return None
    return cat.value


def _module_names(module: cst.Module) -> set[str]:
    names: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
            names.add(stmt.name.value)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
    return names


def warn_args(call: cst.Call, category: str, value, tensor_type: str,
              unusable: frozenset[str] = frozenset()) -> list[cst.Arg] | None:
    """`_graphmend_warn(<message>, "<category>")`'s arguments, or None (the caller has checked
    that the category is a builtin warning class; `stacklevel` only moves the reported line,
    which under compile is the helper's anyway)."""
    message = [a for a in call.args if a.keyword is None or a.keyword.value == "message"][:1]
    if not message:
        return None
    args = deferred_args(cst.Call(call.func, [message[0].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)]),
                         value, tensor_type, unusable)
    if args is None:
        return None
    return [*args, cst.Arg(cst.SimpleString(f'"{category}"'))]


def site(line: cst.SimpleStatementLine, args: list[cst.Arg], is_compiling: str, kind: str = "print", *,
         compiled_only: bool = False) -> cst.BaseStatement:
    """`if not is_compiling(): <line>` + `else: _graphmend_<kind>(<args>)`; where the line runs only
    under compile, the helper call alone (a guard there would be dead code)."""
    deferred = cst.SimpleStatementLine([cst.Expr(cst.Call(cst.Name(HELPERS[kind]), args=_commas(args)))])
    if compiled_only:
        return deferred.with_changes(leading_lines=line.leading_lines, trailing_whitespace=line.trailing_whitespace)
    guarded = build.guard_statement(line, is_compiling)
    return guarded.with_changes(orelse=cst.Else(body=cst.IndentedBlock(body=[deferred])))


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    return [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]


def helper(disable: str, reorderable: str, kind: str = "print") -> list[cst.BaseStatement]:
    params, doc, lines = _BODIES[kind]
    text = "".join(f"    {line}\n" if line else "\n" for line in lines)
    code = (
        f"@{disable}\n"
        f"def {HELPERS[kind]}({params}):\n"
        f"    # {doc}\n"
        f"{text}"
        f"\n\n"
        f"{reorderable}.add({HELPERS[kind]})\n"
    )
    body = list(cst.parse_module(code).body)
    two_blank = [cst.EmptyLine(), cst.EmptyLine()]
    body[1] = body[1].with_changes(leading_lines=two_blank)
    return body


class ReplaceLines(cst.CSTTransformer):
    """Replace statement lines (by identity) inside one top-level statement."""

    def __init__(self, replacements: dict) -> None:
        self.replacements = replacements

    def leave_SimpleStatementLine(self, original, updated):  # type: ignore[override]
        return self.replacements.get(original, updated)
