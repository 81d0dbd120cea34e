"""Every rule's own VALID/INVALID cases, run by Fixit's test machinery under pytest."""
from fixit.testing import add_lint_rule_tests_to_module

from graphmend_lint.rules import ALL_RULES

add_lint_rule_tests_to_module(globals(), ALL_RULES)


def test_every_rule_has_cases():
    for rule in ALL_RULES:
        assert rule.VALID and rule.INVALID, rule.CODE
