"""Golden fixtures: findings, fixed code and patches must match `python tests/regen.py`."""
from __future__ import annotations

import pytest
from fixture_io import FIXTURES, expected_outputs, fixture_cases

from graphmend_lint import engine
from graphmend_lint.rules import ALL_RULES
from graphmend_lint.settings import Settings

CASES = fixture_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden(case):
    expected = expected_outputs(case)
    on_disk = {p.name for p in case.parent.glob(case.stem + ".*") if p != case}
    assert on_disk == set(expected), "stale generated files: run `python tests/regen.py`"
    for name, text in expected.items():
        assert (case.parent / name).read_text(encoding="utf-8") == text, f"{name}: run `python tests/regen.py`"


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_case_kind(case):
    findings = engine.check(case.read_bytes(), Settings(unsafe_fixes=True)).findings
    if case.name.startswith("valid_"):
        assert findings == []
    else:
        assert any(f.code == case.parent.name for f in findings)


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fix_is_idempotent_and_clean(case):
    for unsafe in (False, True):
        s = Settings(unsafe_fixes=unsafe)
        once = engine.check(case.read_bytes(), s, fix=True)
        twice = engine.check(once.source, s, fix=True)
        assert twice.source == once.source
        assert not [f for f in once.findings if engine.applicable(f, s)]


def test_every_rule_has_valid_and_invalid_fixtures():
    for rule in ALL_RULES:
        folder = FIXTURES / rule.CODE
        names = [p.name for p in fixture_cases() if p.parent == folder]
        assert any(n.startswith("valid_") for n in names), rule.CODE
        assert any(n.startswith("invalid_") for n in names), rule.CODE
