"""graphmend-lint: lint rules with autofix that remove TorchDynamo graph breaks.

`fixit --rules graphmend_lint lint PATH` collects every rule class exposed here.
"""
from .rules import ALL_RULES as _ALL_RULES

__version__ = "0.1.0"

globals().update({_rule.__name__: _rule for _rule in _ALL_RULES})
__all__ = [_rule.__name__ for _rule in _ALL_RULES]
