"""The real pre-commit runs our hooks from this repository (pre-commit try-repo)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        print(x)\n        return x\n"

pytestmark = pytest.mark.slow


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture()
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git not available")
    git("init", "-q", cwd=tmp_path)
    (tmp_path / "model.py").write_text(MODEL)
    git("add", ".", cwd=tmp_path)
    return tmp_path


def try_repo(hook, cwd):
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), hook, "--all-files"],
                          cwd=cwd, capture_output=True, text=True, timeout=900)


def test_check_hook_fails_on_findings(repo):
    proc = try_repo("graphmend-lint", repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "GM201" in proc.stdout


def test_fix_hook_fixes_and_fails_until_clean(repo):
    proc = try_repo("graphmend-lint-fix", repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "is_compiling()" in (repo / "model.py").read_text()
    git("add", ".", cwd=repo)
    again = try_repo("graphmend-lint-fix", repo)
    assert again.returncode == 0, again.stdout + again.stderr
