"""Join runtime break sites with static findings: a break is matched by a finding on its statement."""
from __future__ import annotations

import ast
import os
import sysconfig
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .recorder import Break


@dataclass
class Site:
    """A distinct runtime break site, placed at the innermost frame in a file we lint."""
    path: str
    line: int
    brk: Break
    count: int
    findings: list = field(default_factory=list)  # ours on that statement, best fix first


@cache
def _tree(path: str) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def statement_span(path: str, line: int) -> tuple[int, int]:
    """Lines of the innermost statement holding `line`; of a compound statement, its header only."""
    tree = _tree(path)
    span = (line, line)
    body = tree.body if tree else []
    while True:
        stmt = next((s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if stmt is None:
            return span
        inner = [b for name in ("body", "orelse", "finalbody", "handlers", "cases") for b in getattr(stmt, name, [])
                 if isinstance(b, ast.AST)]
        first = min((b.lineno for b in inner), default=None)
        if first is None or line < first:  # a simple statement, or the header of a compound one
            end = (stmt.end_lineno or stmt.lineno) if first is None else max(first - 1, stmt.lineno)
            return (getattr(stmt, "decorator_list", None) or [stmt])[0].lineno, end
        span, body = (line, line), [s for b in inner for s in ([b] if isinstance(b, ast.stmt) else
                                                                 getattr(b, "body", []))]


class Files:
    """Which files to lint: the user's and third-party packages', not the stdlib, torch or us."""

    def __init__(self) -> None:
        import importlib.util

        paths = sysconfig.get_paths()
        self.stdlib = [os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")]
        spec = importlib.util.find_spec("torch")  # finds, never imports
        ours = [str(Path(__file__).resolve().parents[1]), *(spec.submodule_search_locations or [] if spec else [])]
        self.never = [os.path.realpath(d) + os.sep for d in ours]

    def wanted(self, path: str) -> bool:
        real = os.path.realpath(path)
        if not real.endswith(".py") or not os.path.isfile(real) or any(real.startswith(d) for d in self.never):
            return False
        installed = "site-packages" in real or "dist-packages" in real
        return installed or not any(real.startswith(d) for d in self.stdlib)


def fix_kind(f) -> str:
    """The fix a finding offers: "safe", "unsafe" or "none"."""
    return f.safety.value if f.replacement is not None else "none"


def best_first(findings: list) -> list:
    return sorted(findings, key=lambda f: ("safe", "unsafe", "none").index(fix_kind(f)))


def place(brk: Break, findings: dict[str, list]) -> Site:
    """The innermost frame of `brk` whose statement holds a finding, else its innermost linted frame."""
    linted = [(os.path.realpath(f), line) for f, line in brk.frames() if os.path.realpath(f) in findings]
    for path, line in linted:
        lo, hi = statement_span(path, line)
        on = [x for x in findings[path] if x.line <= hi and lo <= x.end_line]
        if on:
            return Site(path, line, brk, brk.count, best_first(on))
    path, line = linted[0] if linted else (brk.file, brk.line)
    return Site(path, line, brk, brk.count)


def sites(breaks: list[Break], findings: dict[str, list]) -> list[Site]:
    """One site per statement: breaks placed at the same line merge (counts add up)."""
    out: dict[tuple[str, int], Site] = {}
    for b in breaks:
        s = place(b, findings)
        if (s.path, s.line) in out:
            first = out[(s.path, s.line)]
            first.count += s.count
            first.brk.frame_skip |= b.frame_skip
        else:
            out[(s.path, s.line)] = s
    return sorted(out.values(), key=lambda s: (s.path, s.line))
