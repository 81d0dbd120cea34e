"""Find the Python files to check, and read and write them safely."""
from __future__ import annotations

import fnmatch
import os
import tempfile
from pathlib import Path
from typing import Iterator

DEFAULT_EXCLUDE = {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".nox",
                   ".mypy_cache", ".ruff_cache", ".pytest_cache", "build", "dist", ".eggs", "site-packages",
                   ".graphmend_cache"}


def _excluded(path: Path, root: Path | None, patterns: tuple[str, ...]) -> bool:
    if not patterns:
        return False
    try:
        rel = path.resolve().relative_to(root.resolve()) if root else path
    except ValueError:
        rel = path
    text = rel.as_posix()
    for pat in patterns:
        pat = pat.rstrip("/")
        if fnmatch.fnmatch(text, pat) or fnmatch.fnmatch(text, pat + "/*") or fnmatch.fnmatch(path.name, pat):
            return True
    return False


def iter_python_files(paths: list[Path], root: Path | None, exclude: tuple[str, ...],
                      force_exclude: bool = False) -> Iterator[Path]:
    """Directories are walked in sorted order; files named on the command line count unless
    `force_exclude` (as in ruff: pre-commit passes excluded files by name)."""
    seen: set[Path] = set()
    for p in paths:
        if p.is_dir():
            for dirpath, dirnames, filenames in os.walk(p, followlinks=False):
                d = Path(dirpath)
                dirnames[:] = sorted(n for n in dirnames if n not in DEFAULT_EXCLUDE and not n.endswith(".egg-info")
                                     and not _excluded(d / n, root, exclude))
                for name in sorted(filenames):
                    f = d / name
                    if name.endswith(".py") and not _excluded(f, root, exclude) and f not in seen:
                        seen.add(f)
                        yield f
        elif p not in seen and not (force_exclude and _excluded(p, root, exclude)):
            seen.add(p)
            yield p


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename, keeping permissions."""
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
