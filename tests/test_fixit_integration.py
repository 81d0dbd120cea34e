"""The real `fixit` command collects every rule and reports what our CLI reports."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import graphmend_lint
from graphmend_lint import engine
from graphmend_lint.rules import ALL_RULES
from graphmend_lint.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
FIXIT = [sys.executable, "-m", "fixit"]


def fixit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*FIXIT, "--rules", "graphmend_lint", *args], cwd=cwd, capture_output=True, text=True)


def test_fixit_collects_exactly_our_rules(tmp_path):
    (tmp_path / "x.py").write_text("x = 1\n")
    proc = subprocess.run([*FIXIT, "--print-metrics", "--rules", "graphmend_lint", "lint", "x.py"],
                          cwd=tmp_path, capture_output=True, text=True)
    names = set(re.findall(r"'Count\.(\w+)'", proc.stdout)) - {"Total"}
    ours = {r.__name__.removesuffix("Rule") for r in ALL_RULES}
    assert names == ours
    assert len(names) == len(ALL_RULES) == len(graphmend_lint.__all__)
    assert "Failed to load" not in proc.stderr


def _fixit_findings(out: str) -> set[tuple]:
    rows = set()
    for line in out.splitlines():
        m = re.match(r"(.+?)@(\d+):(\d+) (\w+): (.*?)(?: \(has autofix\))?$", line)
        if m:
            rows.add((Path(m[1]).name, int(m[2]), int(m[3]), m[4], m[5]))
    return rows


def test_fixit_and_cli_agree_on_examples(tmp_path):
    work = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", work)
    proc = fixit("lint", ".", cwd=work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    theirs = _fixit_findings(proc.stdout)
    ours = set()
    for path in sorted(work.glob("*.py")):
        for f in engine.check(path.read_bytes(), Settings()).findings:
            ours.add((path.name, f.line, f.col, f.rule, f.message))
    assert theirs == ours and ours


def test_fixit_fix_applies_safe_fixes(tmp_path):
    src = ROOT / "tests/fixtures/GM201/invalid_print_in_forward.py"
    target = tmp_path / "m.py"
    shutil.copy(src, target)
    fixit("fix", "--automatic", "m.py", cwd=tmp_path)
    assert target.read_text() == src.with_name("invalid_print_in_forward.fixed.py").read_text()
