"""The passes over fixed code that make it read as a maintainer would write it (engine.finish).

Only lines the fixes changed are touched, and each pass must leave Python's AST as it was
(checked; on any difference the pass is dropped):

- `merge_guards`: two adjacent `if not <is_compiling>():` blocks (no blank line or comment
  between) become one;
- `wrap`: lines longer than `line-length` are split the way `ruff format` splits them
  (at the last bracket; the contents on one line if they fit, else one item a line with a
  trailing comma; `and`/`or` and operators split before the operator), so the output is stable
  under `ruff format`;
- `add_import`: `import torch` goes where isort (ruff's I001) puts it: among the straight
  imports of the third-party section, before its `from` imports.
"""
from __future__ import annotations

import ast
import difflib
import re
import sys
from typing import Callable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .. import fastwalk
from .syntax import code, strip_parens

INDENT = "    "




def module_code(module: cst.Module) -> str:
    """`module.code`; the engine passes its file context's `code` instead (generated once per module)."""
    return module.code


def line_changes(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """(i1, i2, j1, j2) of each changed run: `old[i1:i2]` became `new[j1:j2]` (difflib's opcodes
    other than "equal"). The lines both share at the start and at the end are set aside first:
    a fix changes a few lines of a long file, and difflib's cost grows with what it compares."""
    n = min(len(old), len(new))
    head = 0
    while head < n and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < n - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    a, b = old[head:len(old) - tail], new[head:len(new) - tail]
    return [(i1 + head, i2 + head, j1 + head, j2 + head)
            for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
            if op != "equal"]


def changed_lines(before: str, after: str) -> set[int]:
    """1-based numbers of the lines of `after` that are not in `before` (by difflib)."""
    out: set[int] = set()
    for _, _, j1, j2 in line_changes(before.splitlines(), after.splitlines()):
        out.update(range(j1 + 1, j2 + 1))
    return out


def same_ast(a: str, b: str) -> bool:
    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except SyntaxError:
        return False


# -- merging adjacent guards ------------------------------------------------------------
_GUARD = re.compile(r"not [\w.]*is_\w*compiling\(\)")
_GUARD_LINE = re.compile(r"\s*if not [\w.]*is_\w*compiling\(\):\s*$")


def _guard_test(stmt: cst.CSTNode) -> str | None:
    if (isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.body, cst.IndentedBlock)
            and stmt.body.header.comment is None):
        text = code(stmt.test)
        if _GUARD.fullmatch(text):
            return text
    return None


class _Merge(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, lines: set[int]) -> None:
        super().__init__()
        self.lines = lines

    def _touched(self, node: cst.CSTNode) -> bool:
        pos = self.get_metadata(PositionProvider, node)
        return any(n in self.lines for n in range(pos.start.line, pos.end.line + 1))

    def _merge(self, original: list, updated: list) -> list:
        out: list = []
        prev_orig = None
        for orig, stmt in zip(original, updated):
            test = _guard_test(stmt)
            if (out and prev_orig is not None and test is not None and _guard_test(out[-1]) == test
                    and not stmt.leading_lines and (self._touched(orig) or self._touched(prev_orig))):
                last = out[-1]
                out[-1] = last.with_changes(body=last.body.with_changes(body=[*last.body.body, *stmt.body.body]))
                continue
            out.append(stmt)
            prev_orig = orig
        return out

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        if len(updated.body) == len(original.body):
            return updated.with_changes(body=self._merge(list(original.body), list(updated.body)))
        return updated


def merge_guards(module: cst.Module, lines: set[int], code_of: Callable[[cst.Module], str] = module_code) -> cst.Module:
    """`code_of`: a module's code (the file context's, which keeps it)."""
    text = code_of(module).split("\n")
    guards = [n for n, line in enumerate(text, 1) if _GUARD_LINE.match(line)]
    if not any(n in lines for n in guards) or len(guards) < 2:  # nothing to merge: skip the walk
        return module
    return MetadataWrapper(module, unsafe_skip_copy=True).visit(_Merge(lines))


# -- wrapping long lines ----------------------------------------------------------------
class _NoLayout(Exception):
    """This expression is left as it is."""


def _flat(node: cst.CSTNode) -> str:
    text = code(node)
    if "\n" in text:
        raise _NoLayout
    return text


_PRIORITY = [  # lowest binding first: ruff splits at the lowest-priority operator present
    (cst.BooleanOperation, (cst.Or,)), (cst.BooleanOperation, (cst.And,)),
    (cst.Comparison, None),
    (cst.BinaryOperation, (cst.BitOr,)), (cst.BinaryOperation, (cst.BitXor,)), (cst.BinaryOperation, (cst.BitAnd,)),
    (cst.BinaryOperation, (cst.LeftShift, cst.RightShift)),
    (cst.BinaryOperation, (cst.Add, cst.Subtract)),
    (cst.BinaryOperation, (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.MatrixMultiply)),
]


