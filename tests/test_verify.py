"""`graphmend-lint verify`: real graph breaks of a script, joined with our findings (child runs, real Dynamo).

Each child run costs a torch import and a compile: the runs are shared between assertions.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphmend_lint.cli import main
from graphmend_lint.verify import match

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[1]

MODEL = '''\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        print("forward")
        if h.sum() > 0:
            h = h * 2
        else:
            h = h - 1
        s = h.mean().item()
        return h * s


@torch.compile(backend="eager")
def rows(x):
    x = x * 1.0  # a tensor of its own: the caller's is never handed back
    for i in range(x.shape[0]):
        if x[i].sum() > 0:
            x = x + 1
    return x
'''
TRAIN = '''\
import sys

import torch

from model import Net, rows

torch.manual_seed(0)
compiled = torch.compile(Net(), backend="eager")
for _ in range(int(sys.argv[1])):
    out = compiled(torch.randn(2, 4))
if "--rows" in sys.argv:
    rows(torch.randn(3, 2))
print("done", tuple(out.shape))
'''


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "OMP_NUM_THREADS": "1"}


def verify(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphmend_lint", "verify", *args], cwd=cwd,
                          capture_output=True, text=True, env=_env(), timeout=600)


def _hashes(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("user")
    (root / "model.py").write_text(MODEL)
    (root / "train.py").write_text(TRAIN)
    return root


@pytest.fixture(scope="module")
def fixed_run(project):
    """One run shared by the matching, arguments, frame-skip, compare-fix and JSON tests."""
    before = _hashes(project)
    proc = verify(["--compare-fix", "--output-format", "json", "train.py", "2", "--rows"], project)
    return proc, before


def test_matches_each_runtime_break_to_its_rule_family(fixed_run, project):
    proc, _ = fixed_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    by_line = {(b["path"], b["line"]): b for b in data["breaks"]}
    lines = MODEL.splitlines()
    at = {key: lines.index(next(ln for ln in lines if key in ln)) + 1
          for key in ('print("forward")', "if h.sum() > 0", ".item()", "if x[i].sum() > 0")}
    assert by_line[("model.py", at['print("forward")'])]["finding"].startswith("GM2")
    assert by_line[("model.py", at["if h.sum() > 0"])]["finding"].startswith("GM1")
    item = by_line[("model.py", at[".item()"])]
    assert item["finding"].startswith("GM9") and item["gb"] == "GB0124" and item["fix"] == "none"
    assert item["url"].endswith("/gb/gb0124.html") and item["count"] >= 1
    # the loop runs only with the script's `--rows` argument: Dynamo skips the frame of `rows`
    loop = by_line[("model.py", at["if x[i].sum() > 0"])]
    assert loop["frame_skip"] and loop["finding"].startswith("GM1")
    assert any(s["function"] == "rows" for s in data["frame_skips"])
    assert data["summary"]["matched"] == data["summary"]["runtime_breaks"] == len(data["breaks"]) == 4


def test_json_shape(fixed_run):
    data = json.loads(fixed_run[0].stdout)
    for b in data["breaks"]:
        assert {"path", "line", "gb", "reason", "count", "finding", "fix"} <= set(b)
    assert {"runtime_breaks", "matched", "fixable"} <= set(data["summary"])
    assert data["summary"]["fixable"] == 3  # the print, the tensor `if` and the `if` in the loop; `.item()` none
    assert {"runtime_breaks", "graphs", "recompiles", "same_stdout"} <= set(data["after_fix"])


def test_compare_fix_has_fewer_breaks_and_leaves_user_files_alone(fixed_run, project):
    proc, before = fixed_run
    data = json.loads(proc.stdout)
    after = data["after_fix"]
    assert after["runtime_breaks"] < data["summary"]["runtime_breaks"]
    assert after["graphs"] < data["summary"]["graphs"]
    assert after["same_status"] and after["status"] == 0 and after["files_fixed"] == ["model.py"]
    assert after["same_stdout"]  # the deferred print still runs under compile (after the graph)
    assert _hashes(project) == before  # nothing written, not even __pycache__


def test_module_with_a_break_we_do_not_find(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "run.py").write_text(textwrap.dedent('''\
        import builtins
        import sys

        import torch

        say = getattr(builtins, "".join(["pr", "int"]))  # a print no static analysis can see


        def f(x):
            x = x + 1
            say("hi")
            return x * 2


        if __name__ == "__main__":
            assert sys.argv[1:] == ["--n", "1"], sys.argv
            torch.compile(f, backend="eager")(torch.ones(2))
        '''))
    proc = verify(["-m", "pkg.run", "--n", "1"], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    assert "pkg/run.py:11:" in proc.stdout and "not found statically" in proc.stdout
    assert "0 matched by a finding" in proc.stdout


def test_script_that_raises_is_an_error_with_its_stderr(tmp_path):
    (tmp_path / "boom.py").write_text("import torch\nraise ValueError('boom from the script')\n")
    proc = verify(["boom.py"], tmp_path)
    assert proc.returncode == 2
    assert "exited with status 1" in proc.stderr and "ValueError: boom from the script" in proc.stderr


def test_without_torch_says_it_needs_torch(tmp_path, monkeypatch, capsys):
    import importlib.util

    (tmp_path / "s.py").write_text("print(1)\n")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert main(["verify", str(tmp_path / "s.py")]) == 2
    assert "needs torch" in capsys.readouterr().err


def test_the_linter_side_never_imports_torch():
    code = ("import sys, graphmend_lint.cli, graphmend_lint.verify.run, graphmend_lint.verify.report, "
            "graphmend_lint.verify.fixcopy, graphmend_lint.verify.recorder, graphmend_lint.verify.child; assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, env=_env())


def test_statement_span(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f(x):\n    y = g(\n        x,\n    )\n    if (x >\n            0):\n        return y\n")
    assert match.statement_span(str(src), 3) == (2, 4)  # inside a call spanning lines 2-4
    assert match.statement_span(str(src), 6) == (5, 6)  # the header of an `if`, not its body
    assert match.statement_span(str(src), 7) == (7, 7)
