"""Find the Python files to check, and read and write them safely."""
from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

DEFAULT_EXCLUDE = {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".nox",
                   ".mypy_cache", ".ruff_cache", ".pytest_cache", "build", "dist", ".eggs", "site-packages",
                   ".graphmend_cache"}


class RealPaths:
    """os.path.realpath, with each folder resolved once (a walk asks for thousands of files)."""

    def __init__(self) -> None:
        self._dirs: dict[str, str] = {}

    def folder(self, d: str) -> str:
        got = self._dirs.get(d)
        if got is None:
            parent, name = os.path.split(d)
            if parent and name and name not in (".", "..") and not os.path.islink(d):
                got = os.path.join(self.folder(parent), name)  # one lstat a folder, not one a component
            else:
                got = os.path.realpath(d or ".")
            self._dirs[d] = got
        return got

    def __call__(self, path: Path) -> str:
        parent, name = os.path.split(str(path))
        if not name or name in (".", "..") or os.path.islink(path):
            return os.path.realpath(path)
        return os.path.join(self.folder(parent), name)  # the folder's real path, then a plain name


@functools.lru_cache(maxsize=64)
def _matchers(patterns: tuple[str, ...]):
    """(matcher of the relative path, matcher of the file name) for `patterns`, each one regex: a
    path matches `pat` or `pat/*`, a name matches `pat` (fnmatch's rules, '*' crossing '/')."""
    pats = [os.path.normcase(p.rstrip("/")) for p in patterns]
    path = "|".join(fnmatch.translate(p) + "|" + fnmatch.translate(p + "/*") for p in pats)
    return re.compile(path).match, re.compile("|".join(fnmatch.translate(p) for p in pats)).match


def _excluded(path: Path, root: Path | None, patterns: tuple[str, ...], real=None) -> bool:
    if not patterns:
        return False
    text = None
    if root:
        real = real or RealPaths()
        full, base = real(path), real.folder(str(root))
        prefix = base if base.endswith(os.sep) else base + os.sep
        if full == base:
            text = "."
        elif full.startswith(prefix):
            text = full[len(prefix):].replace(os.sep, "/")  # a real path: already normal
    if text is None:
        text = path.as_posix()
    by_path, by_name = _matchers(patterns)
    return bool(by_path(os.path.normcase(text)) or by_name(os.path.normcase(path.name)))


class GitIgnore:
    """`.gitignore` files (and .git/info/exclude) of the git work trees the walk enters, with git's
    rules (pathspec's GitIgnoreSpec): the deepest file that matches decides, `!` re-includes."""

    def __init__(self) -> None:
        self._specs: dict[Path, object | None] = {}
        self._roots: dict[Path, Path | None] = {}
        self._chains: dict[Path, list[tuple[Path, object]]] = {}

    def _root(self, d: Path) -> Path | None:
        if d not in self._roots:
            self._roots[d] = d if (d / ".git").exists() else (None if d.parent == d else self._root(d.parent))
        return self._roots[d]

    def _spec(self, d: Path, root: Path):
        if d not in self._specs:
            import pathspec  # only when a work tree is walked

            lines: list[str] = []
            sources = [d / ".gitignore"] + ([root / ".git" / "info" / "exclude"] if d == root else [])
            for f in sources:
                try:
                    lines += f.read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    pass
            self._specs[d] = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        return self._specs[d]

    def _chain(self, d: Path) -> list[tuple[Path, object]]:
        """The (folder, spec) pairs that apply in folder `d` (absolute), outermost first."""
        chain = self._chains.get(d)
        if chain is None:
            root = self._root(d)
            if root is None:
                chain = []
            else:
                up = [] if d == root or d.parent == d else self._chain(d.parent)
                spec = self._spec(d, root)
                chain = up + [(d, spec)] if spec is not None else up
            self._chains[d] = chain
        return chain

    def ignored(self, path: Path, is_dir: bool) -> bool:
        path = Path(os.path.abspath(path))
        chain = self._chain(path.parent)
        if not chain:
            return False
        verdict = None
        for folder, spec in chain:  # outermost first: deeper files override
            rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            result = spec.check_file(rel).include
            if result is not None:
                verdict = result
        return bool(verdict)

    def active(self, folder: Path) -> bool:
        """Whether a `.gitignore` may ignore anything in `folder` (the walk asks once a folder)."""
        return bool(self._chain(Path(os.path.abspath(folder))))


