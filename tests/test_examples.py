"""The README's main job: lint and fix the shipped examples."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from graphmend_lint import engine
from graphmend_lint.cli import main
from graphmend_lint.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_examples_have_findings_and_fix_cleanly(tmp_path, capsys):
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    assert main(["check", str(work)]) == 1
    main(["check", "--fix", str(work)])
    capsys.readouterr()
    for path in work.glob("*.py"):
        source = path.read_bytes()
        compile(source, str(path), "exec")
        remaining = engine.check(source, Settings()).findings
        assert not [f for f in remaining if engine.applicable(f, Settings())], path


RUN = '''\
import torch

from encoder_layer import EncoderLayer, Gate

torch.manual_seed(0)
layer, gate = EncoderLayer(), Gate()
c_layer, c_gate = torch.compile(layer, backend="eager"), torch.compile(gate, backend="eager")
labels = torch.tensor([1, 2, 3])
for scale in (1.0, 1e5):  # small and large activations: both sides of the logging `if`
    x = torch.randn(3, 32) * scale
    print(c_layer(x, labels).sum().item())
for x in (torch.ones(2, 4), -torch.ones(2, 4)):  # both branches of the gate
    print(c_gate(x).tolist())
'''


@pytest.mark.slow
def test_examples_reach_zero_breaks_with_fix(tmp_path):
    """`--fix` composes: the GM2xx guards it writes do not block the next fix, and Dynamo's
    graph_breaks log shows no break left on the fixed copy (`verify --compare-fix`)."""
    import json
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    shutil.copy(EXAMPLES / "encoder_layer.py", tmp_path / "encoder_layer.py")
    (tmp_path / "run.py").write_text(RUN)
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "graphmend_lint", "verify", "--compare-fix", "--output-format",
                           "json", "run.py"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    data = json.loads(proc.stdout)
    assert data["summary"]["runtime_breaks"] >= 4, data
    assert data["after_fix"]["runtime_breaks"] == 0, data["after_fix"]
    # stdout differs by design: the guarded `print` no longer runs under compile
