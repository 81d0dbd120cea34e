"""graphmend-lint: lint rules with autofix that remove TorchDynamo graph breaks.

`fixit --rules graphmend_lint lint PATH` collects every rule class exposed here.

Rooms, imports going one way (tests/test_architecture.py checks it, and that nothing cycles):
  the CLI (cli, engine, runner, parallel, server, output, cache, files, docs, prefilter, skeleton,
  verify/) -> rules/ -> fixes/ -> analysis/ -> base (settings, fastwalk, positions).
Per-file state lives in one context per parsed module (analysis/filecontext.py), made by the
engine (or, under Fixit, once per file) and read by the rules as `self.ctx`.
"""
from .rules import ALL_RULES as _ALL_RULES

__version__ = "0.1.0"

globals().update({_rule.__name__: _rule for _rule in _ALL_RULES})
__all__ = [_rule.__name__ for _rule in _ALL_RULES]
