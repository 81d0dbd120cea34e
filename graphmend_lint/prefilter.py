"""Skip files that cannot produce a finding, before libcst parses them.

Every rule reports only inside compiled code (`GraphMendRule.compiled_function`), and in the
default `compiled-scope = "reachable"` compiled code needs a root (analysis/scope.py):
  - a `forward` method of a class with a base (an nn.Module), or
  - a def installed as a forward by assignment (`Llama.forward = fast_forward`), or
  - a function decorated with, or passed to, one of `tables.COMPILE_FUNCS` (qualified through
    the file's torch imports, so the file contains "torch" and the name's last part, and names
    it through a torch import: `names_compile`).
A file with neither cannot have compiled code, so no rule can fire there: it is not parsed by
libcst. The test is a superset of scope.py's roots (any class with any base counts), read from
Python's own `ast` tree that the runner already builds to validate the file. tests/test_speed_*.py
check that every rule's INVALID examples and every fixture pass this filter.
The project index (analysis/project.py) adds roots from other files: such files are kept.
The runner applies it unless the settings turn it off (`prefilter = False`: `check --no-prefilter`).
If scope.py gains a new kind of root, add it here.
"""
from __future__ import annotations

import ast
import collections

from .analysis import tables
from .analysis import summary as summary_mod
from .analysis.summary import marked_lines, on_marked_line

def _needles() -> list[bytes]:
    return sorted({q.rsplit(".", 1)[-1].encode() for q in tables.COMPILE_FUNCS})


_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def walk_lines(tree: ast.AST, lines: list[int] | None):
    """ast.walk(tree)'s nodes in its order, without the statements that span none of `lines`
    (summary.marked_lines; None: none left out): a node whose text is on one of them is reached."""
    todo = collections.deque([tree])
    while todo:
        node = todo.popleft()
        todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt) or on_marked_line(c, lines))
        yield node


def _import_aliases(tree: ast.AST, source: bytes | None = None) -> tuple[dict[str, str], bool]:
    """Local name -> imported dotted name, from every import in the file (as Bindings merges all
    scopes); and whether a `from torch... import *` may bind any name. With `source` (the tree's),
    only the statements on lines with "import" are walked (the same imports, in the same order)."""
    aliases: dict[str, str] = {}
    star = False
    for n in walk_lines(tree, marked_lines(source, (b"import",)) if source is not None else None):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    head = a.name.split(".")[0]
                    aliases[head] = head
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            for a in n.names:
                if a.name == "*":
                    star = star or n.module.split(".")[0] == "torch"
                else:
                    aliases[a.asname or a.name] = f"{n.module}.{a.name}"
    return aliases, star


def _chain(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def names_compile(tree: ast.AST, source: bytes | None = None) -> bool:
    """The file names a compile function through its torch imports (`torch.compile`,
    `from torch import compile as c`, `import torch._dynamo as d; d.optimize`): a superset of the
    decorators and calls scope.py qualifies as roots. `re.compile` and the word in a string are not.
    With `source` (the tree's), only statements on lines that hold the names are walked."""
    last = {q.rsplit(".", 1)[-1] for q in tables.COMPILE_FUNCS}
    aliases, star = _import_aliases(tree, source)
    if any(t.split(".")[0] == "torch" and t.rsplit(".", 1)[-1] in last for t in aliases.values()):
        return True  # `from torch import compile as c`
    for n in walk_lines(tree, marked_lines(source, [w.encode() for w in last]) if source is not None else None):
        if isinstance(n, ast.Attribute) and n.attr in last or isinstance(n, ast.Name) and n.id in last:
            if isinstance(n, ast.Name) and star:
                return True
            name = _chain(n)
            if name is None:  # `f().compile`: not a qualified name, scope.py does not see it either
                continue
            head, _, rest = name.partition(".")
            target = aliases.get(head)
            if target is not None and (f"{target}.{rest}" if rest else target).split(".")[0] == "torch":
                return True
    return False


def _has_forward_method(node: ast.AST, in_class: bool = False) -> bool:
    """A `def forward` anywhere inside a class with bases (statements only: defs are statements)."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, _BLOCKS):
            continue
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and in_class and child.name == "forward":
            return True
        if _has_forward_method(child, in_class or (isinstance(child, ast.ClassDef) and bool(child.bases))):
            return True
    return False


def index_adds_compiled(ext) -> bool:
    """The project index's facts make some of the file's code compiled: defs called compiled from
    other files, or decorators whose wrappers run compiled."""
    return ext is not None and bool(ext.compiled or ext.wrapped)


def may_have_findings(source: bytes, compiled_scope: str, tree: ast.AST | None = None, ext=None) -> bool:
    """False only when no rule can report anything in `source` (it has no compiled code).
    `ext`: the project index's facts; a file to which they add compiled code is kept."""
    if compiled_scope != "reachable" or index_adds_compiled(ext):
        return True
    if b"torch" in source and any(n in source for n in _needles()):
        try:
            if names_compile(tree if tree is not None else ast.parse(source), source):
                return True
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return True  # let libcst report what is wrong
    if b"forward" not in source:
        return False
    if b".forward" in source and summary_mod.FORWARD_SET.search(source.decode("utf-8", "replace")):
        return True  # a def installed as a forward by assignment (scope.py's forward_sets)
    try:
        return _has_forward_method(tree if tree is not None else ast.parse(source))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return True  # let libcst report what is wrong