def _chain(node: cst.BaseExpression, kind, ops) -> list[tuple[str, cst.BaseExpression]] | None:
    """[("", first), ("and ", second), ...] when `node` is an unparenthesised chain of one level."""
    if getattr(node, "lpar", None) or not isinstance(node, kind):
        return None
    if kind is cst.Comparison:
        if len(node.comparisons) != 1:
            return None
        op = code(node.comparisons[0].operator).strip()
        return [("", node.left), (f"{op} ", node.comparisons[0].comparator)]
    if not isinstance(node.operator, ops):
        return None
    left = _chain(node.left, kind, ops) or [("", node.left)]
    op = code(node.operator).strip()
    return left + [(f"{op} ", node.right)]


class Wrapper:
    """Black's and ruff's right-hand split, for the expressions fixes produce."""

    def __init__(self, line_length: int, unit: str = INDENT) -> None:
        self.width = line_length
        self.unit = unit  # one indentation level: four spaces, or the file's tab

    def fits(self, text: str) -> bool:
        tabs = len(text) - len(text.lstrip("\t"))
        return "\n" not in text and len(text) + 3 * tabs <= self.width  # a tab counts four, as in ruff

    def fmt(self, expr: cst.BaseExpression, prefix: str, suffix: str, indent: str,
            parens_ok: bool = False, bare_pair: bool = False) -> list[str]:
        """Lines (indented) for `prefix + expr + suffix`. `bare_pair`: a tuple of two may stay bare
        (a `return`; ruff parenthesises the tuple an assignment binds)."""
        flat = indent + prefix + _flat(expr) + suffix
        if self.fits(flat):
            return [flat]
        if isinstance(expr, cst.Tuple) and not expr.lpar and len(expr.elements) > 1 and parens_ok and \
                not isinstance(expr.elements[-1].comma, cst.Comma) and self.fits(indent + prefix + "("):
            # ruff (black) keeps a returned pair `a(...), b(...)` bare and splits its brackets; more
            # elements, a last one that is no call, or an assignment's tuple go inside parentheses
            last = expr.elements[-1].value
            bare = bare_pair and len(expr.elements) == 2 and isinstance(last, cst.Call) and not last.lpar and \
                all(type(e) is cst.Element for e in expr.elements)  # no `*a`
            got = self._bare_tuple(expr, prefix, suffix, indent) if bare else None
            return got or self._explode(indent + prefix + "(", list(expr.elements), ")" + suffix, indent)
        for head, items, close in _candidates(expr):  # the last bracket whose head line fits
            first = indent + prefix + head
            if self.fits(first):
                return self._explode(first, items, close + suffix, indent)
        if parens_ok and _operator_chain(expr) is not None and self.fits(indent + prefix + "("):
            inner = indent + self.unit
            return [indent + prefix + "(", *self._inner(expr, "", "", inner), indent + ")" + suffix]
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.fmt(expr.expression, f"{prefix}not ", suffix, indent)
        bare = expr.with_changes(lpar=[], rpar=[]) if len(getattr(expr, "lpar", ())) == 1 else None
        if bare is not None and _operator_chain(bare) is not None and self.fits(indent + prefix + "("):
            inner = indent + self.unit  # a parenthesised chain: its operands a line each, as ruff does
            return [indent + prefix + "(", *self._inner(bare, "", "", inner), indent + ")" + suffix]
        return [flat]

    def _bare_tuple(self, expr: cst.Tuple, prefix: str, suffix: str, indent: str) -> list[str] | None:
        """`return a(...), b(...)` (a pair) as ruff splits it: the second element's bracket whose head
        line fits, else the first one's, then the second after its closing bracket, split the same way."""
        first_el, second = (e.value for e in expr.elements)
        for head, items, close in _candidates(second):
            start = indent + prefix + _flat(first_el) + ", " + head
            if self.fits(start):
                return self._explode(start, items, close + suffix, indent)
        for head, items, close in _candidates(first_el):
            start = indent + prefix + head
            if self.fits(start):
                return self._explode(start, items, "", indent)[:-1] + self.fmt(second, close + ", ", suffix, indent)
        return None

    def _explode(self, first: str, items: list, tail: str, indent: str) -> list[str]:
        inner = indent + self.unit
        one = inner + ", ".join(_item_text(i) for i in items)
        if self.fits(one):  # the contents on one line of their own
            return [first, one, indent + tail]
        if len(items) == 1:
            pre, node = _item_parts(items[0])
            alone = self._inner(node, pre, "", inner)
            if len(alone) == 1 or isinstance(node, cst.GeneratorExp):  # a sole item that cannot split (a long
                return [first, *alone, indent + tail]  # string), or a generator: no trailing comma
        body: list[str] = []
        for item in items:  # one a line, each with a (magic) trailing comma
            pre, node = _item_parts(item)
            body += self._inner(node, pre, ",", inner)
        return [first, *body, indent + tail]

    def _inner(self, expr, prefix: str, suffix: str, indent: str) -> list[str]:
        """Inside brackets: split at the lowest-priority operator, else at a bracket."""
        flat = indent + prefix + _flat(expr) + suffix
        if self.fits(flat):
            return [flat]
        chain = _operator_chain(expr)
        if chain is None:
            return self.fmt(expr, prefix, suffix, indent)
        out: list[str] = []
        for n, (op, operand) in enumerate(chain):  # each operand split again at its own operators
            pre = (prefix if n == 0 else "") + op
            out += self._inner(operand, pre, suffix if n == len(chain) - 1 else "", indent)
        return out


