"""One-line bodies (`if t: raise E(...)`, `if m.any(): y[m] = 1`): every fixture with its single-statement
blocks written on the header's line must give the same findings, fix without an internal error and
leave code Python compiles. Before: GM301 missed `if <tensor check>: raise ...` on one line (no finding
at all), and the masked-update fix crashed on a one-line body (StopIteration, exit 2)."""
from __future__ import annotations

from collections import Counter

import libcst as cst
import pytest
from fixture_io import fixture_cases

from graphmend_lint import engine
from graphmend_lint.settings import Settings


class _OneLine(cst.CSTTransformer):
    """A block of one simple line, no comment on or above it -> a one-line suite."""

    @staticmethod
    def _suite(body: cst.BaseSuite) -> cst.BaseSuite:
        if (isinstance(body, cst.IndentedBlock) and len(body.body) == 1 and not body.header.comment
                and isinstance(body.body[0], cst.SimpleStatementLine) and not body.body[0].leading_lines
                and not body.body[0].trailing_whitespace.comment):
            return cst.SimpleStatementSuite(body=body.body[0].body)
        return body

    def leave_If(self, original, updated):
        return updated.with_changes(body=self._suite(updated.body))

    def leave_Else(self, original, updated):
        return updated.with_changes(body=self._suite(updated.body))

    def leave_For(self, original, updated):
        return updated.with_changes(body=self._suite(updated.body))

    def leave_While(self, original, updated):
        return updated.with_changes(body=self._suite(updated.body))


def _one_line(text: str) -> str:
    return cst.parse_module(text).visit(_OneLine()).code


CASES = [c for c in fixture_cases() if _one_line(c.read_text(encoding="utf-8")) != c.read_text(encoding="utf-8")]


def test_the_rewrite_reaches_enough_fixtures():
    assert len(CASES) > 80
    assert any(c.parent.name == "GM301" for c in CASES) and any(c.parent.name == "GM101" for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_one_line_bodies_keep_findings_and_fix_cleanly(case):
    text = case.read_text(encoding="utf-8")
    short = _one_line(text)
    unsafe = Settings(unsafe_fixes=True)
    want = Counter(f.code for f in engine.check(text.encode(), unsafe).findings)
    got = Counter(f.code for f in engine.check(short.encode(), unsafe).findings)
    assert got == want
    fixed = engine.check(short.encode(), unsafe, fix=True).source  # raises on an internal error
    compile(fixed, str(case), "exec", dont_inherit=True)
