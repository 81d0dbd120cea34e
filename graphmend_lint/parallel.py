"""Check many files: the project index, cached results first, the rest in forked worker processes.

Each file's result depends on its cross-file facts (analysis/project.py), so a run goes:
  1. the whole run's facts from one cache entry when no file (nor anything the index read) changed;
  2. else every file's summary from the cache by content; files without one get a first pass in
     the workers: validate, summarize (from the same `ast` tree) and, when only linting, lint
     with the file's own facts, recording what the file alone sees as compiled;
  3. the index, in this process, gives each file its facts;
  4. a first-pass result is final when the index adds nothing the file did not see alone (no
     other class with a forward, no other compiled def, no guard wrapper); the rest come from the
     cache (key: content + facts) or are checked again with their facts, in the workers.
So a cold run parses each file once more only where another file changes its result. Workers
are forked after the rules and settings are loaded; they take the files largest first, a few at
a time, and send back findings without libcst nodes.
"""
from __future__ import annotations

import gc
import hashlib
import multiprocessing
import os
import sys
from pathlib import Path

from . import engine, files, runner
from . import cache as cache_mod
from .analysis import project
from .analysis import summary as summary_mod
from .analysis.external import EMPTY, FileFacts
from .settings import Settings

CHUNK = 4  # files per task handed to a worker
_job: tuple | None = None  # (function, items): set before the fork


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


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _call(i: int):
    assert _job is not None
    fn, items = _job
    return i, fn(items[i])


def _map(fn, items: list, jobs: int) -> list:
    """fn over items, in forked workers when it pays (largest files first), results in order."""
    global _job
    if jobs <= 1 or len(items) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(x) for x in items]
    out: list = [None] * len(items)
    order = sorted(range(len(items)), key=lambda i: -_size(items[i][0] if isinstance(items[i], tuple) else items[i]))
    _job = (fn, items)
    try:
        with multiprocessing.get_context("fork").Pool(min(jobs, len(items))) as pool:
            for i, r in pool.imap_unordered(_call, order, chunksize=CHUNK):
                out[i] = r
    finally:
        _job = None
    return out


# -- one file ------------------------------------------------------------------------
def check_one(path: Path, s: Settings, fix: bool, diff: bool, cache: cache_mod.Cache | None,
              ext: FileFacts = EMPTY, before: bytes | None = None) -> runner.FileOutcome:
    before = before if before is not None or cache is None else _read(path)
    out = runner.check_file(path, s, fix=fix, diff=diff, ext=ext)
    out.findings = [cache_mod.portable(f) for f in out.findings]
    if (cache is not None and before is not None and out.error is None and not out.fixed and not out.diff
            and _read(path) == before):  # store only what was computed from the bytes now on disk
        cache.put(cache.key(before, ext.key()), out.findings)
    return out


def _first_pass(item: tuple) -> tuple:
    """(summary, (classes, compiled) the file alone sees, outcome or None) for one file."""
    path, s, lint = item
    got: list = []

    def on_tree(source: bytes, tree) -> None:
        got.append(summary_mod.summarize(tree, source.decode("utf-8", "replace")))

    if not lint:
        data = _read(path)
        summ = project.parse_summary(data) if data is not None else None
        return summ, None, None
    out = runner.check_file(path, s, ext=EMPTY, on_tree=on_tree)
    out.findings = [cache_mod.portable(f) for f in out.findings]
    return (got[0] if got else None), out.scope, out


def _forward_classes(summ: dict | None) -> frozenset:
    return frozenset(qn.split(".")[0] for qn in (summ["defs"] if summ else ()) if qn.endswith(".forward"))


def _adds_nothing(ext: FileFacts, local: tuple | None, with_forward: frozenset) -> bool:
    """The index tells the file nothing it did not see alone: its first-pass result stands."""
    if local is None:
        return False
    classes, compiled = local
    if ext.compiled - compiled or ext.guards:
        return False
    return not (ext.module_classes - classes) & with_forward


# -- the project index -----------------------------------------------------------------
class _Reader:
    """Summaries of files outside the first pass: the cache by content, else parsed here."""

    def __init__(self, cache: cache_mod.Cache | None, known: dict[Path, dict | None]) -> None:
        self.cache = cache
        self.known = known
        self.digests: dict[str, str] = {}  # files read from outside the run -> sha256

    def __call__(self, path: Path) -> dict | None:
        if path in self.known:
            return self.known[path]
        data = _read(path)
        if data is None:
            return None
        digest = self.digests[str(path)] = _digest(data)
        return _summary(self.cache, data, digest)


def _cached_summary(cache: cache_mod.Cache | None, digest: str) -> dict | None:
    got = cache.get_json("idx", digest) if cache is not None else None
    return got if got is not None and got.get("v") == summary_mod.VERSION else None


def _summary(cache: cache_mod.Cache | None, data: bytes, digest: str) -> dict | None:
    got = _cached_summary(cache, digest)
    if got is None:
        got = project.parse_summary(data)
        if got is not None and cache is not None:
            cache.put_json("idx", digest, got)
    return got