def discover(paths: list[Path], settings_for, force_exclude: bool = False) -> Iterator[Path]:
    """The Python files under `paths`; `settings_for(folder)` gives the settings that hold there
    (exclude, extend-exclude and respect-gitignore, relative to that config's folder).

    Directories are walked in sorted order; files named on the command line count unless
    `force_exclude` (as in ruff: pre-commit passes excluded files by name)."""
    seen: set[Path] = set()
    gitignore = GitIgnore()
    real = RealPaths()

    def skip(path: Path, is_dir: bool, s, git: bool = True) -> bool:
        return (_excluded(path, s.root, s.excludes, real)
                or (git and s.respect_gitignore and gitignore.ignored(path, is_dir)))

    for p in paths:
        if p.is_dir():
            for dirpath, dirnames, filenames in os.walk(p, followlinks=False):
                d = Path(dirpath)
                s = settings_for(d)
                git = s.respect_gitignore and gitignore.active(d)  # outside a git work tree: no per-file test
                dirnames[:] = sorted(n for n in dirnames if n not in DEFAULT_EXCLUDE and not n.endswith(".egg-info")
                                     and not skip(d / n, True, s, git))
                for name in sorted(filenames):
                    if not name.endswith(".py"):
                        continue
                    f = d / name
                    if f not in seen and not skip(f, False, s, git):
                        seen.add(f)
                        yield f
        elif p not in seen and not (force_exclude and skip(p, False, settings_for(p.parent))):
            seen.add(p)
            yield p


def iter_python_files(paths: list[Path], root: Path | None, exclude: tuple[str, ...],
                      force_exclude: bool = False) -> Iterator[Path]:
    """`discover` with one set of exclude patterns and no .gitignore."""
    s = SimpleNamespace(root=root, excludes=tuple(exclude), respect_gitignore=False)  # what discover reads
    return discover(paths, lambda d: s, force_exclude)


def too_large(size: int, limit: int) -> str:
    return (f"file too large to analyse ({size / 1e6:.1f} MB; the limit is {limit / 1e6:.1f} MB, "
            "set GRAPHMEND_MAX_FILE_BYTES to change it)")


class ReadError(OSError):
    """A file that is not a readable regular file; str() is the whole message."""


def read_source(path: Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file; OSError (with a plain message) for anything else.

    Opened non-blocking and checked with fstat, so a FIFO or device named `x.py` never hangs the run.
    Raises ReadError when the file has more than `limit` bytes (it is not read then).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise ReadError("is a directory") from None
    except FileNotFoundError:
        if os.path.islink(path):
            raise ReadError(f"broken symbolic link (to {os.readlink(path)})") from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ReadError("is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise ReadError("not a regular file")
        if limit is not None and st.st_size > limit:
            raise ReadError(too_large(st.st_size, limit))
    except BaseException:
        os.close(fd)
        raise
    parts = []
    try:  # os.read, not a file object: a warm run reads every file of the project
        while chunk := os.read(fd, max(st.st_size + 1, 1 << 16)):
            parts.append(chunk)
    finally:
        os.close(fd)
    return b"".join(parts)


def write_if_unchanged(path: Path, before: bytes, after: bytes) -> None:
    """Atomically replace `before` by `after`; refuse (OSError) if the file changed meanwhile."""
    if read_source(path) != before:
        raise OSError("the file changed while it was being checked; not written")
    if not os.stat(path).st_mode & 0o222:  # a rename would bypass the missing write permission
        raise OSError("the file is read-only; not written")
    atomic_write(path, after)


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename, keeping permissions and owner.

    A symbolic link is followed: its target is replaced and the link stays a link.
    """
    path = Path(os.path.realpath(path))
    st = path.stat()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if hasattr(os, "chown"):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass  # only root may give a file away; the file then belongs to us
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