def _item_parts(item) -> tuple[str, cst.BaseExpression]:
    """(text before the value, the value) of an argument or element."""
    if isinstance(item, cst.Arg):
        return f"{item.star}{item.keyword.value + '=' if item.keyword is not None else ''}", item.value
    if isinstance(item, cst.StarredElement):
        return "*", item.value
    if isinstance(item, cst.Element):
        return "", item.value
    raise _NoLayout


def _item_text(item) -> str:
    pre, node = _item_parts(item)
    return pre + _flat(node)


def _candidates(expr: cst.BaseExpression, after: str = ""):
    """(head, items, close) split points of a trailer chain `a.b(c)[d].e(f)`, last bracket first."""
    if getattr(expr, "lpar", None):
        return
    if isinstance(expr, cst.Call):
        if expr.args and not isinstance(expr.args[-1].comma, cst.Comma):  # a magic comma is the user's
            yield _flat(expr.func) + "(", list(expr.args), ")" + after
        args = ", ".join(_item_text(a) for a in expr.args)
        yield from _candidates(expr.func, f"({args}){after}")
    elif isinstance(expr, cst.Attribute):
        yield from _candidates(expr.value, f".{expr.attr.value}{after}")
    elif isinstance(expr, cst.Subscript):
        yield from _candidates(expr.value, f"[{code(expr.slice[0]) if len(expr.slice) == 1 else None}]{after}") \
            if len(expr.slice) == 1 else iter(())
    elif isinstance(expr, cst.List) and expr.elements and not isinstance(expr.elements[-1].comma, cst.Comma):
        yield "[", list(expr.elements), "]" + after


def _operator_chain(expr) -> list[tuple[str, cst.BaseExpression]] | None:
    if isinstance(expr, cst.IfExp) and not expr.lpar:  # the lowest priority: `a if c else b`, a part a line
        return [("", expr.body), ("if ", expr.test), ("else ", expr.orelse)]
    if isinstance(expr, cst.GeneratorExp) and not expr.lpar:  # a call's sole argument: a clause a line
        parts: list[tuple[str, cst.BaseExpression]] = [("", expr.elt)]
        clause = expr.for_in
        while clause is not None:
            if clause.asynchronous is not None:
                raise _NoLayout
            parts.append((f"for {_flat(clause.target)} in ", clause.iter))
            parts += [("if ", c.test) for c in clause.ifs]
            clause = clause.inner_for_in
        return parts
    for kind, ops in _PRIORITY:
        chain = _chain(expr, kind, ops)
        if chain is not None:
            return chain
    return None


def _statement_lines(w: Wrapper, stmt: cst.BaseSmallStatement, indent: str) -> list[str] | None:
    if isinstance(stmt, cst.Expr):
        return w.fmt(stmt.value, "", "", indent)
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        return w.fmt(stmt.value, _flat(stmt.targets[0].target) + " = ", "", indent, parens_ok=True)
    if isinstance(stmt, cst.AugAssign):
        return w.fmt(stmt.value, f"{_flat(stmt.target)} {code(stmt.operator).strip()} ", "", indent, parens_ok=True)
    if isinstance(stmt, cst.Return) and stmt.value is not None:
        return w.fmt(stmt.value, "return ", "", indent, parens_ok=True, bare_pair=True)
    if isinstance(stmt, cst.Raise) and stmt.exc is not None and stmt.cause is None:
        return w.fmt(stmt.exc, "raise ", "", indent)
    if isinstance(stmt, cst.Assert) and stmt.msg is not None:
        head = f"assert {_flat(stmt.test)}, "
        if not w.fits(indent + head + "("):  # ruff splits the test: `assert f(\n    ...\n), "msg"`
            lines = w.fmt(stmt.test, "assert ", ", " + _flat(stmt.msg), indent)
            return lines if len(lines) > 1 and all(w.fits(line) for line in lines) else None
        if w.fits(indent + head + _flat(stmt.msg)) or next(_candidates(stmt.msg), None) is not None:
            return w.fmt(stmt.msg, head, "", indent)
        return [indent + head + "(", *w._inner(strip_parens(stmt.msg), "", "", indent + w.unit), indent + ")"]
    return None


