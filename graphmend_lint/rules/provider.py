"""Fixit gets the project index too: a metadata provider that hands each rule its file's context.

A Fixit LintRule never sees the file's path, but Fixit builds a libcst `FullRepoManager` for every
provider with a `gen_cache` and calls it with the path of the file being linted
(fixit/engine.py `collect_violations`). `ProjectProvider.gen_cache` gives, per path, the file's
own settings (found from its path as the CLI finds them, not the current folder's) and its facts
from its project's index (parallel.facts_of: analysis/root.py finds the project, the content cache
holds the index; user code is never imported). `rules.base.FileContextProvider` builds the file's
context from them, so Fixit, the CLI and the language server give the same findings and fixes.

Our own engine hands the file context in directly: under it (fastwalk) and under a plain
`MetadataWrapper` without a cache, this provider gives nothing.
"""
from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
from libcst.metadata import BatchableMetadataProvider

from .. import settings as settings_mod
from ..analysis import external

_NONE = object()


class PathFacts:
    """The settings and project facts of one file on disk."""

    def __init__(self, s: settings_mod.Settings, facts: external.FileFacts) -> None:
        self.settings = s
        self.facts = facts


def file_context(path: Path) -> PathFacts | None:
    """The file's settings and facts, or None (not a file on disk: Fixit's own tests, stdin names)."""
    try:
        if not path.is_file():
            return None
        s = settings_mod.Discovery().for_path(path)
    except settings_mod.ConfigError as e:  # Fixit offers no way to stop the run: say so, use the defaults
        print(f"graphmend-lint: {e}; using the default settings", file=sys.stderr)
        return None
    except OSError:
        return None
    from .. import parallel  # deferred: see tests/test_architecture.py DEFERRED

    return PathFacts(s, parallel.facts_of(path, s) or external.EMPTY)


class ProjectProvider(BatchableMetadataProvider[object]):
    """Module -> PathFacts (Fixit runs only; see the module docstring)."""

    ONLY_UNDER_FIXIT = True  # fastwalk: our engine gives this provider no data

    def __init__(self, cache: object = None) -> None:
        super().__init__(_NONE if cache is None else cache)  # no cache: nothing to give, not an error

    @classmethod
    def gen_cache(cls, root_path: Path, paths: list[str], timeout: int | None = None,
                  **kwargs: object) -> dict[str, object]:
        return {p: file_context(Path(p).absolute()) or _NONE for p in paths}

    def visit_Module(self, node: cst.Module) -> None:
        if isinstance(self.cache, PathFacts):
            self.set_metadata(node, self.cache)
