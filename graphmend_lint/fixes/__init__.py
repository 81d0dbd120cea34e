"""Fix machinery shared by the rules: how a finding's code is rewritten.

`where` and `ifstmt` build the GM1xx torch.where forms, `effects` and `defer` the GM2xx guards,
`trap` the GM3xx assertions, `build` small libcst builders. Rules import from here; nothing here
imports a rule.
"""
from .safety import Safety

__all__ = ["Safety"]
