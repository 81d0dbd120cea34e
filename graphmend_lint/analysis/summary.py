"""What the project index needs from one file, read with Python's `ast` (never imported).

`summarize(source)` -> a small JSON-able dict:
  imports  local name -> target ("torch.nn.Module", "..base.Base" for relative imports: the
           leading dots are resolved by the index, which knows the module's package); every
           scope merged (like Bindings)
  star     modules of `from m import *`
  aliases  module-level `X = <dotted>`
  classes  top-level class name -> dotted bases as written
  defs     "f" / "Cls.m" -> {"calls": dotted callees, "deco": dotted decorators,
           "ret": what the def returns (dotted calls, "F" for False/None, "?" for anything else),
           "wraps": 1 when a def nested in it is decorated with `functools.wraps(...)`: a decorator
           whose wrapper runs in place of the function it decorates (only then present)}
  compile  "func arg" of module-level calls with a dotted first argument (`torch.compile(fn)`)
Calls are read from each def's text (comments dropped) with a regex, much cheaper than walking its
expressions; nested defs and lambdas count for the enclosing top-level def or method. A call
named only in a string of the def can add an edge (it is then resolved through the imports).
"""
from __future__ import annotations

import ast
import re
import sys

VERSION = 3


def dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" and parts:
        parts.append("super()")
        return ".".join(reversed(parts))
    return None


# possessive where the re module has it (3.11): the same matches (no name part ends in `.`, `(` or a
# space), without backtracking through every name that is not called
_CALL = re.compile(r"(?<![\w.])((?:super\(\)\.)?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\("
                   if sys.version_info < (3, 11) else
                   r"(?<![\w.])((?:super\(\)\.)?[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)*+)\s*+\(")
_COMMENT = re.compile(r"#[^\n]*")
_GUARD_WORDS = ("compiling", "scripting", "tracing")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def is_wrapper(node: ast.AST) -> bool:
    """A def decorated with `wraps(f)` / `functools.wraps(f)`: it runs in place of `f` when called."""
    return isinstance(node, _DEFS) and any(
        isinstance(d, ast.Call) and (dotted(d.func) or "").split(".")[-1] == "wraps" for d in node.decorator_list)


def _returns(func: ast.AST) -> list[str]:
    """What each `return` of `func` gives: a dotted call without arguments, "F" (False/None), "?";
    `a() or b()` as "a|b" (True when either is), also through a local name bound once to it and
    only `|=`-ed after (transformers' `is_tracing`)."""
    out: list[str] = []
    for n in ast.walk(func):
        if isinstance(n, ast.Return):
            out.append(_spec(n.value, func, 0))
    return out


def _spec(v: ast.AST | None, func: ast.AST, depth: int) -> str:
    if v is None or isinstance(v, ast.Constant) and v.value in (False, None):
        return "F"
    if isinstance(v, ast.Call) and not v.args and not v.keywords and dotted(v.func):
        return dotted(v.func)  # type: ignore[return-value]
    if isinstance(v, ast.BoolOp) and isinstance(v.op, ast.Or) and depth < 4:
        return "|".join(_spec(x, func, depth + 1) for x in v.values)
    if isinstance(v, ast.Name) and depth < 4:
        binds = [n for n in ast.walk(func) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr))
                 and any(isinstance(t, ast.Name) and t.id == v.id for t in
                         (n.targets if isinstance(n, ast.Assign) else [n.target]))]
        plain = [n for n in binds if isinstance(n, ast.Assign)]
        only_or = all(isinstance(n, ast.Assign) or isinstance(n, ast.AugAssign) and isinstance(n.op, ast.BitOr)
                      for n in binds)
        if len(plain) == 1 and len(plain[0].targets) == 1 and only_or:
            return _spec(plain[0].value, func, depth + 1)  # `|=` only adds truth
    return "?"


_IMPORTS = (ast.Import, ast.ImportFrom)
_BLOCKS_OF = {t: f for t in vars(ast).values() if isinstance(t, type) and issubclass(t, ast.AST)
              if (f := tuple(x for x in _BLOCKS if x in t._fields))}  # node type -> its block fields


