"""Speed of the project index (issue 22) on a tree: a 1-file run with an empty cache (the whole
project indexed), the same file warm, and the whole tree cold, for this checkout and, with
`--base DIR`, another (e.g. an export of the commit before the project index), back to back.

    python perf/one_answer_speed.py --tree /work/baseline/trees/tf5 [--base /tmp/base] [--file F ...]
        [--jobs 2] [--warm 3] [--no-whole] [--out FILE]

Each command runs from the tree's folder in a fresh process with its own empty cache folder
(GRAPHMEND_CACHE_DIR), on a frozen copy of graphmend_lint; wall and CPU (user+sys of the process and its workers) are recorded.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(code: Path, args: list[str], cwd: Path, cache: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code), "GRAPHMEND_CACHE_DIR": cache}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "--exit-zero", "-q", *args],
                          cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "findings": len(proc.stdout.splitlines())}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--package", default="transformers")
    ap.add_argument("--base", type=Path, default=None)
    ap.add_argument("--file", action="append", default=None)
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--no-whole", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    files = a.file or ["transformers/modeling_utils.py", "transformers/models/bart/modeling_bart.py"]
    frozen = Path(tempfile.mkdtemp(prefix="oa-code-"))  # edits made meanwhile do not count
    shutil.copytree(ROOT / "graphmend_lint", frozen / "graphmend_lint", ignore=shutil.ignore_patterns("__pycache__"))
    codes = {"this": frozen, **({"base": a.base.resolve()} if a.base else {})}
    out: dict = {"tree": str(a.tree), "jobs": a.jobs, "cpus": os.cpu_count(), "python": platform.python_version(),
                 "load_before": os.getloadavg(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    for name, code in codes.items():
        row: dict = {"code": str(code)}
        for f in files:
            cache = tempfile.mkdtemp(prefix="oa-speed-")
            cold = timed(code, ["-j", a.jobs, f], a.tree, cache)
            warm = [timed(code, ["-j", a.jobs, f], a.tree, cache) for _ in range(a.warm)]
            row[f] = {"cold_empty_cache": cold, "warm": warm,
                      "warm_median_wall_s": statistics.median(w["wall_s"] for w in warm)}
            print(name, f, json.dumps(row[f]), flush=True)
        if not a.no_whole:
            row["whole_tree_cold"] = timed(code, ["-j", a.jobs, a.package], a.tree, tempfile.mkdtemp(prefix="oa-speed-"))
            print(name, "whole", json.dumps(row["whole_tree_cold"]), flush=True)
        out[name] = row
    out["load_after"] = os.getloadavg()
    text = json.dumps(out, indent=1)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
