"""Rule discovery: every `gmNNN_<name>.py` module here holds exactly one rule class.

One name per rule: module `gm906_tensor_as_size`, class `TensorAsSizeRule` (Fixit name
`TensorAsSize`), NAME `tensor-as-size` (tests/test_docs.py checks that they agree).
A module that fails to import raises here, loudly (Fixit would only warn).
"""
from __future__ import annotations

import importlib
import pkgutil

from . import base
from .former_names import FORMER_NAMES

__all__ = ["ALL_RULES", "by_code", "fixit_name"]


def _discover() -> tuple[type[base.GraphMendRule], ...]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("gm"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        classes = [
            v for v in vars(module).values()
            if isinstance(v, type) and issubclass(v, base.GraphMendRule) and v.__module__ == module.__name__
        ]
        if len(classes) != 1 or not classes[0].CODE:
            raise ImportError(f"{module.__name__} must define exactly one rule class with a CODE")
        if classes[0].CODE != info.name.split("_")[0].upper():  # the CLI reads codes off module names
            raise ImportError(f"{module.__name__} must hold rule {info.name.split('_')[0].upper()}, "
                              f"not {classes[0].CODE}")
        found.append(classes[0])
    codes = [r.CODE for r in found]
    if len(set(codes)) != len(codes):
        raise ImportError(f"duplicate rule codes: {sorted(codes)}")
    return tuple(sorted(found, key=lambda r: r.CODE))


ALL_RULES = _discover()


def fixit_name(rule: type[base.GraphMendRule]) -> str:
    """The name Fixit prints and `# lint-ignore:` takes: the class name without "Rule"."""
    return rule.__name__.removesuffix("Rule")


def by_code(name: str) -> type[base.GraphMendRule] | None:
    """The rule named by a code (`GM201`), a NAME (`print-in-compiled-code`), a Fixit name
    (`PrintInCompiledCode`, with or without "Rule"), or a former name of the rule."""
    key = name.strip().lower()
    for rule in ALL_RULES:
        names = {n.lower() for n in (rule.CODE, rule.NAME, fixit_name(rule), *FORMER_NAMES.get(rule.CODE, ()))}
        if key in names or key.removesuffix("rule") in names:
            return rule
    return None
