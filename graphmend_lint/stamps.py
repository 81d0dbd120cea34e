"""A lint-only run whose files did not change since the last one: known from `os.stat`, unread.

A warm run of a whole tree otherwise reads and hashes every file of the project (the cache's keys
are contents). Here a run records, next to its findings, each file's stamp: size, modification and
change times, inode. The next run with the same files, settings and tool stats them, and when every
stamp and the file list are the same it returns the stored findings without reading a file.

Stamps are stored only when every file was last changed at least `SLACK_NS` before the run began
(git's "racy clean" rule). A file's change time (ctime) moves on every write and cannot be set
back, so such a file held the same bytes during the whole run as when its stamp is taken, after
the run; and any later write gives it a later ctime, a stamp that differs. A file changed within
the slack (an editor saving while the run reads) is read again next time.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SLACK_NS = 2_000_000_000  # covers file systems that keep times to the second or two (FAT: 2 s)


def now() -> int:
    return time.time_ns()


def stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


@dataclass
class Depends:
    """What a run's findings were computed from, besides its own files: the project files the index
    read, and the installed files whose summaries it used. `ok` is False when that is unknown."""
    files: set[str] = field(default_factory=set)
    external: set[str] = field(default_factory=set)
    ok: bool = True


def run_key(prefix: bytes, paths: list[Path], extra: str = "") -> str:
    """The key of a run's stamps: tool and settings (`prefix`, the cache's), the files as named,
    from where, with which import path; `extra`: anything else the outcome depends on."""
    h = hashlib.sha256(prefix)
    h.update(repr((os.getcwd(), [str(p) for p in paths], [p for p in sys.path if p], extra)).encode())
    return h.hexdigest()


def record(paths: list[Path], depends: Depends, since: int) -> dict | None:
    """The stamps of the run's files and of what it depended on, taken now (after the run), or None
    when one changed after `since` - SLACK_NS (the run began at `since`) or is gone."""
    if not depends.ok:
        return None
    limit = since - SLACK_NS
    out: dict[str, dict[str, list[int]]] = {"files": {}, "external": {}}
    for kind, names in (("files", {os.path.abspath(p) for p in paths} | depends.files),
                        ("external", depends.external)):
        for name in sorted(names):
            got = stamp(name)
            if got is None or got[1] >= limit or got[2] >= limit:
                return None
            out[kind][name] = got
    return out


def unchanged(stored: dict) -> bool:
    """Whether every file of the `stored` record, the installed ones it read too, has its stamp."""
    return all(stamp(name) == st for kind in ("files", "external") for name, st in stored.get(kind, {}).items())


def same_files(stored: dict, listed: set[str]) -> bool:
    """Whether the files now `listed` (the run's and its projects') are those of the `stored` record."""
    return set(stored.get("files", {})) == listed
