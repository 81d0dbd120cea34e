"""The pytest gate: graphmend_lint.testing.assert_no_graph_breaks and the `no_graph_breaks` fixture.

A small package with a compiled model fails the gate with the break's file:line, reason and our fix,
passes after `graphmend-lint check --fix`, in train and eval mode; frames outside it are never named.
"""
from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphmend_lint.cli import main

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[1]

MODEL = '''\
import torch
from torch import nn

from {pkg}.helpers import scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        h = self.drop(self.lin(x))
        print("forward", tuple(h.shape))
        if h.sum() > 0:
            h = h * 2
        else:
            h = h - 1
        return scale(h)


class Clean(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2


class Scalar(nn.Module):
    def forward(self, x):
        s = x.mean().item()
        return x * s
'''
HELPERS = '''\
def scale(h):
    return h * 0.5
'''
OUTSIDE = '''\
def noisy(h):
    print("outside")
    return h + 1
'''


def _package(tmp_path: Path, name: str) -> Path:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(MODEL.format(pkg=name))
    (pkg / "helpers.py").write_text(HELPERS)
    return pkg


@pytest.fixture
def pkg(tmp_path, monkeypatch):
    name = f"gatepkg_{tmp_path.name.replace('-', '_')}"
    path = _package(tmp_path, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    importlib.invalidate_caches()
    yield name, path
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def _load(name: str):
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]
    importlib.invalidate_caches()
    return importlib.import_module(f"{name}.model")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_fails_with_file_line_reason_and_fix_then_passes_after_fix(pkg, mode, capsys):
    from graphmend_lint.testing import GraphBreakError, assert_no_graph_breaks

    name, path = pkg
    net = _load(name).Net().train(mode == "train")
    with pytest.raises(GraphBreakError) as err:
        assert_no_graph_breaks(net, torch.randn(2, 8), within=[name])
    text = str(err.value)
    assert f"{name}/model.py:15: GB0059 Failed to trace builtin operator" in text
    assert f"{name}/model.py:16: GB0170 Data-dependent branching" in text
    assert "-> GM201 [safe fix]" in text and "-> GM101 [safe fix]" in text
    assert "+        if not torch.compiler.is_compiling():" in text  # our fix, as a diff
    assert "+        if torch.compiler.is_compiling():\n" in text  # GM101's compile-only fix: eager keeps the `if`
    assert "+            h = torch.where(h.sum() > 0, h * 2, h - 1)\n      +        elif h.sum() > 0:" in text
    assert "site-packages" not in text and "torch/" not in text and "/tmp" not in text  # only the package
    assert err.value.report.breaks == 2

    assert main(["check", "--fix", "--no-cache", str(path)]) == 1  # Scalar's `.item()` has no fix
    assert "Fixed 2 errors." in capsys.readouterr().out
    fixed = _load(name).Net().train(mode == "train")
    rep = assert_no_graph_breaks(fixed, torch.randn(2, 8), within=[name])
    assert rep.breaks == 0 and rep.graphs == 1 and not rep.recompiles
    assert rep.text().startswith(f"no graph break in {name}")


def test_clean_model_and_default_within(pkg):
    from graphmend_lint.testing import assert_no_graph_breaks

    name, _ = pkg
    rep = assert_no_graph_breaks(_load(name).Clean(), torch.randn(2, 8))  # within: the model's package
    assert rep.within == [name] and rep.breaks == 0 and rep.graphs == 1


def test_breaks_outside_within_are_counted_not_shown(pkg, tmp_path):
    from graphmend_lint.testing import assert_no_graph_breaks

    name, _ = pkg
    other = tmp_path / f"{name}_dep"
    other.mkdir()
    (other / "__init__.py").write_text(OUTSIDE)
    dep = importlib.import_module(f"{name}_dep")
    model = _load(name).Clean()

    def fn(x):
        return dep.noisy(model(x))

    rep = assert_no_graph_breaks(fn, torch.randn(2, 8), within=[name])
    assert rep.breaks == 0 and rep.outside == 1
    assert "Outside" in rep.text() and "_dep" not in rep.text()
    del sys.modules[f"{name}_dep"]


def test_allow_and_recompiles(pkg):
    from graphmend_lint.testing import GraphBreakError, assert_no_graph_breaks

    name, _ = pkg
    model = _load(name).Scalar()
    with pytest.raises(GraphBreakError) as err:
        assert_no_graph_breaks(model, torch.randn(3), within=[name])
    assert "GB0124" in str(err.value) and "-> GM901 [no fix]" in str(err.value)
    # the break allowed: the float handed across it still recompiles the rest on the second call
    with pytest.raises(GraphBreakError) as err:
        assert_no_graph_breaks(model, torch.randn(3), within=[name], allow=["GB0124"], also=[(torch.randn(3),)])
    assert err.value.report.breaks == 0 and err.value.report.recompiles
    assert f"Recompilations in {name}: 1" in str(err.value)
    rep = assert_no_graph_breaks(model, torch.randn(3), within=[name], allow=[f"{name}/model.py:*"],
                                 also=[(torch.randn(3),)], max_recompiles=None)
    assert len(rep.allowed) == 1 and rep.breaks == 0
    assert assert_no_graph_breaks(model, torch.randn(3), within=[name], allow=["GM9"]).breaks == 0


