"""What `graphmend-lint --version` prints: the version, and the commit a git install was built from.

Until there are releases every build says 0.1.0; the commit tells them apart. pip records it for an
install from a git URL in the distribution's `direct_url.json` (PEP 610: `vcs_info.commit_id`); an
editable install or a run from a clone asks git in the source folder.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from . import __version__

DIST = "graphmend-lint"
HERE = Path(__file__).resolve().parent


def from_direct_url(text: str | None) -> tuple[str | None, str | None]:
    """(commit, where) from a direct_url.json: ("1a2b3c4...", "git+https://...") for a git install,
    (None, "/path/to/clone") for a local (editable) one, (None, None) otherwise."""
    if not text:
        return None, None
    try:
        data = json.loads(text)
    except ValueError:
        return None, None
    url = data.get("url", "")
    vcs = data.get("vcs_info") or {}
    if vcs.get("commit_id"):
        return vcs["commit_id"], f"{vcs.get('vcs', 'git')}+{url}"
    if url.startswith("file://"):
        return None, url[len("file://"):]
    return None, None


def _direct_url() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        dist = distribution(DIST)
    except (ImportError, PackageNotFoundError):
        return None
    # only the distribution that holds this very file (not another install on the path)
    files = [str(f) for f in dist.files or []]
    if files and not any(f.replace("\\", "/").endswith("graphmend_lint/version.py") for f in files) and not any(
            f.endswith(".pth") or "__editable__" in f for f in files):
        return None
    return dist.read_text("direct_url.json")


def git_commit(folder: Path = HERE) -> str | None:
    """HEAD of the git checkout holding `folder`, with "+dirty" when tracked files changed."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=folder,
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty else "")


def describe() -> str:
    """"0.1.0 (git 1a2b3c4d5e6f, from git+https://...)", "0.1.0 (git 1a2b3c4d5e6f, checkout /src)", "0.1.0"."""
    commit, where = from_direct_url(_direct_url())
    if commit:
        return f"{__version__} (git {commit[:12]}, from {where})"
    local = git_commit()
    if local:
        return f"{__version__} (git {local[:12]}{'+dirty' if local.endswith('+dirty') else ''}, checkout {HERE.parent})"
    return __version__
