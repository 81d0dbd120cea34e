"""The README's commands are the ones that run: CI's last line, the pinned commit, the pre-commit snippet."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def readme_command(number: int) -> str:
    block = README.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    at = next(i for i, line in enumerate(block) if line.startswith(f"# {number}."))
    return block[at + 1]


def test_ci_runs_the_readme_test_command_verbatim():
    lines = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln.strip()]
    assert lines[-1] == readme_command(2)


def test_cpu_torch_comes_from_pytorchs_cpu_index():
    """On the public index torch==2.13.0 for Linux is the CUDA build; the CPU index's +cpu wins."""
    assert "pip install -q torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu" in readme_command(2)


def pinned_revs() -> set[str]:
    revs = set(re.findall(r"rev: ([0-9a-f]{40})", README))
    revs |= set(re.findall(r"graphmend-lint@([0-9a-f]{40})", README))
    return revs


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def test_the_pinned_commit_exists_and_has_the_hooks():
    revs = pinned_revs()
    assert len(revs) == 1, "pre-commit and pip pin the same commit"
    if shutil.which("git") is None or git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    rev = revs.pop()
    if git("cat-file", "-e", f"{rev}^{{commit}}").returncode != 0:
        if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
            pytest.skip("shallow clone: the pinned commit is not here")
        pytest.fail(f"README pins {rev}, which is no commit of this repository")
    hooks = git("show", f"{rev}:.pre-commit-hooks.yaml").stdout
    for hook in re.findall(r"- id: (graphmend-lint[\w-]*)", README):
        assert f"- id: {hook}\n" in hooks
    if "graphmend-lint[lsp]" in README:  # the install line with the extra needs a commit that has it
        assert "lsp = [" in git("show", f"{rev}:pyproject.toml").stdout
        assert git("cat-file", "-e", f"{rev}:graphmend_lint/server.py").returncode == 0


def test_the_pin_is_a_commit_of_main_with_what_the_readme_documents():
    """`verify`, the pytest gate, the action, --version's commit: a pin without them fails newcomers."""
    if shutil.which("git") is None or git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.skip("shallow clone: the pinned commit may not be here")
    sys.path.insert(0, str(ROOT / "tests"))
    import pin

    assert pin.problems() == []
    assert "graphmend-lint@PIN" not in README


def test_no_unreleased_tag_is_named():
    assert "rev: v0." not in README
    assert "pip install graphmend-lint\n" not in README


@pytest.mark.slow
def test_pre_commit_snippet_runs_as_written(tmp_path):
    """The snippet, with the GitHub URL replaced by this checkout, finds the print() and fails."""
    if shutil.which("git") is None or git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    snippet = README.split("## pre-commit", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    rev = re.search(r"rev: ([0-9a-f]{40})", snippet).group(1)
    if git("cat-file", "-e", f"{rev}^{{commit}}").returncode != 0:
        pytest.skip("the pinned commit is not in this clone")
    config = snippet.replace("https://github.com/graphmend/graphmend-lint", str(ROOT))
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".pre-commit-config.yaml").write_text(config)
    (tmp_path / "model.py").write_text("import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
                                       "    def forward(self, x):\n        print(x)\n        return x\n")
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "graphmend-lint", "--all-files"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1 and "GM201" in proc.stdout, proc.stdout + proc.stderr
