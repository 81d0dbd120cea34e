"""Produce variant source trees by running graphmend-lint on copies (never hand-written fixed files)."""
import difflib
import importlib.util
import os
import re
import shutil
import subprocess
import sys

CODE_RE = re.compile(r"\bGM\d{3}\b")


def fixer_command():
    """The fixer CLI as an argv prefix, or None when the package is not installed."""
    if importlib.util.find_spec("graphmend_lint") is None:
        return None
    return [sys.executable, "-m", "graphmend_lint"]


def _run(argv, cwd):
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
        return p.returncode, p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, f"{type(e).__name__}: {e}"


def copy_tree(local_files, hf_files, dest, copy_hf=True):
    """Copy perf model files to dest/models and (if needed) the installed transformers to dest/pkgs.

    With copy_hf=False the transformers files map to the installed package itself (used read-only)."""
    os.makedirs(os.path.join(dest, "models"), exist_ok=True)
    paths = {}
    for src in local_files:
        dst = os.path.join(dest, "models", os.path.basename(src))
        shutil.copy2(src, dst)
        paths[src] = dst
    pkgs = None
    if hf_files and not copy_hf:
        import transformers
        src_pkg = os.path.dirname(transformers.__file__)
        for rel in hf_files:
            paths[os.path.join(src_pkg, rel)] = os.path.join(src_pkg, rel)
    elif hf_files:
        import transformers  # the installed package, never a previous copy
        src_pkg = os.path.dirname(transformers.__file__)
        pkgs = os.path.join(dest, "pkgs")
        shutil.copytree(src_pkg, os.path.join(pkgs, "transformers"), symlinks=True)
        for rel in hf_files:
            paths[os.path.join(src_pkg, rel)] = os.path.join(pkgs, "transformers", rel)
    return paths, pkgs


def lint(paths, cwd, fix=False, unsafe=False):
    """Run `check` (optionally with --fix) on paths; returns (rc, output, status)."""
    cmd = fixer_command()
    if cmd is None:
        return None, "graphmend_lint is not installed", "missing"
    argv = cmd + ["check"] + (["--fix"] if fix else []) + (["--unsafe-fixes"] if unsafe else [])
    argv += ["--exit-zero"] + list(paths)
    rc, out = _run(argv, cwd)
    status = "ok" if rc == 0 else "error"
    return rc, out, status


def diff(orig, new):
    a = open(orig).read().splitlines(keepends=True)
    b = open(new).read().splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, fromfile=orig, tofile=new, n=2))
    changed = sum(1 for ln in lines if ln[:1] in "+-" and not ln.startswith(("+++", "---")))
    return "".join(lines), changed


def findings(paths, cwd):
    """GM codes reported by one `check` run (no fix): {path: {code: count}} (ruff-style `path:line:col: CODE`)."""
    rc, out, status = lint(list(paths), cwd)
    res = {p: {} for p in paths}
    for line in (out or "").splitlines():
        for p in paths:
            if line.startswith((p + ":", os.path.relpath(p, cwd) + ":")):
                for c in CODE_RE.findall(line)[:1]:
                    res[p][c] = res[p].get(c, 0) + 1
    return res, status, out
