"""graphmend-lint: lint rules with autofix that remove TorchDynamo graph breaks.

`fixit --rules graphmend_lint lint PATH` collects every rule class exposed here.

Rooms, imports going one way (tests/test_architecture.py checks it, and that nothing cycles):
  the CLI (cli, engine, runner, parallel, server, output, cache, files, docs, prefilter, skeleton,
  gate, verify/) -> rules/ -> fixes/ -> analysis/ -> base (settings, fastwalk, positions).
Per-file state lives in one context per parsed module (analysis/filecontext.py), made by the
engine (or, under Fixit, once per file) and read by the rules as `self.ctx`.
"""
from __future__ import annotations

__version__ = "0.1.0"


def _rules() -> dict:
    from .rules import ALL_RULES

    return {rule.__name__: rule for rule in ALL_RULES}


def __getattr__(name: str):
    """The rule classes, loaded on first use (Fixit lists them through `dir`), so that the CLI's
    cached path imports neither libcst nor the rules."""
    if name == "__all__":
        return list(_rules())
    rule = _rules().get(name) if name.endswith("Rule") else None  # not a submodule being imported
    if rule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return rule


def __dir__() -> list[str]:
    return sorted({*globals(), *_rules()})
