"""The commit the README pins (pip, pre-commit, the action): check it, or move it.

    python tests/pin.py            # is the pin a commit of this history with every documented feature?
    python tests/pin.py HEAD       # move every pin to HEAD (a release step: run it after committing)

Until there are tags, users pin a commit; a pin that falls behind what the README documents (a
`verify` that is `invalid choice`, no pytest gate, no action.yml) is what a newcomer runs into.
tests/test_readme.py runs `problems()` and fails on any. Stdlib only.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ("README.md", ".pre-commit-hooks.yaml")
SHA = r"[0-9a-f]{40}"
PIN_RES = (re.compile(rf"rev: ({SHA})"), re.compile(rf"graphmend-lint@({SHA})"))
# what the README documents -> (a file at the pinned commit, text it must hold)
FEATURES = {
    "`graphmend-lint verify`": ("graphmend_lint/cli.py", '"verify"'),
    "the pytest gate": ("graphmend_lint/testing.py", "def assert_no_graph_breaks("),
    "the pytest plugin's entry point": ("pyproject.toml", "[project.entry-points.pytest11]"),
    "the GitHub Action": ("action.yml", "using: composite"),
    "--version with the commit": ("graphmend_lint/version.py", "direct_url.json"),
    "the editor server ([lsp] extra)": ("pyproject.toml", "lsp = ["),
}


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def pins() -> set[str]:
    found: set[str] = set()
    for name in FILES:
        text = (ROOT / name).read_text(encoding="utf-8")
        for pin_re in PIN_RES:
            found |= set(pin_re.findall(text))
    return found


def in_git_checkout() -> bool:
    try:
        return git("rev-parse", "--git-dir").returncode == 0
    except OSError:
        return False


def missing_features(rev: str) -> list[str]:
    out = []
    for what, (path, needle) in FEATURES.items():
        shown = git("show", f"{rev}:{path}")
        if shown.returncode != 0 or needle not in shown.stdout:
            out.append(f"{what} ({path})")
    return out


def problems() -> list[str]:
    """Why the pin is not what a newcomer needs; [] when it is. Call in a git checkout only."""
    found = pins()
    if len(found) != 1:
        return [f"README.md and .pre-commit-hooks.yaml pin {len(found)} different commits: {sorted(found)}"]
    rev = found.pop()
    if git("cat-file", "-e", f"{rev}^{{commit}}").returncode != 0:
        return [f"the pin {rev} is no commit of this repository (a squash or rebase dropped it?): "
                "run `python tests/pin.py HEAD` after committing"]
    if git("merge-base", "--is-ancestor", rev, "HEAD").returncode != 0:
        return [f"the pin {rev} is not an ancestor of HEAD: run `python tests/pin.py HEAD`"]
    missing = missing_features(rev)
    return [f"the pin {rev[:12]} lacks what the README documents: {', '.join(missing)}; "
            "run `python tests/pin.py HEAD`"] if missing else []


def move(rev: str) -> str:
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}").stdout.strip()
    if not sha:
        raise SystemExit(f"error: {rev} is no commit")
    missing = missing_features(sha)
    if missing:
        raise SystemExit(f"error: {sha[:12]} lacks {', '.join(missing)}")
    for name in FILES:
        path = ROOT / name
        text = path.read_text(encoding="utf-8")
        for pin_re in PIN_RES:
            text = pin_re.sub(lambda m: m.group(0).replace(m.group(1), sha), text)
        text = re.sub(r"graphmend-lint@PIN\b", f"graphmend-lint@{sha}", text)
        path.write_text(text, encoding="utf-8")
    return sha


def main(argv: list[str]) -> int:
    if not in_git_checkout():
        print("not a git checkout", file=sys.stderr)
        return 2
    if argv:
        print(f"pinned {move(argv[0])} in {', '.join(FILES)}")
        return 0
    bad = problems()
    for p in bad:
        print(f"error: {p}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
