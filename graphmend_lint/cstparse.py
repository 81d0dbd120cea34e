"""libcst's parse, without the node validation a parsed tree cannot need.

Every libcst node validates itself when built (`CSTNode.__post_init__` calls `_validate`), which
guards trees built by hand; a tree the parser builds from source that Python's own parser has
accepted (runner.validate) is valid by construction, and its validation is about a tenth of a
lint's CPU. libcst's own comment there says validation might better move out of parsing. Nodes built
by fixes, and by any other thread while a parse runs, are still validated. If libcst's
`__post_init__` ever does more than validate, nothing is patched.
"""
from __future__ import annotations

import threading

import libcst as cst
from libcst._nodes.base import CSTNode

_parsing: set[int] = set()  # threads inside parse_module
_get_ident = threading.get_ident


def _post_init(self) -> None:
    if not (_parsing and _get_ident() in _parsing):
        self._validate()


def _install() -> bool:
    code = CSTNode.__post_init__.__code__
    if CSTNode.__post_init__ is _post_init:
        return True
    if code.co_names != ("_validate",) or code.co_argcount != 1:
        return False
    CSTNode.__post_init__ = _post_init  # type: ignore[method-assign]
    return True


_PATCHED = _install()


_ready: dict[bytes | str, cst.Module] = {}  # parsed ahead (workers.py), each taken once


def ready(source: bytes | str, module: cst.Module) -> None:
    """`module` is `source` parsed: the next parse_module(source) of this process returns it."""
    _ready[source] = module


def parse_module(source: bytes | str) -> cst.Module:
    if _ready:
        got = _ready.pop(source, None)
        if got is not None:
            return got
    if not _PATCHED:
        return cst.parse_module(source)
    me = _get_ident()
    _parsing.add(me)
    try:
        return cst.parse_module(source)
    finally:
        _parsing.discard(me)
