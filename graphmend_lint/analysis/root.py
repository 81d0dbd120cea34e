"""Which project a file belongs to, and the project's Python files (what the project index reads).

A file's findings are a function of its project's source and configuration, never of the files a
run names: every entry point (the CLI on any subset, stdin, pre-commit, Fixit, the language server,
`verify`) indexes the whole project of each file it lints. The project of a file is found from its
path alone:
  1. `[tool.graphmend] src = ["src", "tests"]`: those folders (relative to that pyproject.toml);
  2. a file of an installed package (its import root is a `site-packages` or `dist-packages`
     folder): the top folder of its `__init__.py` chain (e.g. `site-packages/transformers`);
  3. the nearest folder at or above the file with `pyproject.toml`, `setup.cfg`, `setup.py` or
     `.git` (not the home folder nor `/`);
  4. no marker: the top folder of the file's `__init__.py` chain; a loose script (no
     `__init__.py` beside it): its folder, without subfolders.
The project's files: every `*.py` below those folders, skipping hidden folders, virtual
environments (a `pyvenv.cfg`), `__pycache__`, build folders (`files.DEFAULT_EXCLUDE`) and, unless
`respect-gitignore = false`, what `.gitignore` ignores. `exclude` does not apply: excluded files are
not linted but are still part of the project (their calls and classes count).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import files
from .project import _package_of

MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
INSTALLED = ("site-packages", "dist-packages")


@dataclass(frozen=True)
class Project:
    root: Path  # the folder that names the project
    folders: tuple[Path, ...]  # walked for Python files
    recursive: bool = True  # False: a folder of loose scripts, its own files only
    gitignore: bool = True

    def __str__(self) -> str:
        return str(self.root)


_marker_memo: dict[Path, Path | None] = {}


def _no_project(d: Path) -> bool:
    return d.parent == d or d == Path.home()


def _marker(d: Path) -> Path | None:
    chain = []
    found = None
    up = d
    while True:  # upwards one folder at a time: the memo usually answers at the first parent
        if up in _marker_memo:
            found = _marker_memo[up]
            break
        chain.append(up)
        if not _no_project(up) and any(os.path.lexists(os.path.join(up, m)) for m in MARKERS):
            found = up
            break
        if up.parent == up:
            break
        up = up.parent
    for up in chain:
        _marker_memo[up] = found
    return found


def find_project(path: Path, s=None) -> Project:
    """The project of `path` (a file, on disk or not); `s`: its Settings (for `src`)."""
    path = Path(os.path.abspath(path))
    d = path.parent
    gitignore = True if s is None else s.respect_gitignore
    src = getattr(s, "src", ()) if s is not None else ()
    if src and s.root is not None:
        base = Path(os.path.abspath(s.root))
        return Project(base, tuple(Path(os.path.normpath(base / f)) for f in src), True, gitignore)
    parts, import_root = _package_of(d)
    top = import_root / parts[0] if parts else None
    if top is not None and any(p in INSTALLED for p in import_root.parts):
        return Project(top, (top,), True, gitignore)
    marker = _marker(d)
    if marker is not None:
        return Project(marker, (marker,), True, gitignore)
    if top is not None:
        return Project(top, (top,), True, gitignore)
    return Project(d, (d,), False, gitignore)


def _skip_dir(name: str, d: Path) -> bool:
    return (name.startswith(".") or name in files.DEFAULT_EXCLUDE or name.endswith(".egg-info")
            or os.path.exists(d / name / "pyvenv.cfg"))


def project_files(p: Project) -> list[Path]:
    """The project's Python files (absolute paths, sorted walk order), walked each time (~20 ms for
    transformers' 2,900 files) so that a long-lived process (the language server) sees new files."""
    ignore = files.GitIgnore() if p.gitignore else None
    out: list[Path] = []
    seen: set[Path] = set()
    for folder in p.folders:
        if not folder.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
            d = Path(dirpath)
            git = ignore is not None and ignore.active(d)  # outside a git work tree: no per-file test
            if p.recursive:
                dirnames[:] = sorted(n for n in dirnames if not _skip_dir(n, d)
                                     and not (git and ignore.ignored(d / n, True)))
            else:
                dirnames[:] = []
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                f = d / name
                if f not in seen and not (git and ignore.ignored(f, False)):
                    seen.add(f)
                    out.append(f)
    return out


def forget() -> None:
    """Drop the project markers this process remembers (tests)."""
    _marker_memo.clear()
