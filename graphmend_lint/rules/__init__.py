"""Rule discovery: every `gmNNN_*.py` module here holds exactly one rule class.

A module that fails to import raises here, loudly (Fixit would only warn).
"""
from __future__ import annotations

import importlib
import pkgutil

from . import base

__all__ = ["ALL_RULES", "by_code"]


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
        found.append(classes[0])
    codes = [r.CODE for r in found]
    if len(set(codes)) != len(codes):
        raise ImportError(f"duplicate rule codes: {sorted(codes)}")
    return tuple(sorted(found, key=lambda r: r.CODE))


ALL_RULES = _discover()


def by_code(code: str) -> type[base.GraphMendRule] | None:
    for rule in ALL_RULES:
        if rule.CODE == code.upper() or rule.NAME == code:
            return rule
    return None
