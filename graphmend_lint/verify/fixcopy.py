"""`verify --compare-fix`: run the script again on a fixed COPY of the user's sources.

The copied folder (the root) is the script's folder, or the working directory for `-m`, widened to
the nearest folder that also holds every file with a finding outside installed packages. The child
runs in the copy with the copied script folder first on sys.path (as `python SCRIPT` would), the
working directory and PYTHONPATH entries inside the root moved into the copy. Limits: files outside
the root (installed packages such as transformers) are not fixed, unless `--fix-packages` copies
each installed package that holds a fix (the whole top-level package) and puts the copies first on
PYTHONPATH; a package installed in editable mode is imported from the copy only when its folder
comes first on sys.path. The child reports the fixed files it still imported from the originals: listed.
A root of more than 5,000 files or 1 GB (a home or temp folder) is copied as its Python files only.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .. import engine, parallel, runner
from ..settings import Settings
from .run import Run, Target, run_child

IGNORE = shutil.ignore_patterns(".git", ".hg", "__pycache__", "*.pyc", ".venv", "venv", ".tox", ".nox",
                                ".mypy_cache", ".pytest_cache", ".ruff_cache", ".graphmend_cache", "node_modules")


BIG_FILES, BIG_BYTES = 5000, 1 << 30  # a larger root is copied as its Python files only


def _ignore(tmp: str, py_only: bool):
    """copytree's filter: IGNORE, our own temporary folder (the root may hold it: /tmp), sockets
    and other special files, and with `py_only` every file that is not Python."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        skip = set(IGNORE(folder, names))
        for n in names:
            p = os.path.join(folder, n)
            if _inside(tmp, os.path.realpath(p)):
                skip.add(n)
            elif not os.path.islink(p) and not os.path.isdir(p) and (not os.path.isfile(p) or
                                                                   (py_only and not n.endswith(".py"))):
                skip.add(n)
        return skip
    return ignore


def _big(root: str, tmp: str) -> bool:
    files = size = 0
    ignore = _ignore(tmp, False)
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ignore(folder, dirs)]
        for n in set(names) - ignore(folder, names):
            files += 1
            try:
                size += os.lstat(os.path.join(folder, n)).st_size
            except OSError:
                pass
        if files > BIG_FILES or size > BIG_BYTES:
            return True
    return False


def _copy(src: str, dst: str, tmp: str, py_only: bool, errors: list[str]) -> None:
    try:
        shutil.copytree(src, dst, ignore=_ignore(tmp, py_only), symlinks=True)
    except shutil.Error as e:  # unreadable files: copied what could be
        errors += [f"not copied: {a} ({why})" for a, _, why in e.args[0][:5]]


@dataclass
class FixedRun:
    root: str  # the user's folder that was copied
    copy: str = ""  # where it was copied to
    fixed: dict[str, int] = field(default_factory=dict)  # file (in the user's tree) -> fixes applied
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # files with fixes we could not apply (not copied)
    moves: list[tuple[str, str]] = field(default_factory=list)  # (original folder, its copy)
    py_only: bool = False  # the root was too big: only its Python files were copied
    unfixed_imports: list[str] = field(default_factory=list)  # fixed files the run imported from the originals
    run: Run | None = None

    def original(self, path: str) -> str:
        """The user's path of a file in one of the copies."""
        for orig, copy in self.moves:
            if _inside(path, copy):
                return orig + path[len(copy):]
        return path


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def choose_root(target: Target, files: list[str]) -> str:
    base = os.path.realpath(os.path.dirname(target.script) if target.script else os.getcwd())
    mine = [f for f in files if not _installed(f)]
    root = os.path.commonpath([base, *mine]) if mine else base
    return base if root in (os.sep, os.path.expanduser("~")) else root


def _installed(path: str) -> tuple[str, str] | None:
    """(site-packages folder, top-level package or module) of an installed file, else None."""
    for marker in ("site-packages", "dist-packages"):
        head, sep, rest = path.partition(os.sep + marker + os.sep)
        if sep:
            return head + os.sep + marker, rest.split(os.sep)[0]
    return None


def _move(path: str, moves: list[tuple[str, str]]) -> str:
    real = os.path.realpath(path)
    for orig, copy in moves:
        if _inside(real, orig):
            return os.path.join(copy, os.path.relpath(real, orig))
    return path


def compare(target: Target, findings: dict[str, list], s: Settings, tmp: str, packages: bool = False) -> FixedRun:
    """Copy the root into `tmp`, apply the allowed fixes there, and run the target on the copy.
    With `packages`, the installed packages holding fixes are copied too, first on PYTHONPATH."""
    with_fix = {p: fs for p, fs in findings.items() if any(engine.applicable(f, s) for f in fs)}
    root = choose_root(target, list(with_fix))
    copy = os.path.join(tmp, os.path.basename(root) or "root")
    out = FixedRun(root, copy, moves=[(root, copy)], py_only=_big(root, tmp))
    _copy(root, copy, tmp, out.py_only, out.errors)
    site = os.path.join(tmp, "site-packages")
    for where in sorted({_installed(p) for p in with_fix if not _inside(p, root)} - {None}) if packages else []:
        src, dst = os.path.join(*where), os.path.join(site, where[1])
        if os.path.isdir(src):
            _copy(src, dst, tmp, False, out.errors)
        else:
            os.makedirs(site, exist_ok=True)
            shutil.copy2(src, dst)
        out.moves.append((src, dst))
    for path in sorted(with_fix):
        moved = _move(path, out.moves)
        if moved == path:
            out.outside.append(path)
            continue
        res = runner.check_file(Path(moved), s, fix=True, ext=parallel.facts_of(Path(path), s))  # the original's facts
        if res.error:
            out.errors.append(f"{path}: {res.error}")
        elif res.fixed:
            out.fixed[path] = res.fixed
    cwd = _move(os.getcwd(), out.moves[:1])
    moved = Target(_move(target.script, out.moves[:1]) if target.script else None, target.module, target.args)
    paths = [site] if len(out.moves) > 1 else []
    paths += [_move(p, out.moves[:1]) if p else p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    out.run = run_child(moved, cwd=cwd, watch=tuple(o for o, _ in out.moves), env={"PYTHONPATH": os.pathsep.join(paths)})
    out.unfixed_imports = [p for p in out.run.loaded if p in out.fixed]  # our fix was not what ran
    return out
