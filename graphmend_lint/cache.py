"""A persistent cache of per-file results, keyed by content, tool and settings.

Key: sha256 of (the source bytes, every source file of graphmend_lint, the libcst/fixit/Python
versions, the settings, and the file's facts from the project index: a file whose base class or
caller changed in another file gets a new key). The index keeps its own entries here too
(`idx`: one summary per file content, `proj`: the facts of a project's files, keyed by the
content of the whole project, see parallel.py). Every entry lives in one SQLite file
(`cache.db`, write-ahead log), opened once per process: a cold run of a large tree stores
thousands of entries, and a file each cost more than the parse of a small file (creating a file
is the slow part on a busy disk). Writes wait in memory and go in one transaction (`flush`: when
many are waiting, when a project's index is done, when a worker ends, at exit), so concurrent
runs (pre-commit in parallel) never see half an entry. Only clean results are stored (no read
or parse error), and only for files left unchanged by the run. A cache that cannot be opened or
written is only slower.
"""
from __future__ import annotations

import atexit
import dataclasses
import enum
import hashlib
import importlib.util
import json
import os
import sys
import threading
from pathlib import Path

from . import settings as settings_mod
from .findings import Finding, Safety

DIR_NAME = ".graphmend_cache"
_PACKAGE = Path(__file__).resolve().parent


class HasFix:
    """Stands in for a finding's replacement node once it has left the process that made it."""

    def __repr__(self) -> str:
        return "<fix>"


HAS_FIX = HasFix()


def _installed(package: str) -> str:
    """Where `package` is installed and when its `__init__` was written, without importing it
    (importlib.metadata's version costs a warm run ~50 ms of imports); '?' when it is absent."""
    try:
        spec = importlib.util.find_spec(package)
        st = os.stat(spec.origin)  # type: ignore[union-attr, arg-type]
    except (ImportError, ValueError, TypeError, AttributeError, OSError):
        return "?"
    return f"{spec.origin}:{st.st_size}:{st.st_mtime_ns}"


def _tool_fingerprint() -> bytes:
    h = hashlib.sha256()
    for p in sorted(_PACKAGE.rglob("*.py")):
        h.update(p.relative_to(_PACKAGE).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    for dist in ("libcst", "fixit"):  # the installed copy: a new install writes new files
        h.update(f"{dist}={_installed(dist)};".encode())
    h.update(sys.version.encode())
    return h.digest()


def _settings_fingerprint(s: settings_mod.Settings) -> bytes:
    fields = {f.name: getattr(s, f.name) for f in dataclasses.fields(s) if f.name != "root"}
    return repr(sorted(fields.items())).encode()


def portable(finding):
    """A finding without libcst nodes (picklable, storable); `replacement` becomes HAS_FIX."""
    return dataclasses.replace(finding, node=None,
                               replacement=None if finding.replacement is None else HAS_FIX)


def _encode(finding) -> dict:
    out = {}
    for f in dataclasses.fields(finding):
        if f.name == "node":
            continue
        v = getattr(finding, f.name)
        if f.name == "replacement":
            v = v is not None
        elif isinstance(v, enum.Enum):
            v = v.value
        elif isinstance(v, tuple):
            v = list(v)
        out[f.name] = v
    return out


def _decode(d: dict, finding_cls, safety_cls):
    d = dict(d)
    d["replacement"] = HAS_FIX if d.get("replacement") else None
    d["safety"] = safety_cls(d["safety"])
    if "fix_range" in d:
        d["fix_range"] = tuple(d["fix_range"])
    return finding_cls(**d)


class _Store:
    """The entries of one cache folder (`cache.db`) as seen by this process: a connection and the
    writes not yet made. Shared by every Cache of the folder in the process (a worker unpickles
    one Cache per task); its threads take turns."""

    FLUSH_AT = 512  # entries waiting: a cold run's worker writes a few transactions, not thousands

    def __init__(self, folder: Path) -> None:
        self.folder, self.path = folder, folder / "cache.db"
        self.lock = threading.Lock()
        self.pending: dict[str, str] = {}
        self.db = None
        self.broken = False

    def _open(self):
        if self.db is None and not self.broken:
            try:
                self.db = self._connect()
            except Exception:  # sqlite3 missing, a read-only or unusable folder: no cache
                self.broken = True
        return self.db

    def _connect(self):
        import sqlite3

        self.folder.mkdir(parents=True, exist_ok=True)
        ignore = self.folder.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# created by graphmend-lint\n*\n")
        for attempt in (0, 1):
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            try:
                db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
                db.execute("PRAGMA synchronous=NORMAL")  # a cache: no fsync per transaction
                db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
                return db
            except sqlite3.DatabaseError as e:
                db.close()
                if attempt or isinstance(e, sqlite3.OperationalError):  # locked, read-only: not ours to remove
                    raise
                for suffix in ("", "-wal", "-shm"):  # not a database (a crash, another program): start again
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        raise AssertionError("unreachable")

    def get(self, key: str) -> str | None:
        with self.lock:
            if key in self.pending:
                return self.pending[key]
            db = self._open()
            if db is None:
                return None
            try:
                rows = db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchall()  # read to the end
            except Exception:
                return None
        return rows[0][0] if rows else None

    def put(self, key: str, value: str) -> None:
        with self.lock:
            self.pending[key] = value
            full = len(self.pending) >= self.FLUSH_AT
        if full:
            self.flush()

    def flush(self) -> None:
        with self.lock:
            rows, self.pending = list(self.pending.items()), {}
            if not rows or self._open() is None:
                return
            if not self.path.exists():  # the folder was cleared meanwhile: a new file
                self._drop()
                if self._open() is None:
                    return
            try:
                with self.db:  # one transaction
                    self.db.execute("BEGIN IMMEDIATE")
                    self.db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?)", rows)
            except Exception:  # another run held it too long, a full disk: these entries are lost
                pass

    def close(self) -> None:
        with self.lock:
            self._drop()

    def _drop(self) -> None:
        if self.db is not None:
            try:
                self.db.close()
            except Exception:  # closed is closed
                pass
            self.db = None


