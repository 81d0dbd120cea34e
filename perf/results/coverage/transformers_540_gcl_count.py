"""Count GradientCheckpointingLayer subclasses in transformers 5.4.0 and whether their forwards are compiled."""
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])  # graphmend_lint code dir
from graphmend_lint import parallel
from graphmend_lint.analysis import project
from graphmend_lint.settings import Settings
T = Path("/work/ext/src/transformers-5.4.0-py3-none-any/transformers")
paths = sorted(p for p in T.rglob("*.py"))
t = time.process_time()
data = {p: p.read_bytes() for p in paths}
run, roots = parallel._run_modules(paths, data)
summ = {p: project.parse_summary(data[p]) for p in run.values()}
up = {m: (p, summ[p]) for m, p in run.items() if summ[p] is not None}
idx = project.ProjectIndex(run, up, roots, lambda p: summ.get(p) or project.parse_summary(p.read_bytes()))
GCL = "transformers.modeling_layers.GradientCheckpointingLayer"
sub = []
def derives(mod, cls, depth=0):
    if depth > 30: return False
    for q, _ in idx.bases(mod, cls):
        if q is None: continue
        r = idx.lookup(q)
        if r and r[0] == "class":
            if f"{r[1]}.{r[2]}" == GCL or derives(r[1], r[2], depth + 1): return True
    return False
comp = idx.compiled()
n = fwd = fwd_compiled = 0
mn = mfwd = mcomp = 0
files = set()
for m, p in run.items():
    s = idx.mods.get(m) or summ[p]
    if not s: continue
    for c in s["classes"]:
        if derives(m, c):
            n += 1; files.add(m)
            modeling = m.rsplit(".", 1)[-1].startswith("modeling_")
            mn += modeling
            if f"{c}.forward" in s["defs"]:
                fwd += 1
                fwd_compiled += (m, f"{c}.forward") in comp
                mfwd += modeling
                mcomp += modeling and (m, f"{c}.forward") in comp
print(f"modeling_*.py only: {mn} subclasses, {mfwd} with own forward, {mcomp} compiled")
print(f"GradientCheckpointingLayer subclasses: {n} in {len(files)} files; with own forward {fwd}; forward compiled by the index {fwd_compiled}; {time.process_time()-t:.1f} CPU-s")
Path("/tmp/scope/gcl_files.txt").write_text("\n".join(str(run[m]) for m in sorted(files)) + "\n")
