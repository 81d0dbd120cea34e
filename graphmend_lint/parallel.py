"""Check many files: the project index, cached results first, the rest in forked worker processes.

First the project index (analysis/project.py) gives each file its cross-file facts: the whole
run's facts come from one cache entry when no file changed; else each file's summary comes from
the cache by content, or is parsed (in workers when many). Each file's result key includes its
facts. Workers are forked after the rules, settings and index are ready; they take the files
largest first, a few at a time, and send back findings without libcst nodes.
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
from pathlib import Path

from . import engine, files, prefilter, runner
from . import cache as cache_mod
from .analysis import project
from .analysis.external import EMPTY, FileFacts
from .settings import Settings

CHUNK = 4  # files per task handed to a worker
POOL_MIN = 16  # summaries to parse before a pool is worth forking
_job: tuple | None = None  # (paths, settings, fix, diff, cache, facts): set before the fork
_summary_job: list | None = None


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


# -- the project index -----------------------------------------------------------
def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _summary_of(data: bytes) -> dict | None:
    return project.parse_summary(data)


def _summary_work(i: int) -> tuple[int, dict | None]:
    assert _summary_job is not None
    return i, _summary_of(_summary_job[i])


def _needs_summary(data: bytes, s: Settings) -> bool:
    """Files that may hold a root (a forward, a compile call) or a configured compiled function;
    the index reads the others on demand (bases, callees)."""
    return bool(s.compiled_functions) or b"forward" in data or any(n in data for n in prefilter._needles())


class _Reader:
    """Summaries by content: the cache, else parsed; remembers the digests of what it read."""

    def __init__(self, cache: cache_mod.Cache | None) -> None:
        self.cache = cache
        self.digests: dict[str, str] = {}  # path -> sha256 of the content read

    def summary(self, data: bytes, digest: str) -> dict | None:
        got = self.cache.get_json("idx", digest) if self.cache is not None else None
        if got is None or got.get("v") != project.summary_mod.VERSION:
            got = _summary_of(data)
            if got is not None and self.cache is not None:
                self.cache.put_json("idx", digest, got)
        return got

    def __call__(self, path: Path) -> dict | None:
        data = _read(path)
        if data is None:
            return None
        digest = _digest(data)
        self.digests[str(path)] = digest
        return self.summary(data, digest)


def _run_key(cache: cache_mod.Cache, run: dict, digests: dict[Path, str]) -> str:
    h = hashlib.sha256(cache.prefix)
    for mod, path in sorted(run.items()):
        h.update(f"{mod}\0{path}\0{digests[path]}\0".encode())
    h.update(repr(sorted(map(str, _search_path()))).encode())
    return h.hexdigest()


def _search_path() -> list[str]:
    import sys
    return [p for p in sys.path if p]


def project_facts(paths: list[Path], s: Settings, data: dict[Path, bytes] | None = None,
                  cache: cache_mod.Cache | None = None, jobs: int = 1) -> dict[Path, FileFacts]:
    """Each file's cross-file facts (compiled-scope "reachable" and "all" alike)."""
    data = data if data is not None else {p: d for p in paths if (d := _read(p)) is not None}
    run: dict[str, Path] = {}
    roots: list[Path] = []
    for p in paths:
        if p not in data:
            continue
        mod, root, _ = project.module_name(p)
        if mod and mod not in run:
            run[mod] = p
            if root not in roots:
                roots.append(root)
    digests = {p: _digest(data[p]) for p in run.values()}
    key = _run_key(cache, run, digests) if cache is not None else None
    if key is not None:
        got = cache.get_json("run", key)
        if got is not None and all(_read_digest(Path(p)) == d for p, d in got["external"].items()):
            return {Path(p): FileFacts.from_json(f) for p, f in got["files"].items()}
    reader = _Reader(cache)
    summaries: dict[str, tuple[Path, dict | None]] = {}
    todo: list[tuple[str, Path, str]] = []
    for mod, p in run.items():
        if not _needs_summary(data[p], s):
            continue
        got = cache.get_json("idx", digests[p]) if cache is not None else None
        if got is not None and got.get("v") == project.summary_mod.VERSION:
            summaries[mod] = (p, got)
        else:
            todo.append((mod, p, digests[p]))
    for (mod, p, digest), summ in zip(todo, _parse_many([data[p] for _, p, _ in todo], jobs)):
        summaries[mod] = (p, summ)
        if summ is not None and cache is not None:
            cache.put_json("idx", digest, summ)

    def read(path: Path) -> dict | None:
        if path in digests:  # a file of the run
            return reader.summary(data[path], digests[path])
        return reader(path)

    index = project.ProjectIndex(run, summaries, roots, read, s.module_bases, s.compiled_functions)
    facts = {p: index.file_facts(mod) for mod, p in run.items()}
    out = {p: f for p, f in facts.items() if f != EMPTY}
    if key is not None:
        external = {str(index.paths[m]): reader.digests.get(str(index.paths[m]))
                    for m in index.external if m not in run}
        if all(external.values()):
            cache.put_json("run", key, {"files": {str(p): f.to_json() for p, f in out.items()},
                                        "external": external})
    return out


