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


def test_guard_refuses_arguments_that_may_change_state():
    """A guarded call is skipped under compile, and so is every call in its arguments: only calls
    known to only read are allowed (shape/dtype queries, reductions, str/len/tuple(x.shape), string
    formatting, torch/math functions other than random draws). Audit: sam2's
    `logging.info("loading", self.load_state_dict(ckpt))` loaded no weights under compile."""
    from graphmend_lint import engine
    from graphmend_lint.settings import Settings

    def safety(arg: str) -> str:
        src = f'''import logging
import math

import torch
from torch import nn

logger = logging.getLogger(__name__)


class M(nn.Module):
    def forward(self, x, it):
        logger.warning("value %s", {arg})
        return x
'''.encode()
        (finding,) = [f for f in engine.check(src, Settings()).findings if f.code == "GM202"]
        return finding.safety.value

    for arg in ("tuple(x.shape)", "x.float().mean().item()", "torch.isnan(x).any()", "math.sqrt(2)",
                "str(x.dtype)", "', '.join(['a', 'b'])", "len(x)", "max(x.shape)", "x.size(0)"):
        assert safety(arg) == "safe", arg
    for arg in ("self.load_state_dict({})", "self.bump()", "torch.rand(1)", "torch.manual_seed(0)",
                "x.add_(1)", "next(it)", "list(it)", "sorted(it)", "helper(x)", "x.numpy().sort()"):
        assert safety(arg) == "none", arg