def _run_modules(paths: list[Path], data: dict[Path, bytes]) -> tuple[dict[str, Path], list[Path]]:
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
    return run, roots


def _run_key(cache: cache_mod.Cache, run: dict[str, Path], digests: dict[Path, str]) -> str:
    h = hashlib.sha256(cache.prefix)
    for mod, path in sorted(run.items()):
        h.update(f"{mod}\0{path}\0{digests[path]}\0".encode())
    h.update(repr([p for p in sys.path if p]).encode())
    return h.hexdigest()


def _cached_facts(cache: cache_mod.Cache | None, key: str | None) -> dict[Path, FileFacts] | None:
    got = cache.get_json("run", key) if cache is not None and key is not None else None
    if got is None:
        return None
    for p, d in got["external"].items():
        data = _read(Path(p))
        if data is None or _digest(data) != d:
            return None
    return {Path(p): FileFacts.from_json(f) for p, f in got["files"].items()}


def _index(run: dict[str, Path], roots: list[Path], summaries: dict[Path, dict | None], s: Settings,
           cache: cache_mod.Cache | None, key: str | None) -> dict[Path, FileFacts]:
    reader = _Reader(cache, summaries)
    up_front = {m: (p, summaries.get(p)) for m, p in run.items() if summaries.get(p) is not None}
    index = project.ProjectIndex(run, up_front, roots, reader, s.module_bases, s.compiled_functions)
    facts = {p: f for mod, p in run.items() if (f := index.file_facts(mod)) != EMPTY}
    if cache is not None and key is not None:
        external = {str(index.paths[m]): reader.digests.get(str(index.paths[m]))
                    for m in index.external if m not in run}
        if all(external.values()):
            cache.put_json("run", key, {"files": {str(p): f.to_json() for p, f in facts.items()},
                                        "external": external})
    return facts


def project_facts(paths: list[Path], s: Settings, cache: cache_mod.Cache | None = None) -> dict[Path, FileFacts]:
    """Each file's cross-file facts (one process; `check_files` does the same with workers)."""
    data = {p: d for p in paths if (d := _read(p)) is not None}
    run, roots = _run_modules(paths, data)
    summaries = {p: _summary(cache, data[p], _digest(data[p])) for p in run.values()}
    return _index(run, roots, summaries, s, cache, None)


def facts_of(path: Path, s: Settings) -> FileFacts | None:
    """The cross-file facts of one file named by an editor or `--stdin-filename` (its bases and
    callers as the files on disk show them), or None when it is not on disk or cannot be indexed."""
    try:
        if not path.is_file():
            return None
        return project_facts([path], s).get(path)
    except Exception:  # the index is an aid: the file is still linted on its own
        return None


# -- many files ----------------------------------------------------------------------------
def check_files(paths: list[Path], s: Settings, *, fix: bool = False, diff: bool = False,
                jobs: int | None = None, use_cache: bool = True) -> list[runner.FileOutcome]:
    """One outcome per path, in the order given."""
    jobs = jobs or default_jobs()
    cache = cache_mod.Cache.for_settings(s) if use_cache else None
    outcomes: list[runner.FileOutcome | None] = [None] * len(paths)
    data = {p: d for p in paths if (d := _read(p)) is not None}
    digests = {p: _digest(d) for p, d in data.items()}
    run, roots = _run_modules(paths, data)
    key = _run_key(cache, run, digests) if cache is not None else None
    facts = _cached_facts(cache, key)
    first: dict[Path, tuple] = {}
    if facts is None:
        summaries = {p: _cached_summary(cache, digests[p]) for p in run.values()}
        todo = [p for p, summ in summaries.items() if summ is None]
        lint = not (fix or diff)
        for p, got in zip(todo, _map(_first_pass, [(p, s, lint) for p in todo], jobs)):
            summaries[p] = got[0]
            if got[0] is not None and cache is not None:
                cache.put_json("idx", digests[p], got[0])
            if got[2] is not None:
                first[p] = (got[1], got[2], _forward_classes(got[0]))
        facts = _index(run, roots, summaries, s, cache, key)
        del summaries
        gc.collect()  # the workers forked next need none of it
    rest = []
    for i, p in enumerate(paths):
        ext = facts.get(p, EMPTY)
        if p in first and (first[p][1].error is not None or _adds_nothing(ext, first[p][0], first[p][2])):
            out = outcomes[i] = first[p][1]
            if cache is not None and out.error is None and _read(p) == data[p]:
                cache.put(cache.key(data[p], ext.key()), out.findings)
            continue
        hit = _cached(cache, p, s, fix or diff, data.get(p), ext) if cache is not None else None
        if hit is not None:
            outcomes[i] = hit
        else:
            rest.append(i)
    done = _map(_second_pass, [(paths[i], s, fix, diff, cache, facts.get(paths[i], EMPTY), data.get(paths[i]))
                               for i in rest], jobs)
    for i, out in zip(rest, done):
        outcomes[i] = out
    return outcomes  # type: ignore[return-value]


def _second_pass(item: tuple) -> runner.FileOutcome:
    path, s, fix, diff, cache, ext, before = item
    return check_one(path, s, fix, diff, cache, ext, before)


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