def _read_digest(path: Path) -> str | None:
    data = _read(path)
    return None if data is None else _digest(data)


def _parse_many(sources: list[bytes], jobs: int) -> list[dict | None]:
    global _summary_job
    if jobs <= 1 or len(sources) < POOL_MIN or "fork" not in multiprocessing.get_all_start_methods():
        return [_summary_of(d) for d in sources]
    out: list[dict | None] = [None] * len(sources)
    _summary_job = sources
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for i, summ in pool.imap_unordered(_summary_work, range(len(sources)), chunksize=CHUNK):
                out[i] = summ
    finally:
        _summary_job = None
    return out


# -- checking ------------------------------------------------------------------------
def _cached(cache: cache_mod.Cache, path: Path, s: Settings, fixing: bool, data: bytes | None,
            ext: FileFacts) -> runner.FileOutcome | None:
    if data is None:
        return None
    findings = cache.get(cache.key(data, ext.key()))
    if findings is None:
        return None
    if fixing and any(engine.applicable(f, s) for f in findings):
        return None  # there is something to fix: run the fixer
    return runner.FileOutcome(path, findings)


def check_one(path: Path, s: Settings, fix: bool, diff: bool, cache: cache_mod.Cache | None,
              ext: FileFacts = EMPTY) -> runner.FileOutcome:
    before = _read(path) if cache is not None else None
    out = runner.check_file(path, s, fix=fix, diff=diff, ext=ext)
    out.findings = [cache_mod.portable(f) for f in out.findings]
    if (cache is not None and before is not None and out.error is None and not out.fixed and not out.diff
            and _read(path) == before):  # store only what was computed from the bytes now on disk
        cache.put(cache.key(before, ext.key()), out.findings)
    return out


def _work(i: int) -> tuple[int, runner.FileOutcome]:
    assert _job is not None
    paths, s, fix, diff, cache, facts = _job
    return i, check_one(paths[i], s, fix, diff, cache, facts.get(paths[i], EMPTY))


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
    data = {p: d for p in paths if (d := _read(p)) is not None}
    facts = project_facts(paths, s, data, cache, jobs or default_jobs())
    todo = []
    for i, p in enumerate(paths):
        hit = _cached(cache, p, s, fix or diff, data.get(p), facts.get(p, EMPTY)) if cache is not None else None
        if hit is not None:
            outcomes[i] = hit
        else:
            todo.append(i)
    jobs = min(jobs or default_jobs(), len(todo))
    methods = multiprocessing.get_all_start_methods()
    if jobs <= 1 or "fork" not in methods:
        for i in todo:
            outcomes[i] = check_one(paths[i], s, fix, diff, cache, facts.get(paths[i], EMPTY))
        return outcomes  # type: ignore[return-value]
    todo.sort(key=lambda i: -_size(paths[i]))  # largest first: no straggler at the end
    _job = (paths, s, fix, diff, cache, facts)
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for i, out in pool.imap_unordered(_work, todo, chunksize=CHUNK):
                outcomes[i] = out
    finally:
        _job = None
    return outcomes  # type: ignore[return-value]
