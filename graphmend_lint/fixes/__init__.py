"""Fix machinery shared by the rules: how a finding's code is rewritten.

Fix code returns a value, never reports: a `Fix` (replacement, applicability, title), a `NoFix`
(why none), or an `Elsewhere` (the fix is made at another site); the rule decides and calls
`self.report(node, message, fix=...)`. Rules import from here; nothing here imports a rule.

  fix.py       Fix, NoFix, Elsewhere, and Refused (the one exception fix code raises to refuse)
  safety.py    Safety: a fix's applicability (safe, unsafe, none), as ruff classes it
  syntax.py    reading libcst trees: code(), flatten(), names_in(), strip_parens(), ...
  build.py     small libcst builders: a statement line, an assignment, a guard; sole_line()
  where/       GM1xx: tensor `if`s and ternaries -> torch.where, LayerDrop tests (see where/__init__.py)
  guard.py     GM2xx: `if not torch.compiler.is_compiling():` around print/logging/warnings
  defer.py     GM201 with log-strategy = "defer": prints deferred past the graph
  trap.py      GM3xx: tensor checks that raise or assert -> torch._assert_async under compile
  layout.py    the passes over fixed code: merged guards, wrapped long lines, an added `import torch`
"""
from .fix import Elsewhere, Fix, NoFix, Refused
from .safety import Safety

__all__ = ["Elsewhere", "Fix", "NoFix", "Refused", "Safety"]
