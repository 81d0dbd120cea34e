"""Smoke test of the perf harness: `python perf/run.py --quick` writes results.json, report.md and charts."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow  # about a minute on an idle 2-core machine
def test_perf_quick_run(tmp_path):
    out = tmp_path / "perf"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "perf", "run.py"), "--quick", "--device", "cpu",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in ("results.json", "report.md", "breaks.png", "ratios.png"):
        assert (out / name).is_file(), name
    data = json.loads((out / "results.json").read_text())
    rows = data["rows"]
    assert {"unfixed", "fixed"} <= {r["variant"] for r in rows}
    assert all({"case", "variant", "metric", "value", "torch", "device", "machine"} <= set(r) for r in rows)
    for variant in ("unfixed", "fixed"):
        metrics = {r["metric"] for r in rows if r["variant"] == variant}
        assert {"breaks", "cold_s", "steady_median_s"} <= metrics, (variant, sorted(metrics))
    assert "Graph breaks" in (out / "report.md").read_text()
