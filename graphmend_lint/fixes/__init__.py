"""Fix machinery shared by the rules: how a finding's code is rewritten.

Fix code returns a value, `Fix` or `NoFix` (fix.py, safety.py); the rule reports it. Rules import
from here; nothing here imports a rule.
"""
from .fix import Elsewhere, Fix, NoFix, Refused
from .safety import Safety

__all__ = ["Elsewhere", "Fix", "NoFix", "Refused", "Safety"]