def _imports(block: list, out: list) -> list:
    """The imports of a block and, recursively, of its inner blocks (defs and classes included),
    in source order."""
    for s in block:
        if isinstance(s, _IMPORTS):
            out.append(s)
            continue
        for f in _BLOCKS_OF.get(type(s), ()):
            inner = getattr(s, f)
            if inner:
                _imports(inner, out)
    return out


class _Summary:
    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.imports: dict[str, str] = {}
        self.star: list[str] = []
        self.aliases: dict[str, str] = {}
        self.classes: dict[str, list[str]] = {}
        self.defs: dict[str, dict] = {}
        self.compile: list[str] = []

    def _text(self, node: ast.AST) -> str:
        """The def's source without comments and without its docstring (examples there are not calls)."""
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])  # type: ignore[attr-defined]
        lines = self.lines[first - 1:node.end_lineno]  # type: ignore[attr-defined]
        body = node.body  # type: ignore[attr-defined]
        doc = body[0] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str) else None
        if doc is not None and doc.lineno > node.lineno:  # type: ignore[attr-defined]
            a, b = doc.lineno - first, doc.end_lineno - first + 1  # type: ignore[operator]
            lines = lines[:a] + lines[b:]
        return _COMMENT.sub("", "\n".join(lines))

    def import_(self, s: ast.AST) -> None:
        if isinstance(s, ast.Import):
            for a in s.names:
                if a.asname:
                    self.imports[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    self.imports.setdefault(top, top)
        elif isinstance(s, ast.ImportFrom):
            base = "." * s.level + (s.module or "")
            for a in s.names:
                if a.name == "*":
                    self.star.append(base)
                else:
                    self.imports[a.asname or a.name] = f"{base}{'' if base.endswith('.') else '.'}{a.name}"

    def def_(self, name: str, node: ast.AST) -> None:
        text = self._text(node)
        deco = [d for d in (dotted(x.func if isinstance(x, ast.Call) else x) for x in node.decorator_list) if d]  # type: ignore[attr-defined]
        calls = sorted({m.group(1) for m in _CALL.finditer(text)} - {node.name})  # type: ignore[attr-defined]
        ret = _returns(node) if any(w in text for w in _GUARD_WORDS) and len(text) < 4000 else []
        self.defs[name] = {"calls": calls, "deco": deco, "ret": ret}
        if "wraps" in text and any(is_wrapper(n) for n in ast.walk(node) if n is not node):
            self.defs[name]["wraps"] = 1

    def run(self, tree: ast.Module) -> None:
        for s in _imports(tree.body, []):
            self.import_(s)
        for s in tree.body:
            self.top(s)

    def top(self, s: ast.AST) -> None:
        if isinstance(s, _DEFS):
            self.def_(s.name, s)
        elif isinstance(s, ast.ClassDef):
            self.classes[s.name] = [d for d in map(dotted, s.bases) if d]
            for m in s.body:
                if isinstance(m, _DEFS):
                    self.def_(f"{s.name}.{m.name}", m)
        elif isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            d = dotted(s.value)
            if d is not None:
                self.aliases[s.targets[0].id] = d
            elif isinstance(s.value, ast.Call):
                self.call(s.value)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            self.call(s.value)
        elif isinstance(s, (ast.If, ast.Try)):
            for f in ("body", "orelse", "finalbody"):
                for inner in getattr(s, f, []):
                    self.top(inner)
            for h in getattr(s, "handlers", []):
                for inner in h.body:
                    self.top(inner)

    def call(self, c: ast.Call) -> None:
        d = dotted(c.func)
        if d and c.args and dotted(c.args[0]):
            self.compile.append(f"{d} {dotted(c.args[0])}")


def summarize(tree: ast.Module, text: str) -> dict:
    s = _Summary(text)
    s.run(tree)
    return {"v": VERSION, "imports": s.imports, "star": s.star, "aliases": s.aliases, "classes": s.classes,
            "defs": s.defs, "compile": sorted(set(s.compile))}
