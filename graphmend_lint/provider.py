"""Fixit gets the project index too: a metadata provider that hands each rule its file's context.

A Fixit LintRule never sees the file's path, but Fixit builds a libcst `FullRepoManager` for every
provider with a `gen_cache` and calls it with the path of the file being linted
(fixit/engine.py `collect_violations`). `ProjectProvider.gen_cache` gives, per path, the file's
own settings (found from its path as the CLI finds them, not the current folder's) and its facts
from its project's index (parallel.facts_of: analysis/root.py finds the project, the content cache
holds the index; user code is never imported). The rules enter that context in `visit_Module`
and leave it in `leave_Module` (rules/base.py), so Fixit, the CLI and the language server give the
same findings and fixes.

Our own engine hands the facts in directly (`external.use`): under it (fastwalk) and under a plain
`MetadataWrapper` without a cache, the provider gives nothing and the rules read the context the
caller set.
"""
from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
from libcst.metadata import BatchableMetadataProvider

from . import settings as settings_mod
from .analysis import external

_NONE = object()


class FileContext:
    """The settings and project facts of one file, entered by the first rule to visit it."""

    def __init__(self, s: settings_mod.Settings, facts: external.FileFacts) -> None:
        self.settings = s
        self.facts = facts
        self.depth = 0
        self.tokens: tuple = ()


def file_context(path: Path) -> FileContext | None:
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
    from . import parallel  # here: parallel imports the rules, which import this module

    return FileContext(s, parallel.facts_of(path, s) or external.EMPTY)


class ProjectProvider(BatchableMetadataProvider[object]):
    """Module -> FileContext (Fixit runs only; see the module docstring)."""

    ONLY_UNDER_FIXIT = True  # fastwalk: our engine gives this provider no data

    def __init__(self, cache: object = None) -> None:
        super().__init__(_NONE if cache is None else cache)  # no cache: nothing to give, not an error

    @classmethod
    def gen_cache(cls, root_path: Path, paths: list[str], timeout: int | None = None,
                  **kwargs: object) -> dict[str, object]:
        return {p: file_context(Path(p).absolute()) or _NONE for p in paths}

    def visit_Module(self, node: cst.Module) -> None:
        if isinstance(self.cache, FileContext):
            self.set_metadata(node, self.cache)


def enter(rule, node: cst.Module) -> None:
    """In a Fixit run: make `rule` (and the analysis) use its file's settings and project facts."""
    ctx = rule.get_metadata(ProjectProvider, node, None)
    if not isinstance(ctx, FileContext):
        return
    rule.settings = ctx.settings
    if ctx.depth == 0:
        ctx.tokens = (settings_mod._current.set(ctx.settings), external._current.set(ctx.facts))
    ctx.depth += 1


def leave(rule, node: cst.Module) -> None:
    ctx = rule.get_metadata(ProjectProvider, node, None)
    if not isinstance(ctx, FileContext) or ctx.depth == 0:
        return
    ctx.depth -= 1
    if ctx.depth == 0:
        settings_mod._current.reset(ctx.tokens[0])
        external._current.reset(ctx.tokens[1])
