"""Check many files: the project index, cached results first, the rest in forked worker processes.

Each file's result depends on its cross-file facts (analysis/project.py), which come from the
index of the file's whole PROJECT (analysis/root.py), never from the run's list of files. A run goes:
  1. per project of the run's files: every Python file of the project is read and hashed; the
     facts of the wanted files come from one cache entry ("proj", keyed by the whole project's
     content) when nothing changed, or from the last index's entry when no edit since changed a
     summary it read or what may hold a root ("last": an edit in a body, a comment);
  2. else every file's summary from the cache by content; files without one that may hold a
     compiled root (a text test) or are being checked get one in the workers, from one `ast`
     parse (for the run's own files, that of the runner's validation, which also tells whether
     the file alone has compiled code: prefilter.py); the index reads the rest on demand;
  3. the index, in this process, gives each wanted file its facts;
  4. a valid file without compiled code of its own, to which the index adds none, has no finding
     (what the runner would find, without parsing it again); the rest come from the cache (key:
     content + facts) or are checked with their facts, in the workers. A lint-only run of many
     files also stores its findings in one entry ("run", keyed by every file's key), which the
     next such run reads instead of one entry a file.
So a cold run lints each file once, with its facts, and a run on one file (pre-commit, stdin, the
language server, Fixit through rules/provider.py) sees what a run on the whole tree sees. Workers
(workers.py) are forked once a run, for the index's first pass (before there is an index to copy),
and kept: while this process builds the index they summarise batches of files it is about to read,
load the engine (libcst, the rules) and parse the lint's skeletons, then they lint, each file where
its skeleton was parsed. A run whose first pass forks none (all summaries cached) forks them for
the lint, after loading the engine here; a run whose files all come from the cache loads neither
the rules nor libcst. They take the files largest first and send back findings without libcst nodes.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import files, gcpause, prefilter, runner, skeleton, stamps
from . import cache as cache_mod
from .analysis import project
from .analysis import root as root_mod
from .analysis import summary as summary_mod
from .analysis.external import EMPTY, FileFacts
from .settings import Settings
from .workers import Workers


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


# -- one file ------------------------------------------------------------------------
def check_one(path: Path, s: Settings, fix: bool, diff: bool, cache: cache_mod.Cache | None,
              ext: FileFacts = EMPTY, before: bytes | None = None, digest: str | None = None,
              lean: tuple | None = None) -> runner.FileOutcome:
    """`digest`: the sha256 of `before`, when the caller has it (the project index's). `lean`: the
    file's skeleton from the first pass (`Early.lean`), used when the file still has those bytes."""
    if before is None and cache is not None:
        before, digest = _read(path), None
    out = runner.check_file(path, s, fix=fix, diff=diff, ext=ext, lean=lean)
    out.findings = [cache_mod.portable(f) for f in out.findings]
    if (cache is not None and before is not None and out.error is None and not out.fixed and not out.diff
            and _read(path) == before):  # store only what was computed from the bytes now on disk
        cache.put(cache.key(before, ext.key(), digest), out.findings)
    return out


@dataclass
class Early:
    """What a lint run learns of its own files in the index's first pass (one `ast` parse each)."""
    skeletons: bool  # make each file's skeleton there (lint-only runs; skeleton.py)
    quiet: set[Path] = field(default_factory=set)  # valid, and no compiled code of their own
    lean: dict[Path, tuple] = field(default_factory=dict)  # path -> (bytes, *skeleton.lean(...))


def _first_pass(item: tuple) -> tuple:
    """(summary, quiet, lean) of one file, from one `ast` parse of `data` (its bytes). `quiet` (only
    when `wanted`, the run checks the file): the file is valid and alone has no compiled code
    (prefilter.py), so it has no finding unless the index calls its defs compiled. `lean` (when
    `skeletons` and not quiet): the file's skeleton before the index answers and the defs it cuts
    (skeleton.lean), so the lint needs no second `ast` parse. The summary is cached here, in the
    worker, under `digest` (the content's)."""
    path, s, wanted, data, cache, digest, skeletons = item
    summ, quiet, lean = None, False, None
    with gcpause.paused():  # ast.parse makes many objects and no cycles: the collector only costs here
        if data is not None:
            try:
                tree = runner.validate(data) if wanted else None
            except Exception:  # bad input: the check says why
                tree = None
            if tree is not None:
                summ = summary_mod.summarize(tree, data.decode("utf-8", "replace"))
                quiet = s.prefilter and not prefilter.may_have_findings(data, s.compiled_scope, tree)
                if skeletons and not quiet:
                    try:
                        lean = skeleton.lean(data, tree, s.compiled_scope, trust=True)  # the index checks it
                    except Exception:  # an optimisation: the lint makes it again
                        lean = None
            else:
                summ = project.parse_summary(data)
            del tree  # freed while the collector is off: on, it would first walk the whole tree
    if summ is not None and cache is not None:
        cache.put_json("idx", digest, summ)
    return summ, quiet, lean


# -- the project index -----------------------------------------------------------------
# A file's facts come from the index of its whole project (analysis/root.py), never of the run:
# the project's files are summarised (ast, cached by content under "idx"; the missing ones in the
# workers, the run's own with their first pass), the index answers for the files asked, and
# those facts are kept under "proj", keyed by the content of the whole project.
# Where a root can come from in a file's own text: `def forward`, a forward installed by assignment
# (`X.forward = f`), or a compile function (`torch.compile`, `_dynamo.optimize`) or a name bound to one
# (`compile_fn`, `torch_compile`: any text holding "compile" or "optimize", but `re.compile`). Prose
# ("feed-forward", "forwards its arguments") is not: configuration, processing and tokenizer files are
# summarised only when reached. Not found either way (before, only where prose said "forward"): a
# forward inherited from a class that is no nn.Module (a mixin) by a module class whose file defines none.
# A word found with bytes.find, then its context (a regex over the whole file costs more than the parse).
_ROOT_WORDS = ((b"forward", re.compile(rb"(?:\.|(?<!\w)def\s+)\Z"), True),  # after `.` or `def`, a whole word
               (b"compile", re.compile(rb"(?<!\bre\.)\Z"), False), (b"optimize", None, False))


def _root_text(data: bytes) -> bool:
    """Whether `data` says `def forward` or `.forward` (whole words), `compile` (not `re.compile`) or `optimize`."""
    for word, before, whole in _ROOT_WORDS:
        i = data.find(word)
        while i >= 0:
            end = i + len(word)
            if (not whole or end == len(data) or not (data[end:end + 1].isalnum() or data[end:end + 1] == b"_")) \
                    and (before is None or before.search(data, max(0, i - 200), i)):
                return True
            i = data.find(word, end)
    return False


_memo: dict[str, dict[str, FileFacts]] = {}  # project key -> facts by absolute path (this process)
_indexes: dict[str, tuple] = {}  # project key -> (ProjectIndex, its reader, path -> module): the last built
_tool: list[bytes] = []


def _may_root(data: bytes, s: Settings) -> bool:
    """Whether a file may hold a compiled root (a `forward`, a torch.compile / _dynamo.optimize
    target, a `compiled-functions` def). A text test, so the roots are the same whichever
    summaries a run has at hand; the other files are summarised only when the index reaches them."""
    return bool(s.compiled_functions) or _root_text(data)


class _Reader:
    """Summaries of files the index reaches on demand: known ones, the cache by content, else parsed
    here; or in the workers, ahead, a batch of the project's files the index is about to read."""

    def __init__(self, cache: cache_mod.Cache | None, known: dict[Path, dict | None],
                 data: dict[Path, bytes] | None = None, digests: dict[Path, str] | None = None,
                 workers: Workers | None = None) -> None:
        self.cache = cache
        self.known = known
        self.data = data or {}
        self.project_digests = digests or {}
        self.digests: dict[str, str] = {}  # files read from outside the project -> sha256
        self.workers = workers
        self.ahead: dict[Path, dict | None] = {}  # summarised ahead, not yet read by the index

    def __call__(self, path: Path) -> dict | None:
        if path in self.known:
            return self.known[path]
        if path in self.ahead:
            got = self.known[path] = self.ahead.pop(path)
            return got
        data = self.data.get(path)
        if data is not None:
            got = self.known[path] = _summary(self.cache, data, self._digest(path))
            return got
        data = _read(path)
        if data is None:
            return None
        digest = self.digests[str(path)] = _digest(data)
        return _summary(self.cache, data, digest)

    def _digest(self, path: Path) -> str:
        return self.project_digests.get(path) or _digest(self.data[path])

    def prefetch(self, paths: list[Path]) -> None:
        """Summarise `paths` (the project's) in the workers when they are up and there are enough."""
        todo = [p for p in dict.fromkeys(paths) if p in self.data and p not in self.known and p not in self.ahead]
        if self.workers is None or not self.workers.forked or len(todo) < PREFETCH_MIN:
            return
        items = [(p, self.cache, self.data[p], self._digest(p)) for p in todo]
        self.ahead.update(zip(todo, self.workers.map(_summary_item, items)))


PREFETCH_MIN = 8  # files: fewer are read here as the index reaches them


def _summary_item(item: tuple) -> dict | None:
    _, cache, data, digest = item
    return _summary(cache, data, digest)


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


def _project_key(proj: root_mod.Project, run: dict[str, Path], digests: dict[Path, str], s: Settings) -> str:
    if not _tool:
        _tool.append(cache_mod._tool_fingerprint())
    h = hashlib.sha256(_tool[0])
    h.update(repr((repr(proj), s.module_bases, s.compiled_functions, [p for p in sys.path if p])).encode())
    for mod, path in run.items():
        h.update(f"{mod}\0{path}\0{digests[path]}\0".encode())
    return h.hexdigest()


def _cached_project(cache: cache_mod.Cache | None, key: str) -> tuple[dict[str, FileFacts], dict[str, str]]:
    """(facts by absolute path, the installed files they were read from -> digest); empty when none."""
    return _valid_project(cache.get_json("proj", key) if cache is not None else None)


def _valid_project(got: dict | None) -> tuple[dict[str, FileFacts], dict[str, str]]:
    """The facts and installed files of a "proj" entry, when those files are unchanged; else empty."""
    if got is None:
        return {}, {}
    for p, d in got["external"].items():  # installed packages the index read
        data = _read(Path(p))
        if data is None or _digest(data) != d:
            return {}, {}
    return {p: FileFacts.from_json(f) for p, f in got["files"].items()}, got["external"]


def _summary_digest(summ: dict | None) -> str:
    return _digest(json.dumps(summ, sort_keys=True).encode())


def _project_id(proj: root_mod.Project, s: Settings) -> str:
    """The project, whatever its files hold (the key of its "last" record)."""
    return _project_key(proj, {}, {}, s)


def _record(key: str, run: dict[str, Path], pdata: dict[Path, bytes], digests: dict[Path, str],
            read: dict[str, str], s: Settings) -> dict:
    """What a project's facts (cached under `key`) depend on: its modules, and for every file its
    content digest, the digest of its summary when the index read it (else None) and whether it
    may hold a root (a text test: the index summarises those whatever reads them)."""
    return {"key": key, "run": {m: str(p) for m, p in run.items()},
            "files": {str(p): [digests[p], read.get(str(p)), _may_root(d, s)] for p, d in pdata.items()}}


def _unchanged_facts(cache: cache_mod.Cache | None, proj: root_mod.Project, s: Settings, key: str,
                     run: dict[str, Path], pdata: dict[Path, bytes], digests: dict[Path, str],
                     wanted: set[Path]) -> dict[str, FileFacts]:
    """The facts of the project's last index when no edit since can change them (else {}): the same
    files and modules; each changed file may hold a root as before, and when the index read its
    summary, the summary is the same (an edit inside a function body, a comment, a docstring). The
    index reads summaries only, so it would read the same ones and answer the same; the facts are
    stored under the new `key` too."""
    last = cache.get_json("last", _project_id(proj, s)) if cache is not None else None
    if last is None or last["run"] != {m: str(p) for m, p in run.items()} or \
            set(last["files"]) != {str(p) for p in pdata}:
        return {}
    read = {}
    for p, d in pdata.items():
        old_digest, old_summary, old_root = last["files"][str(p)]
        if old_summary is not None:
            read[str(p)] = old_summary
        if digests[p] == old_digest:
            continue
        if _may_root(d, s) != old_root:
            return {}
        if old_summary is not None and _summary_digest(_summary(cache, d, digests[p])) != old_summary:
            return {}
    got = cache.get_json("proj", last["key"])  # type: ignore[union-attr]
    facts = _valid_project(got)[0]
    if not facts or any(str(a) not in facts for a in wanted):
        return {}
    cache.put_json("proj", key, got)  # type: ignore[union-attr]
    cache.put_json("last", _project_id(proj, s), _record(key, run, pdata, digests, read, s))  # type: ignore[union-attr]
    return facts


@contextlib.contextmanager
def _locked(cache: cache_mod.Cache | None, proj: root_mod.Project):
    """One process at a time indexes a project (Fixit's workers, pre-commit hooks in parallel):
    the others wait, then read its cached facts."""
    fh = None
    if cache is not None:
        try:
            import fcntl

            folder = cache.dir / "proj"
            folder.mkdir(parents=True, exist_ok=True)
            fh = open(folder / f"{_digest(str(proj).encode())[:20]}.lock", "w")
            fcntl.flock(fh, fcntl.LOCK_EX)
        except (OSError, ImportError):
            pass
    try:
        yield
    finally:
        if cache is not None:
            cache.flush()  # the facts stored meanwhile, for the processes that waited
        if fh is not None:
            fh.close()


def _index_project(proj: root_mod.Project, key: str, run: dict[str, Path], roots: list[Path],
                   pdata: dict[Path, bytes], digests: dict[Path, str], wanted: set[Path], s: Settings,
                   cache: cache_mod.Cache | None, workers: Workers, given: dict[Path, Path],
                   early: Early | None) -> tuple[dict[str, FileFacts], dict[str, str] | None, dict[str, str]]:
    """(facts by absolute path of the `wanted` files, the installed files the index read -> digest,
    or None when one could not be read, the project files whose summaries it read -> the summary's
    digest). The index stays in this process for the project's next
    files (the CLI checks files with other per-file settings separately)."""
    state = _indexes.get(key)
    if state is None:
        rooted = {m for m, p in run.items() if _may_root(pdata[p], s)}
        summaries = {p: _cached_summary(cache, digests[p]) for m, p in run.items() if m in rooted or p in wanted}
        todo = [p for p, summ in summaries.items() if summ is None]  # the others: read when reached
        items = [(given.get(p, p), s, early is not None and p in wanted, pdata[p], cache, digests[p],
                  early is not None and early.skeletons) for p in todo]
        for p, got in zip(todo, workers.map(_first_pass, items)):
            summaries[p] = got[0]
            if early is not None and got[1]:
                early.quiet.add(given[p])
            if early is not None and got[2] is not None:
                early.lean[given[p]] = (pdata[p], *got[2])
        done = set(todo)
        known = {p: summ for p, summ in summaries.items() if summ is not None or p in done}
        reader = _Reader(cache, known, pdata, digests, workers)
        up_front = {m: (p, summaries[p]) for m, p in run.items() if m in rooted and summaries[p] is not None}
        others = {m: p for m, p in run.items() if m not in rooted}

        def grep(pattern) -> list[str]:  # the files not read up front that may hold overrides (read next)
            hits = [m for m, p in others.items() if pattern.search(pdata[p])]
            reader.prefetch([others[m] for m in hits])
            return hits

        def ahead(mods: list[str]) -> None:  # modules the index is about to read (its first reads)
            reader.prefetch([run[m] for m in mods if m in run])
            # then the workers load the engine and parse the lint's skeletons while this process reads on
            workers.warm_up([(path, lean[1]) for path, lean in early.lean.items()] if early is not None else [])

        index = project.ProjectIndex(run, up_front, roots, reader, s.module_bases, s.compiled_functions, grep,
                                     ahead)
        state = (index, reader, {p: m for m, p in run.items()})
        _indexes.clear()  # one project at a time
        _indexes[key] = state
    index, reader, by_path = state
    out: dict[str, FileFacts] = {}
    with gcpause.paused():  # the index makes many small objects and no cycles
        for p in sorted(wanted, key=str):
            out[str(p)] = index.file_facts(by_path[p]) if p in by_path else EMPTY
    external = {str(index.paths[m]): reader.digests.get(str(index.paths[m]))
                for m in index.external if m not in run}
    read = {str(p): _summary_digest(summ) for p, summ in reader.known.items() if p in pdata} \
        if cache is not None else {}  # what the cache's record lists: not needed without one
    return out, (external if all(external.values()) else None), read


def _facts_in(proj: root_mod.Project, members: list[Path], s: Settings, cache: cache_mod.Cache | None,
              workers: Workers, data: dict[Path, bytes], early: Early | None,
              known: dict[Path, str] | None = None,
              depends: stamps.Depends | None = None) -> dict[Path, FileFacts]:
    """Facts of `members` (files of `proj`, as given) from the index of the whole project; `known`
    gets each member's content digest (its cache key needs it too); `depends` the files they
    were computed from (the project's, and the installed ones its stored entry lists)."""
    given = {Path(os.path.abspath(m)): m for m in members}
    listed = root_mod.project_files(proj)
    inside = set(listed)
    every = listed + [a for a in given if a not in inside]  # a file named outside the walk joins
    pdata: dict[Path, bytes] = {}
    for f in every:
        d = data.get(given[f]) if f in given else _read(f)
        if d is not None:
            pdata[f] = d
    digests = {f: _digest(d) for f, d in pdata.items()}
    if known is not None:
        known.update((given[a], digests[a]) for a in given if a in digests)
    run, roots = _run_modules(every, pdata)
    if proj.recursive and proj.root not in roots and any(r != proj.root and proj.root in r.parents for r in roots):
        roots.append(proj.root)  # folders without __init__.py (PEP 420: sglang/srt, fla): imports from the root
    key = _project_key(proj, run, digests, s)
    wanted = {a for a in given if a in pdata}
    got = _memo.get(key) or _cached_project(cache, key)[0]
    if any(str(a) not in got for a in wanted):
        with _locked(cache, proj):
            stored, before = _cached_project(cache, key)  # another process may have built it meanwhile
            fresh = not got and not stored
            got = {**got, **stored}
            if any(str(a) not in got for a in wanted) and fresh:
                got = _unchanged_facts(cache, proj, s, key, run, pdata, digests, wanted)
            if any(str(a) not in got for a in wanted):
                new, external, read = _index_project(proj, key, run, roots, pdata, digests, wanted, s, cache,
                                                     workers, given, early)
                got = {**got, **new}
                if cache is not None and external is not None:
                    cache.put_json("proj", key, {"files": {p: f.to_json() for p, f in got.items()},
                                                 "external": {**before, **external}})
                    if fresh:  # every fact here comes from this index: what it read is all they depend on
                        cache.put_json("last", _project_id(proj, s), _record(key, run, pdata, digests, read, s))
    if len(_memo) > 8:
        _memo.clear()
    _memo[key] = got
    if depends is not None:
        depends.files.update(str(f) for f in pdata)
        entry = cache.get_json("proj", key) if cache is not None else None
        if entry is None:  # not stored (an installed file could not be read): unknown
            depends.ok = False
        else:
            depends.external.update(entry["external"])
    return {given[a]: got[str(a)] for a in wanted}


def _projects(paths, s: Settings) -> dict[root_mod.Project, list[Path]]:
    """The run's files by project."""
    groups: dict[root_mod.Project, list[Path]] = {}
    by_folder: dict[Path, root_mod.Project] = {}  # a file's project depends on its folder only
    for p in paths:
        proj = by_folder.get(p.parent)
        if proj is None:
            proj = by_folder[p.parent] = root_mod.find_project(p, s)
        groups.setdefault(proj, []).append(p)
    return groups


def _run_facts(paths: list[Path], s: Settings, cache: cache_mod.Cache | None, workers: Workers,
               data: dict[Path, bytes], early: Early | None,
               known: dict[Path, str] | None = None,
               depends: stamps.Depends | None = None) -> dict[Path, FileFacts]:
    """Each readable file's facts, from the index of its project (analysis/root.py); `known` and
    `depends`: as in `_facts_in`."""
    facts: dict[Path, FileFacts] = {}
    for proj, members in _projects([p for p in paths if p in data], s).items():
        facts.update(_facts_in(proj, members, s, cache, workers, data, early, known, depends))
    return facts


def project_facts(paths: list[Path], s: Settings, cache: cache_mod.Cache | None = None,
                  jobs: int = 1) -> dict[Path, FileFacts]:
    """Each file's cross-file facts (what `check_files` computes, without linting)."""
    data = {p: d for p in paths if (d := _read(p)) is not None}
    with Workers(jobs) as workers:
        return _run_facts(paths, s, cache, workers, data, None)


def facts_of(path: Path, s: Settings, use_cache: bool = True) -> FileFacts | None:
    """The cross-file facts of one file named by an editor, Fixit or `--stdin-filename`: those of
    its project's index (the files on disk), or None when it is not on disk or cannot be indexed."""
    try:
        if not path.is_file():
            return None
        cache = cache_mod.Cache.for_settings(s) if use_cache else None
        import multiprocessing

        jobs = 1 if multiprocessing.current_process().daemon else default_jobs()  # daemons fork no pool
        return project_facts([path], s, cache, jobs).get(path)
    except Exception:  # the index is an aid: the file is still linted on its own
        return None


# -- many files ----------------------------------------------------------------------------
def check_files(paths: list[Path], s: Settings, *, fix: bool = False, diff: bool = False,
                jobs: int | None = None, use_cache: bool = True) -> list[runner.FileOutcome]:
    """One outcome per path, in the order given."""
    jobs = jobs or default_jobs()
    cache = cache_mod.Cache.for_settings(s) if use_cache else None
    outcomes: list[runner.FileOutcome | None] = [None] * len(paths)
    began = stamps.now()
    stamp_key = _stamp_key(cache, paths) if not (fix or diff) else None
    got = _stamped(cache, stamp_key, paths, s) if stamp_key is not None else None
    if got is not None:  # nothing changed since a run of the same files: not one is read
        return [runner.FileOutcome(p, findings) for p, findings in zip(paths, got)]
    data = {p: d for p in paths if (d := _read(p)) is not None}
    early = Early(skeletons=not (fix or diff) and s.skeleton)
    digests: dict[Path, str] = {}  # each file's content digest, from the index: hashed once a run
    depends = stamps.Depends() if stamp_key is not None else None
    with Workers(jobs, lint=True) as workers:  # forked for the index's first pass, kept for the lint
        facts = _run_facts(paths, s, cache, workers, data, early, digests, depends)
        run_key = _run_key(cache, paths, data, facts, digests) if not (fix or diff) else None
        got = cache.get_run(run_key) if run_key is not None else None  # type: ignore[union-attr]
        if got is not None and len(got) == len(paths):
            _stamp_run(cache, stamp_key, run_key, paths, depends, began)
            cache.flush()  # type: ignore[union-attr]
            return [runner.FileOutcome(p, findings) for p, findings in zip(paths, got)]
        rest = []
        for i, p in enumerate(paths):
            ext = facts.get(p, EMPTY)
            if p in early.quiet and not prefilter.index_adds_compiled(ext):  # no compiled code: what the runner would say
                out = outcomes[i] = runner.FileOutcome(p)
                if cache is not None and _read(p) == data[p]:
                    cache.put(cache.key(data[p], ext.key(), digests.get(p)), out.findings)
                continue
            hit = _cached(cache, p, s, fix or diff, data.get(p), ext, digests.get(p)) if cache is not None else None
            if hit is not None:
                outcomes[i] = hit
            else:
                rest.append(i)
        fork = len(rest) > 1 and workers.jobs > 1 and not workers.fits(len(rest))
        if fork:  # none yet, or fewer than these files need (the first pass had fewer): forked anew
            workers.close()
        if rest and not workers.forked:
            runner.load()  # libcst and the rules, once, before the workers are forked
        if fork:  # workers are forked next: they need none of the index (their GC would walk it)
            _indexes.clear()
            gc.collect()
        items = [(paths[i], s, fix, diff, cache, facts.get(paths[i], EMPTY), data.get(paths[i]),
                  digests.get(paths[i]), early.lean.get(paths[i])) for i in rest]
        if fork:  # what the workers inherit is never garbage there: their collections skip it
            gc.freeze()
        try:
            done = workers.map(_second_pass, items, key=lambda item: item[0])  # where its skeleton was parsed
        finally:
            if fork:
                gc.unfreeze()
        for i, out in zip(rest, done):
            outcomes[i] = out
        if run_key is not None and all(o.error is None for o in outcomes) and all(_read(p) == data[p] for p in paths):
            cache.put_run(run_key, [o.findings for o in outcomes])  # type: ignore[union-attr]
            _stamp_run(cache, stamp_key, run_key, paths, depends, began)
        if cache is not None:
            cache.flush()
        return outcomes  # type: ignore[return-value]


RUN_MIN = 64  # files: a run of fewer reads one cache entry a file about as fast


def _run_key(cache: cache_mod.Cache | None, paths: list[Path], data: dict[Path, bytes],
             facts: dict[Path, FileFacts], digests: dict[Path, str]) -> str | None:
    """The key of a lint-only run's findings stored together: every file's own key (content, facts,
    settings, tool), in order. One read then serves a warm run of a whole tree."""
    if cache is None or len(paths) < RUN_MIN or any(p not in data for p in paths):
        return None
    keys = [cache.key(data[p], facts.get(p, EMPTY).key(), digests.get(p)) for p in paths]
    return _digest("\0".join(keys).encode())


def _stamp_key(cache: cache_mod.Cache | None, paths: list[Path]) -> str | None:
    if cache is None or len(paths) < RUN_MIN:
        return None
    return stamps.run_key(cache.prefix, paths, f"max-bytes={runner.MAX_BYTES}")


def _stamped(cache: cache_mod.Cache, key: str, paths: list[Path], s: Settings) -> list[list] | None:
    """The findings of the last run of `paths` when no file it read has changed since (stamps.py)."""
    stored = cache.get_json("stamp", key)
    if stored is None or not stamps.unchanged(stored):  # an edit: seen before the project is walked
        return None
    listed = {os.path.abspath(p) for p in paths}
    for proj in _projects(paths, s):
        listed.update(str(f) for f in root_mod.project_files(proj))
    if not stamps.same_files(stored, listed):  # a file added to the project
        return None
    got = cache.get_run(stored["run"])
    return got if got is not None and len(got) == len(paths) else None


def _stamp_run(cache, key: str | None, run_key: str, paths: list[Path], depends: stamps.Depends | None,
               began: int) -> None:
    if key is None or depends is None:
        return
    got = stamps.record(paths, depends, began)
    if got is not None:
        cache.put_json("stamp", key, {**got, "run": run_key})


def _second_pass(item: tuple) -> runner.FileOutcome:
    path, s, fix, diff, cache, ext, before, digest, lean = item
    return check_one(path, s, fix, diff, cache, ext, before, digest, lean)


def _cached(cache: cache_mod.Cache, path: Path, s: Settings, fixing: bool, data: bytes | None,
            ext: FileFacts, digest: str | None = None) -> runner.FileOutcome | None:
    if data is None:
        return None
    findings = cache.get(cache.key(data, ext.key(), digest))
    if findings is None:
        return None
    if fixing and any(runner.load().applicable(f, s) for f in findings):
        return None  # there is something to fix: run the fixer
    return runner.FileOutcome(path, findings)