_stores: dict[tuple[int, Path], _Store] = {}  # (process, folder): a forked worker opens its own


def _store(folder: Path) -> _Store:
    key = (os.getpid(), folder)
    got = _stores.get(key)
    if got is None:
        if not any(pid == os.getpid() for pid, _ in _stores):
            atexit.register(flush_all)  # a worker ends with os._exit: workers.py flushes it
        got = _stores[key] = _Store(folder)
    return got


def _mine() -> list[_Store]:
    """This process's stores (a forked worker holds its parent's too, never used)."""
    return [store for (pid, _), store in list(_stores.items()) if pid == os.getpid()]


def flush_all() -> None:
    """Write what this process's caches hold in memory."""
    for store in _mine():
        store.flush()


def close_all() -> None:
    """Close this process's connections (they open again when next used): SQLite's state must not
    cross a fork (its locks are the process's), whoever forks (our workers, Fixit's, multiprocessing)."""
    for store in _mine():
        store.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=close_all)


class Cache:
    def __init__(self, directory: Path, s: settings_mod.Settings) -> None:
        self.dir = directory / "v2"
        self.prefix = hashlib.sha256(_tool_fingerprint() + _settings_fingerprint(s)).digest()

    @classmethod
    def for_settings(cls, s: settings_mod.Settings) -> "Cache":
        """`$GRAPHMEND_CACHE_DIR`, else `.graphmend_cache/` next to the project's pyproject.toml,
        else (no project) the user's cache folder: a plain folder of scripts is never written to."""
        env = os.environ.get("GRAPHMEND_CACHE_DIR")
        if env:
            return cls(Path(env), s)
        if s.root is not None:
            return cls(s.root / DIR_NAME, s)
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return cls(Path(xdg) / "graphmend-lint", s)

    def key(self, source: bytes, extra: bytes = b"", digest: str | None = None) -> str:
        """`extra`: the cross-file facts the file's result depends on (external.FileFacts.key());
        `digest`: the source's sha256 (hex), when the caller has it already (the project index does)."""
        digest = digest or hashlib.sha256(source).hexdigest()
        return hashlib.sha256(self.prefix + digest.encode() + b"\0" + extra).hexdigest()

    def get_json(self, kind: str, key: str):
        """A stored JSON value of a kind ("idx": file summaries, "proj": a project's index facts...)."""
        text = _store(self.dir).get(f"{kind}/{key}")
        try:
            return None if text is None else json.loads(text)
        except ValueError:
            return None

    def put_json(self, kind: str, key: str, value) -> None:
        _store(self.dir).put(f"{kind}/{key}", json.dumps(value))

    def flush(self) -> None:
        """Write the entries waiting in this process (before another process is to read them)."""
        _store(self.dir).flush()

    def get(self, key: str) -> list | None:
        """The stored findings (portable) or None."""
        data = self.get_json("res", key)
        try:
            return None if data is None else [_decode(d, Finding, Safety) for d in data]
        except (TypeError, ValueError, KeyError):
            return None

    def put(self, key: str, findings: list) -> None:
        self.put_json("res", key, [_encode(f) for f in findings])

    def get_run(self, key: str) -> list[list] | None:
        """The findings of many files stored together (`put_run`), one list a file, or None."""
        data = self.get_json("run", key)
        try:
            return None if data is None else [[_decode(d, Finding, Safety) for d in one] for one in data]
        except (TypeError, ValueError, KeyError):
            return None

    def put_run(self, key: str, findings: list[list]) -> None:
        self.put_json("run", key, [[_encode(f) for f in one] for one in findings])
