"""Skip files that cannot produce a finding, before libcst parses them.

Every rule reports only inside compiled code (`GraphMendRule.compiled_function`), and in the
default `compiled-scope = "reachable"` compiled code needs a root (analysis/scope.py):
  - a `forward` method of a class with a base (an nn.Module), or
  - a function decorated with, or passed to, one of `scope.COMPILE_FUNCS` (qualified through
    the file's torch imports, so the file contains "torch" and the name's last part).
A file with neither cannot have compiled code, so no rule can fire there: it is not parsed by
libcst. The test is a superset of scope.py's roots (any class with any base counts), read from
Python's own `ast` tree that the runner already builds to validate the file. tests/test_speed_*.py
check that every rule's INVALID examples and every fixture pass this filter.
The project index (analysis/project.py) adds roots from other files: such files are kept.
If scope.py gains a new kind of root, add it here.
"""
from __future__ import annotations

import ast

from .analysis import scope

ENABLED = True  # `graphmend-lint check --no-prefilter` turns it off


def _needles() -> list[bytes]:
    return sorted({q.rsplit(".", 1)[-1].encode() for q in scope.COMPILE_FUNCS})


_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


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


def may_have_findings(source: bytes, compiled_scope: str, tree: ast.AST | None = None, ext=None) -> bool:
    """False only when no rule can report anything in `source` (it has no compiled code).
    `ext`: the project index's facts; a file with defs called compiled from other files is kept."""
    if not ENABLED or compiled_scope != "reachable" or (ext is not None and ext.compiled):
        return True
    if b"torch" in source and any(n in source for n in _needles()):
        return True
    if b"forward" not in source:
        return False
    try:
        return _has_forward_method(tree if tree is not None else ast.parse(source))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return True  # let libcst report what is wrong
