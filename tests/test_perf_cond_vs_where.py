"""perf/cond_vs_where.py: its reading of inductor's output code, and a --quick run (slow).

The code analysis is checked on output code inductor generated for torch.cond and torch.where
(stored under perf/results/cond_vs_where/output_code by a full run): the host-side `if` of cond,
its predicate kernel, the launches per branch. The --quick run checks what the benchmark reports
for the gather case: only `if` breaks, where raises on the untaken out-of-range gather while cond and
the double-where idiom match the eager original, and cond's wrapper reads the predicate on the host.
"""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CODE = ROOT / "perf" / "results" / "cond_vs_where" / "output_code"


def _mod():
    spec = importlib.util.spec_from_file_location("cond_vs_where", ROOT / "perf" / "cond_vs_where.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_module_imports_without_torch():
    mod = _mod()
    assert "torch" not in vars(mod)


def test_analyse_cond_output_code():
    a = _mod().analyse_code((CODE / "router_cheap__cond__eval__0.py.txt").read_text())
    assert a["host_side_ifs"] == ["if buf1.item():"]
    assert a["subgraph_functions"] == ["true_graph_0", "false_graph_0"]
    assert a["predicate_kernels"] == ["cpp_fused_gt_mean_0"]
    lp = a["launches_per_function"]
    assert lp["call"] == {"fused_kernels": 1, "extern_calls": 0, "aten_fallbacks": 0}
    assert lp["true_graph_0"]["extern_calls"] == 1 and lp["false_graph_0"]["extern_calls"] == 1  # one addmm each


def test_analyse_where_output_code():
    a = _mod().analyse_code((CODE / "router_cheap__where__eval__0.py.txt").read_text())
    assert a["host_side_ifs"] == [] and a["subgraph_functions"] == []
    assert a["launches_per_function"]["call"] == {"fused_kernels": 2, "extern_calls": 2, "aten_fallbacks": 0}


def test_key_lines_drop_boilerplate():
    lines = ["This higher order operator doesn't work unless it is captured completely with torch.compile. Got graph break/error:",
             "Encountered aliasing during higher order op tracing", "  Higher Order Operator: torch.cond",
             "  Explanation: Higher order ops do not support aliasing. Found in <bound method HigherOrderOperator.name of <torch._higher_order_ops.cond.CondOp object at 0x7f>>",
             "  Hint: Replace `return input` with `return input.clone()` to avoid aliasing."]
    assert _mod().key_lines(lines) == ["Encountered aliasing during higher order op tracing",
                                       "Explanation: Higher order ops do not support aliasing."]


@pytest.mark.slow  # about 1-1.5 minutes on a 2-core machine (inductor compiles 8 times)
def test_quick_run(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "perf" / "cond_vs_where.py"), "--quick", "--device", "cpu",
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((tmp_path / "results.json").read_text())
    (case,) = data["cases"]
    assert case["name"] == "gather"
    for mode in ("eval", "train"):
        ind, aot = case["inductor"][mode], case["aot_eager"][mode]
        assert ind["if"]["breaks_total"] == 1 and ind["if"]["graphs_total"] == 3
        for form in ("where", "cond", "dwhere"):
            assert ind[form]["breaks_total"] == 0 and ind[form]["graphs_total"] == 1, (mode, form)
        assert "index out of bounds" in ind["where"]["eq_input1"]["error"]
        assert aot["where"]["eq_input1"]["error"].startswith("IndexError")
        for form in ("if", "cond", "dwhere"):
            assert aot[form]["eq_input0"]["equal"] and aot[form]["eq_input1"]["equal"], (mode, form)
            assert ind[form]["eq_input0"]["close"] and ind[form]["eq_input1"]["close"], (mode, form)
        assert ind["cond"]["code"][0]["host_side_ifs"], mode
    limits = {(r["case"], r["run"], r["requires_grad"]): r for r in data["limits"]}
    r = limits[("batchnorm_train_in_branch", "compile_aot_eager", False)]
    assert r["error_type"].endswith("UncapturedHigherOrderOpError") and r["graph_breaks_logged"] == 0
    assert "## Summary" in (tmp_path / "report.md").read_text()
