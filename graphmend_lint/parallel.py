"""Check many files: cached results first, the rest in forked worker processes.

Workers are forked after the rules and settings are loaded, so each starts ready; they take
the files largest first, a few at a time, and send back findings without libcst nodes.
"""
from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from . import engine, files, runner
from . import cache as cache_mod
from .settings import Settings

CHUNK = 4  # files per task handed to a worker
_job: tuple | None = None  # (paths, settings, fix, diff, cache): set before the fork


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _read(path: Path) -> bytes | None:
    try:
        return files.read_source(path, runner.MAX_BYTES)  # never blocks on a FIFO
    except (OSError, ValueError):
        return None


def _cached(cache: cache_mod.Cache, path: Path, s: Settings, fixing: bool) -> runner.FileOutcome | None:
    data = _read(path)
    if data is None:
        return None
    findings = cache.get(cache.key(data))
    if findings is None:
        return None
    if fixing and any(engine.applicable(f, s) for f in findings):
        return None  # there is something to fix: run the fixer
    return runner.FileOutcome(path, findings)


def check_one(path: Path, s: Settings, fix: bool, diff: bool, cache: cache_mod.Cache | None) -> runner.FileOutcome:
    before = _read(path) if cache is not None else None
    out = runner.check_file(path, s, fix=fix, diff=diff)
    out.findings = [cache_mod.portable(f) for f in out.findings]
    if (cache is not None and before is not None and out.error is None and not out.fixed and not out.diff
            and _read(path) == before):  # store only what was computed from the bytes now on disk
        cache.put(cache.key(before), out.findings)
    return out


def _work(i: int) -> tuple[int, runner.FileOutcome]:
    assert _job is not None
    paths, s, fix, diff, cache = _job
    return i, check_one(paths[i], s, fix, diff, cache)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def check_files(paths: list[Path], s: Settings, *, fix: bool = False, diff: bool = False,
                jobs: int | None = None, use_cache: bool = True) -> list[runner.FileOutcome]:
    """One outcome per path, in the order given."""
    global _job
    cache = cache_mod.Cache.for_settings(s) if use_cache else None
    outcomes: list[runner.FileOutcome | None] = [None] * len(paths)
    todo = []
    for i, p in enumerate(paths):
        hit = _cached(cache, p, s, fix or diff) if cache is not None else None
        if hit is not None:
            outcomes[i] = hit
        else:
            todo.append(i)
    jobs = min(jobs or default_jobs(), len(todo))
    methods = multiprocessing.get_all_start_methods()
    if jobs <= 1 or "fork" not in methods:
        for i in todo:
            outcomes[i] = check_one(paths[i], s, fix, diff, cache)
        return outcomes  # type: ignore[return-value]
    todo.sort(key=lambda i: -_size(paths[i]))  # largest first: no straggler at the end
    _job = (paths, s, fix, diff, cache)
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for i, out in pool.imap_unordered(_work, todo, chunksize=CHUNK):
                outcomes[i] = out
    finally:
        _job = None
    return outcomes  # type: ignore[return-value]
