"""GM2xx rules' own VALID/INVALID cases through Fixit's test machinery.

Fixit's generator wants rule instances (given classes it collects nothing), so the
GM2xx cases are generated here from instances.
"""
from fixit.testing import add_lint_rule_tests_to_module

from graphmend_lint.rules import ALL_RULES

GM2 = [rule() for rule in ALL_RULES if rule.CODE.startswith("GM2")]
add_lint_rule_tests_to_module(globals(), GM2)


def test_cases_were_generated():
    generated = [k for k, v in globals().items() if isinstance(v, type) and k.endswith("Rule")]
    assert len(generated) == len(GM2) >= 3, generated
