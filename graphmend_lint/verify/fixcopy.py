"""`verify --compare-fix`: run the script again on a fixed COPY of the user's sources.

The copied folder (the root) is the script's folder, or the working directory for `-m`, widened to
the nearest folder that also holds every file with a finding outside installed packages. The child
runs in the copy with the copied script folder first on sys.path (as `python SCRIPT` would), the
working directory and PYTHONPATH entries inside the root moved into the copy. Limits: files outside
the root (installed packages such as transformers) are not fixed; a package installed in editable
mode is imported from the copy only when its folder comes first on sys.path; the child reports the
files it still loaded from the original root, and they are listed.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .. import engine, runner
from ..settings import Settings
from .run import Run, Target, run_child

IGNORE = shutil.ignore_patterns(".git", ".hg", "__pycache__", "*.pyc", ".venv", "venv", ".tox", ".nox",
                                ".mypy_cache", ".pytest_cache", ".ruff_cache", ".graphmend_cache", "node_modules")


@dataclass
class FixedRun:
    root: str  # the user's folder that was copied
    copy: str = ""  # where it was copied to
    fixed: dict[str, int] = field(default_factory=dict)  # file (in the user's tree) -> fixes applied
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # files with fixes we could not apply (not copied)
    run: Run | None = None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def choose_root(target: Target, files: list[str]) -> str:
    base = os.path.realpath(os.path.dirname(target.script) if target.script else os.getcwd())
    mine = [f for f in files if "site-packages" not in f and "dist-packages" not in f]
    root = os.path.commonpath([base, *mine]) if mine else base
    return base if root in (os.sep, os.path.expanduser("~")) else root


def _move(path: str, root: str, copy: str) -> str:
    real = os.path.realpath(path)
    return os.path.join(copy, os.path.relpath(real, root)) if _inside(real, root) else path


def compare(target: Target, findings: dict[str, list], s: Settings, tmp: str) -> FixedRun:
    """Copy the root into `tmp`, apply the allowed fixes there, and run the target on the copy."""
    with_fix = {p: fs for p, fs in findings.items() if any(engine.applicable(f, s) for f in fs)}
    root = choose_root(target, list(with_fix))
    copy = os.path.join(tmp, os.path.basename(root) or "root")
    out = FixedRun(root, copy, outside=sorted(p for p in with_fix if not _inside(p, root)))
    shutil.copytree(root, copy, ignore=IGNORE, symlinks=True)
    for path in sorted(p for p in with_fix if _inside(p, root)):
        res = runner.check_file(Path(_move(path, root, copy)), s, fix=True)
        if res.error:
            out.errors.append(f"{path}: {res.error}")
        elif res.fixed:
            out.fixed[path] = res.fixed
    cwd = _move(os.getcwd(), root, copy)
    moved = Target(_move(target.script, root, copy) if target.script else None, target.module, target.args)
    env = {}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(_move(p, root, copy) if p else p
                                            for p in os.environ["PYTHONPATH"].split(os.pathsep))
    out.run = run_child(moved, cwd=cwd, watch=(root,), env=env)
    return out