class _Long(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, w: Wrapper, lines: list[str], touched: set[int]) -> None:
        super().__init__()
        self.w, self.lines, self.touched = w, lines, touched
        self.edits: dict[int, list[str]] = {}  # 1-based line -> its replacement lines
        self.first, self.last = min(touched), max(touched)

    def on_visit(self, node: cst.CSTNode) -> bool:
        """The hooks below, walking only into compound statements that span a touched line
        (a statement lies within the lines of the statements around it)."""
        if isinstance(node, cst.SimpleStatementLine):
            self.visit_SimpleStatementLine(node)
            return False  # no statement inside
        if isinstance(node, cst.If):
            self.visit_If(node)
        elif isinstance(node, cst.While):
            self.visit_While(node)
        if isinstance(node, cst.BaseCompoundStatement):
            pos = self.get_metadata(PositionProvider, node)
            a, b = pos.start.line, pos.end.line
            return b >= self.first and a <= self.last and any(a <= n <= b for n in self.touched)
        return True

    def _candidate(self, node: cst.CSTNode, comment: str = "") -> tuple[int, str] | None:
        """(line, indentation) of a long touched line; `comment`: the statement's own trailing
        comment, which may end the line (no other `#`)."""
        pos = self.get_metadata(PositionProvider, node)
        n = pos.start.line
        if n not in self.touched or n in self.edits:
            return None
        text = self.lines[n - 1]
        if comment and text.endswith(comment):
            text = text[: -len(comment)].rstrip()
        if self.w.fits(text) or "#" in text:
            return None
        return n, text[: len(text) - len(text.lstrip())]

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) != 1:
            return
        found = self._candidate(node)
        if found is None:
            return
        n, indent = found
        pos = self.get_metadata(PositionProvider, node)
        if pos.end.line != n:
            return
        try:
            lines = _statement_lines(self.w, node.body[0], indent)
        except _NoLayout:
            return
        if lines and len(lines) > 1:
            self.edits[n] = lines

    def visit_If(self, node: cst.If) -> None:
        self._header(node, node.test)

    def visit_While(self, node: cst.While) -> None:
        self._header(node, node.test)

    def _header(self, node, test) -> None:
        if not isinstance(node.body, cst.IndentedBlock):
            return
        comment = node.body.header.comment.value if node.body.header.comment else ""
        found = self._candidate(node, comment)
        if found is None:
            return
        n, indent = found
        text = self.lines[n - 1].strip()
        if comment:  # ruff keeps a header's trailing comment after the closing `):`
            text = text[: -len(comment)].rstrip()
        keyword = text.split(" ", 1)[0]
        try:
            if keyword not in ("if", "elif", "while") or text != f"{keyword} {_flat(test)}:":
                return
            lines = self.w.fmt(test, f"{keyword} ", ":", indent, parens_ok=True)
        except _NoLayout:
            return
        if len(lines) > 1:
            self.edits[n] = lines[:-1] + [f"{lines[-1]}  {comment}" if comment else lines[-1]]


def wrap(module: cst.Module, touched: set[int], line_length: int,
         code_of: Callable[[cst.Module], str] = module_code) -> cst.Module:
    """`code_of`: a module's code (the file context's, which keeps it)."""
    source = code_of(module)
    crlf = module.default_newline == "\r\n" and source.count("\n") == source.count("\r\n")
    if "\r" in source and not crlf:
        return module  # lone CR or mixed line endings: left as they are
    if crlf:
        source = source.replace("\r\n", "\n")
    lines = source.split("\n")
    w = Wrapper(line_length, "\t" if module.default_indent == "\t" else INDENT)
    if not any(n <= len(lines) and not w.fits(lines[n - 1]) for n in touched):
        return module  # no long line among those the fixes changed
    visitor = _Long(w, lines, touched)
    visitor.metadata = {PositionProvider: fastwalk.LazyPositions(module)}  # PositionProvider's, cheaper
    try:
        fastwalk.visit(module, visitor)
    finally:
        visitor.metadata = {}
    if not visitor.edits:
        return module
    for n in sorted(visitor.edits, reverse=True):
        lines[n - 1:n] = visitor.edits[n]
    new = "\n".join(lines)
    if not same_ast(source, new):
        return module
    return cst.parse_module((new.replace("\n", "\r\n") if crlf else new).encode(module.encoding))


