"""A persistent cache of per-file results, keyed by content, tool and settings.

Key: sha256 of (the source bytes, every source file of graphmend_lint, the libcst/fixit/Python
versions, the settings, and the file's facts from the project index: a file whose base class or
caller changed in another file gets a new key). The index keeps its own entries here too
(`idx/`: one summary per file content, `proj/`: the facts of a project's files, keyed by the
content of the whole project, see parallel.py). One JSON file per entry, written to a temporary name and renamed, so
concurrent runs (pre-commit in parallel) never see half an entry. Only clean results are
stored (no read or parse error), and only for files left unchanged by the run.
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
import sys
import tempfile
import importlib.util
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


class Cache:
    def __init__(self, directory: Path, s: settings_mod.Settings) -> None:
        self.dir = directory / "v1"
        self._made: set[Path] = set()  # folders this process made or found
        self.prefix = hashlib.sha256(_tool_fingerprint() + _settings_fingerprint(s)).digest()

    def __getstate__(self) -> dict:  # sent to a worker with each task: not the folders seen here
        return {**self.__dict__, "_made": set()}

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
        """A stored JSON value of another kind ("idx": file summaries, "proj": a project's index facts)."""
        try:
            return json.loads((self.dir / kind / key[:2] / f"{key[2:]}.idx").read_bytes())
        except (OSError, ValueError):
            return None

    def put_json(self, kind: str, key: str, value) -> None:
        self._write(self.dir / kind / key[:2] / f"{key[2:]}.idx", value)  # JSON; not a result entry

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key[2:]}.json"

    def get(self, key: str) -> list | None:
        """The stored findings (portable) or None."""
        try:
            data = json.loads(self._path(key).read_bytes())
        except (OSError, ValueError):
            return None
        try:
            return [_decode(d, Finding, Safety) for d in data]
        except (TypeError, ValueError, KeyError):
            return None

    def put(self, key: str, findings: list) -> None:
        self._write(self._path(key), [_encode(f) for f in findings])

    def get_run(self, key: str) -> list[list] | None:
        """The findings of many files stored together (`put_run`), one list a file, or None."""
        data = self.get_json("run", key)
        try:
            return None if data is None else [[_decode(d, Finding, Safety) for d in one] for one in data]
        except (TypeError, ValueError, KeyError):
            return None

    def put_run(self, key: str, findings: list[list]) -> None:
        self.put_json("run", key, [[_encode(f) for f in one] for one in findings])

    def _write(self, path: Path, value) -> None:
        try:
            if path.parent not in self._made:  # a cold run writes thousands of entries: no stat for each
                path.parent.mkdir(parents=True, exist_ok=True)
                ignore = self.dir.parent / ".gitignore"
                if not ignore.exists():
                    ignore.write_text("# created by graphmend-lint\n*\n")
                self._made.add(path.parent)
            fd, tmp = tempfile.mkstemp(prefix=".tmp", dir=path.parent)
        except OSError:
            self._made.discard(path.parent)  # removed since (the user cleared the cache): made again next time
            return  # a cache that cannot be written is only slower
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps(value))  # one write (json.dump writes each token on its own)
            os.replace(tmp, path)
        except OSError:
            pass
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
