"""Every rule's own VALID/INVALID cases, run by Fixit's test machinery under pytest."""
import unittest

from fixit.testing import add_lint_rule_tests_to_module

from graphmend_lint.rules import ALL_RULES

add_lint_rule_tests_to_module(globals(), [rule() for rule in ALL_RULES])  # Fixit wants instances


def test_every_rule_has_cases():
    for rule in ALL_RULES:
        assert rule.VALID and rule.INVALID, rule.CODE


def test_fixit_generated_a_test_for_every_case():
    generated = {
        name: cls for name, cls in globals().items()
        if isinstance(cls, type) and issubclass(cls, unittest.TestCase) and name != "TestCase"
    }
    methods = sum(len([m for m in dir(c) if m.startswith(("test_VALID", "test_INVALID"))]) for c in generated.values())
    assert methods == sum(len(r.VALID) + len(r.INVALID) for r in ALL_RULES)