# -- placing `import torch` ---------------------------------------------------------------
def _top_name(stmt: cst.SimpleStatementLine) -> tuple[str, str, str] | None:
    """(section, kind, module) of a top-level import line: section stdlib/third/local/future."""
    if len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Import):
        name = code(small.names[0].name)
        kind = "import"
    elif isinstance(small, cst.ImportFrom):
        if small.relative:
            return "local", "from", "." * len(small.relative) + (code(small.module) if small.module else "")
        name = code(small.module) if small.module is not None else ""
        kind = "from"
    else:
        return None
    top = name.split(".")[0]
    if top == "__future__":
        return "future", kind, name
    section = "stdlib" if top in sys.stdlib_module_names else "third"
    return section, kind, name


def _blank_lead(stmt: cst.CSTNode, n: int) -> cst.CSTNode:
    """`stmt` with at least `n` blank lines before it (its comments kept after them)."""
    lead = list(stmt.leading_lines)
    blanks = 0
    for line in lead:
        if line.comment is not None:
            break
        blanks += 1
    return stmt.with_changes(leading_lines=[cst.EmptyLine()] * max(0, n - blanks) + lead)


def add_import(module: cst.Module, name: str = "torch") -> cst.Module:
    """Add `import <name>` (a third-party module, or a stdlib one after other stdlib imports) where
    ruff's isort would put it."""
    body = list(module.body)
    start = 0
    first = body[0] if body else None
    if (isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Expr)
            and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))):
        start = 1  # after the module docstring
    imports = []  # (index, section, kind, module) of the leading import block
    for i in range(start, len(body)):
        info = _top_name(body[i]) if isinstance(body[i], cst.SimpleStatementLine) else None
        if info is None:
            break
        imports.append((i, *info))
    new = cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.Name(name))])])
    stdlib = [x for x in imports if x[1] == "stdlib"]
    if name in sys.stdlib_module_names and stdlib:  # `import math`: in the stdlib section, sorted
        at = next((i for i, _, kind, mod in stdlib if kind == "from" or mod.lower() > name), stdlib[-1][0] + 1)
        if at == stdlib[0][0]:
            new = new.with_changes(leading_lines=body[at].leading_lines)
            body[at] = body[at].with_changes(leading_lines=[])
        body.insert(at, new)
        return module.with_changes(body=body)
    if name in sys.stdlib_module_names and imports and imports[0][1] != "future":  # a stdlib section of its own
        at = imports[0][0]
        new = new.with_changes(leading_lines=body[at].leading_lines)
        body[at] = _blank_lead(body[at].with_changes(leading_lines=[]), 1)
        body.insert(at, new)
        return module.with_changes(body=body)
    third = [x for x in imports if x[1] == "third"]
    local = [x for x in imports if x[1] == "local"]
    if third:  # straight imports first, sorted; then the from imports
        at = next((i for i, _, kind, mod in third if kind == "from" or mod.lower() > name), third[-1][0] + 1)
        if at == third[0][0]:  # first of its section: take over the blank lines above it
            new = new.with_changes(leading_lines=body[at].leading_lines)
            body[at] = body[at].with_changes(leading_lines=[])
    elif local:  # a third-party section of its own, before the local one
        at = local[0][0]
        new = new.with_changes(leading_lines=body[at].leading_lines)
        body[at] = _blank_lead(body[at].with_changes(leading_lines=[]), 1)
    elif imports:  # after the stdlib (and __future__) imports, one blank line between
        at = imports[-1][0] + 1
        new = new.with_changes(leading_lines=[cst.EmptyLine()])
        if at < len(body):
            follower = body[at]
            body[at] = _blank_lead(follower, 2 if isinstance(follower, (cst.ClassDef, cst.FunctionDef)) else 1)
    else:
        at = start
        new = new.with_changes(leading_lines=[cst.EmptyLine()] if start else [])
        if at < len(body):
            follower = body[at]
            body[at] = _blank_lead(follower, 2 if isinstance(follower, (cst.ClassDef, cst.FunctionDef)) else 1)
    body.insert(at, new)
    return module.with_changes(body=body)
