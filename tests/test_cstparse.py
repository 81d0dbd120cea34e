"""cstparse.parse_module: libcst's tree, without validating what the parser built."""
from __future__ import annotations

import threading
from pathlib import Path

import libcst as cst
import pytest

from graphmend_lint import cstparse

FIXTURES = sorted(Path(__file__).parent.joinpath("fixtures").rglob("*.py"))[:40]


def test_it_is_installed_on_this_libcst():
    assert cstparse._PATCHED, "libcst's CSTNode.__post_init__ changed: the parse validates again"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_same_tree_as_libcst(path):
    source = path.read_bytes()
    ours = cstparse.parse_module(source)
    assert ours.deep_equals(cst.parse_module(source)) and ours.bytes == source


def test_nodes_built_by_hand_are_still_validated():
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")  # what a fix builds is checked as before


def test_only_the_parsing_thread_skips_validation():
    cstparse._parsing.add(threading.get_ident())
    try:
        cst.Name("not a name")  # this thread is "parsing": not validated
        errors = []

        def other() -> None:
            try:
                cst.Name("not a name")
            except cst.CSTValidationError as e:
                errors.append(e)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert len(errors) == 1
    finally:
        cstparse._parsing.discard(threading.get_ident())
    assert not cstparse._parsing
