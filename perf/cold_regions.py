"""Where the fixed variants' cold start goes, and what a compile region buys back (issue 25).

A model of N identical blocks with breaks compiles a small graph per block frame once and reuses
it for every block (the graph breaks keep the frames apart); once fixed, Dynamo inlines every block
into one graph and Inductor compiles N copies of the block's kernels. `torch.compiler.
nested_compile_region` on the block's `forward` lets the fixed model reuse one compiled block again.
This script compiles (inductor, CPU, 1 thread, fresh kernel cache, each in its own process) the
unfixed case, its `graphmend-lint --fix` copy, and that copy with the region decorator on `--region`
(a class name), and prints cold time, steady time, graphs and graph ops:

    python perf/cold_regions.py --case mixed_block --region Block
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r'''
import importlib, os, sys, tempfile, time, warnings
warnings.simplefilter("ignore")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
import torch
from torch._dynamo.utils import counters
torch.set_num_threads(1)
sys.path.insert(0, sys.argv[1])
model, inputs = importlib.import_module(sys.argv[2]).make()
compiled = torch.compile(model)
start = time.perf_counter()
with torch.no_grad():
    out = compiled(*inputs[0])
cold = time.perf_counter() - start
with torch.no_grad():
    ref = model(*inputs[0])
    start = time.perf_counter()
    for _ in range(20):
        compiled(*inputs[0])
steady = (time.perf_counter() - start) / 20
print(f"RESULT {cold:.2f} {steady * 1e3:.2f} {counters['stats']['unique_graphs']} {torch.allclose(out, ref, atol=1e-5)}")
'''


def _variant(src: str, work: str, name: str, region: str | None, fix: bool) -> str:
    folder = os.path.join(work, name)
    os.makedirs(folder)
    dst = os.path.join(folder, os.path.basename(src))
    shutil.copy2(src, dst)
    if fix:
        subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "--fix", "--no-cache", dst],
                       capture_output=True, text=True, cwd=folder, check=False)
    if region:
        with open(dst) as f:
            text = f.read()
        cls = text.index(f"class {region}(")
        at = text.index("    def forward(", cls)
        with open(dst, "w") as f:
            f.write(text[:at] + "    @torch.compiler.nested_compile_region\n" + text[at:])
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="mixed_block", help="a module of perf/models")
    ap.add_argument("--region", default="Block", help="the repeated block's class")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    src = os.path.join(HERE, "models", f"{args.case}.py")
    work = tempfile.mkdtemp(prefix="gm_cold_")
    variants = {"unfixed": _variant(src, work, "unfixed", None, False),
                "fixed": _variant(src, work, "fixed", None, True),
                "fixed+region": _variant(src, work, "region", args.region, True)}
    print("| variant | round | cold s | steady ms | graphs | same output |\n|---|---|---|---|---|---|")
    for r in range(args.rounds):
        for name, folder in variants.items():
            p = subprocess.run([sys.executable, "-c", CHILD, folder, args.case], capture_output=True, text=True,
                               check=False)
            m = re.search(r"RESULT (\S+) (\S+) (\S+) (\S+)", p.stdout)
            print(f"| {name} | {r} | " + (" | ".join(m.groups()) if m else f"failed: {p.stderr[-300:]}") + " |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