def test_within_unknown_package_is_an_error():
    from graphmend_lint.testing import assert_no_graph_breaks

    with pytest.raises(ValueError, match="no package or module named"):
        assert_no_graph_breaks(lambda x: x, torch.randn(2), within=["no_such_pkg_xyz"])


def test_plugin_and_testing_import_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import graphmend_lint.pytest_plugin, graphmend_lint.testing\n"
            "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_fixit_collects_the_rules_without_pytest_or_torch():
    """Fixit imports every module of graphmend_lint (the pre-commit hook's env has no pytest)."""
    code = ("import sys; sys.modules['torch'] = None; sys.modules['pytest'] = None\n"
            "import fixit.config, graphmend_lint\n"
            "rules = fixit.config.walk_module(graphmend_lint)\n"
            "assert len(rules) >= 20, rules\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_plugin_is_registered_by_entry_point():
    from graphmend_lint.settings import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"graphmend": "graphmend_lint.pytest_plugin"}


PLUGIN_TEST = '''\
import pytest
import torch

from {pkg}.model import Clean, Net


def test_broken(no_graph_breaks):
    no_graph_breaks(Net().eval(), torch.randn(2, 8))


def test_clean(no_graph_breaks):
    no_graph_breaks(Clean().train(), torch.randn(2, 8))


@pytest.mark.graphmend(allow=["GB0059", "GB0170"])
def test_allowed(no_graph_breaks):
    no_graph_breaks(Net().eval(), torch.randn(2, 8))
'''


@pytest.mark.slow
def test_pytest_plugin_fixture_and_marker(pkg, tmp_path):
    name, _ = pkg
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text(f'[tool.pytest.ini_options]\ngraphmend_within = ["{name}"]\n')
    (proj / "test_model.py").write_text(PLUGIN_TEST.format(pkg=name))
    env = {**__import__("os").environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"}
    from importlib.metadata import entry_points

    installed = any(e.value == "graphmend_lint.pytest_plugin" for e in entry_points(group="pytest11"))
    load = [] if installed else ["-p", "graphmend_lint.pytest_plugin"]  # installed: pytest loads it itself
    out = subprocess.run([sys.executable, "-m", "pytest", *load, "-q",
                          "-p", "no:cacheprovider", "-o", "addopts=", str(proj)],
                         capture_output=True, text=True, cwd=proj, env=env)
    assert "1 failed, 2 passed" in out.stdout, out.stdout + out.stderr
    assert f"{name}/model.py:15: GB0059" in out.stdout and "-> GM201 [safe fix]" in out.stdout


@pytest.mark.slow
def test_gate_on_tiny_bart_before_and_after_fix(tmp_path, capsys):
    """transformers 4.44.2 BART (fp16, random weights): the encoder's overflow clamp breaks the graph
    (modeling_bart.py:585, GM101); after `check --fix` on a copy of the file, no break is left."""
    transformers = pytest.importorskip("transformers")
    from graphmend_lint.testing import GraphBreakError, assert_no_graph_breaks

    cfg = transformers.BartConfig(vocab_size=64, d_model=16, encoder_layers=2, decoder_layers=1,
                                  encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                                  decoder_ffn_dim=32, max_position_embeddings=32)
    ids = torch.randint(3, 64, (2, 8), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    model = transformers.BartModel(cfg).to(torch.float16).eval()
    with pytest.raises(GraphBreakError) as err:
        assert_no_graph_breaks(model, ids, within=["transformers"])
    text = str(err.value)
    assert "transformers/models/bart/modeling_bart.py:585: GB0170 Data-dependent branching" in text
    assert "-> GM101 [safe fix]" in text and "+                hidden_states = torch.where(" in text
    assert "site-packages" not in text and "torch/_dynamo" not in text

    source = Path(transformers.__file__).parent / "models" / "bart" / "modeling_bart.py"
    dst = tmp_path / "modeling_bart_gm.py"
    dst.write_bytes(source.read_bytes())
    main(["check", "--fix", "--no-cache", "--select", "GM1,GM2", str(dst)])
    capsys.readouterr()
    name = "transformers.models.bart.modeling_bart_gm"  # a sibling module: its relative imports resolve
    spec = importlib.util.spec_from_file_location(name, dst)
    fixed = importlib.util.module_from_spec(spec)
    sys.modules[name] = fixed
    try:
        spec.loader.exec_module(fixed)
        torch.manual_seed(0)
        model = fixed.BartModel(cfg).to(torch.float16).eval()
        rep = assert_no_graph_breaks(model, ids, within=["transformers", str(tmp_path)])
        assert rep.breaks == 0 and rep.graphs == 1
    finally:
        del sys.modules[name]
