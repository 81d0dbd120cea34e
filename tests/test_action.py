"""action.yml and the README's workflow: parsed, and their commands run here (the lint gate on a
project with a finding; the pytest gate, as the README writes it, before and after `--fix`).

The install steps are not run (they would install into this interpreter); what they install is
checked instead: the action's own checkout, and the pinned commit (tests/pin.py)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
MODEL = """import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        print("forward", tuple(h.shape))
        if h.sum() > 0:
            h = h * 2
        else:
            h = h - 1
        return h
"""


def section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def workflow() -> dict:
    return yaml.safe_load(section("Pull-request gate (GitHub Actions)").split("```yaml\n", 1)[1].split("```", 1)[0])


def shims(tmp_path: Path) -> dict:
    """`graphmend-lint` and `python` on PATH: this checkout, this interpreter."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "graphmend-lint").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m graphmend_lint "$@"\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
            "GRAPHMEND_CACHE_DIR": str(tmp_path / "cache")}


def expand(text: str, inputs: dict) -> str:
    return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: str(inputs[m[1]]), text)


def run_action(project: Path, env: dict, **given) -> tuple[int, str, list]:
    """The action's shell steps in order, as a runner would run them (bash, `if:` on inputs)."""
    inputs = {k: v.get("default", "") for k, v in ACTION["inputs"].items()} | given
    out, uploads = "", []
    for step in ACTION["runs"]["steps"]:
        cond = step.get("if")
        if cond:
            m = re.fullmatch(r"inputs\.([\w-]+) == '(\w+)'", cond)
            assert m, f"unsupported condition {cond!r}"
            if str(inputs[m[1]]) != m[2]:
                continue
        if "uses" in step:
            uploads.append((step["uses"], expand(step["with"]["sarif_file"], inputs)))
            continue
        if "pip install" in step["run"]:  # installs the action's checkout: not into this interpreter
            assert '"$GITHUB_ACTION_PATH"' in step["run"]
            continue
        step_env = {**env, **{k: expand(v, inputs) for k, v in step.get("env", {}).items()}}
        proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=project, env=step_env, capture_output=True,
                              text=True)
        out += proc.stdout + proc.stderr
        if proc.returncode:
            return proc.returncode, out, uploads
    return 0, out, uploads


@pytest.fixture
def project(tmp_path):
    proj = tmp_path / "proj"
    (proj / "mypkg").mkdir(parents=True)
    (proj / "pyproject.toml").write_text('[project]\nname = "mypkg"\nversion = "0"\n\n[tool.graphmend]\n')
    (proj / "mypkg" / "__init__.py").write_text("from .model import Model\n")
    (proj / "mypkg" / "model.py").write_text(MODEL)
    return proj


def test_action_is_a_composite_action_with_documented_inputs():
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {"paths", "args", "sarif", "sarif-file", "fail-on-findings"}
    for name in ACTION["inputs"]:
        assert f"`{name}" in section("Pull-request gate (GitHub Actions)") or f"{name}:" in README
    uses = [s["uses"] for s in ACTION["runs"]["steps"] if "uses" in s]
    assert uses == ["github/codeql-action/upload-sarif@v3"]
    assert all(s.get("shell") == "bash" for s in ACTION["runs"]["steps"] if "run" in s)


def test_action_lint_gate_runs(project, tmp_path):
    env = shims(tmp_path)
    code, out, uploads = run_action(project, env, sarif="true")
    assert code == 1, out
    assert re.search(r"^graphmend-lint 0\.1\.0", out, re.M)  # --version
    assert "::error title=graphmend-lint (GM201),file=mypkg/model.py,line=12" in out
    assert uploads == [("github/codeql-action/upload-sarif@v3", "graphmend.sarif")]
    sarif = json.loads((project / "graphmend.sarif").read_text())
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"GM201", "GM101"}
    code, out, _ = run_action(project, env, **{"fail-on-findings": "false", "args": "--select GM2"})
    assert code == 0 and "GM201" in out and "GM101" not in out
    (project / "mypkg" / "model.py").write_text("x = 1\n")
    assert run_action(project, env)[0] == 0


def test_readme_workflow_uses_the_action_and_the_pin():
    sys.path.insert(0, str(ROOT / "tests"))
    import pin

    flow = workflow()
    assert flow["permissions"]["security-events"] == "write"
    lint, gate = flow["jobs"]["lint"]["steps"], flow["jobs"]["pytest"]["steps"]
    (rev,) = pin.pins()
    action = next(s for s in lint if s.get("uses", "").startswith("graphmend/graphmend-lint@"))
    assert action["uses"] == f"graphmend/graphmend-lint@{rev}"
    assert set(action["with"]) <= set(ACTION["inputs"])
    runs = [s["run"] for s in gate if "run" in s]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in runs[0]
    assert f"git+https://github.com/graphmend/graphmend-lint@{rev}" in runs[1]
    assert runs[-1] == "python -m pytest tests/test_graph_breaks.py"


@pytest.mark.slow
def test_readme_pytest_gate_fails_before_fix_and_passes_after(project, tmp_path):
    """The README's test file, verbatim, on a small package: the break's file:line, reason and our fix
    before `graphmend-lint check --fix`, a pass after; no frame outside the package is named."""
    pytest.importorskip("torch")
    example = section("Pytest gate").split("```python\n", 1)[1].split("```", 1)[0]
    (project / "tests").mkdir()
    (project / "tests" / "test_graph_breaks.py").write_text(example)
    env = {**shims(tmp_path), "PYTHONPATH": f"{project}{os.pathsep}{ROOT}"}
    command = workflow()["jobs"]["pytest"]["steps"][-1]["run"]
    pytest_run = [*command.split()[:3], "-p", "no:cacheprovider", *command.split()[3:]]

    def gate():
        return subprocess.run(["bash", "-c", " ".join(pytest_run)], cwd=project, env=env, capture_output=True,
                              text=True)

    before = gate()
    assert before.returncode == 1 and "2 failed" in before.stdout, before.stdout[-3000:]
    text = before.stdout
    assert "mypkg/model.py:12: GB0059 Failed to trace builtin operator" in text
    assert "mypkg/model.py:13: GB0170 Data-dependent branching" in text
    assert "-> GM201 [safe fix]" in text and "+            h = torch.where(h.sum() > 0, h * 2, h - 1)" in text
    report = "\n".join(ln for ln in text.splitlines() if ln.startswith("E   "))
    assert "site-packages" not in report and "torch/" not in report and str(tmp_path) not in report
    fix = subprocess.run(["graphmend-lint", "check", "--fix", "mypkg"], cwd=project, env=env, capture_output=True,
                         text=True)
    assert fix.returncode == 0 and "Fixed 2 errors." in fix.stdout
    after = gate()
    assert after.returncode == 0 and "2 passed" in after.stdout, after.stdout[-3000:]


def test_readme_pytest_gate_example_is_the_documented_signature():
    example = section("Pytest gate").split("```python\n", 1)[1].split("```", 1)[0]
    assert 'assert_no_graph_breaks(model, torch.randn(2, 8), within=["mypkg"])' in example
    assert '["train", "eval"]' in textwrap.dedent(example)
