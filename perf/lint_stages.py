"""Where the cold lint time goes: `python perf/lint_stages.py` (issue 7 profile).

Every 5th file of the installed transformers package, one process, CPU seconds per stage of the
runner (read, ast.parse, depth check, pre-filter, skeleton, libcst parse, rules), as a markdown table.
"""
import ast, time, pathlib, sys, transformers, libcst as cst
from graphmend_lint import runner, prefilter, skeleton, engine, files
from graphmend_lint.settings import Settings
root = pathlib.Path(transformers.__file__).parent
fs = sorted(root.rglob("*.py"))[::5]
s = Settings()
T = dict(read=0.0, ast_parse=0.0, depth=0.0, prefilter=0.0, skeleton=0.0, libcst_parse=0.0, rules=0.0)
kept = 0; lines = 0
def clock(k, f, *a):
    t = time.process_time(); r = f(*a); T[k] += time.process_time() - t; return r
for p in fs:
    src = clock("read", files.read_source, p, runner.MAX_BYTES)
    tree = clock("ast_parse", ast.parse, src)
    clock("depth", runner._depth, tree)
    if not clock("prefilter", prefilter.may_have_findings, src, s.compiled_scope, tree):
        continue
    kept += 1; lines += src.count(b"\n")
    lean = clock("skeleton", skeleton.skeleton, src, tree, s.compiled_scope)
    mod = clock("libcst_parse", cst.parse_module, lean)
    def rules(): return engine.lint_module(mod, s)
    runner._in_big_thread(lambda: clock("rules", rules))
tot = sum(T.values())
print(f"files {len(fs)}, kept {kept} ({lines} lines); total {tot:.1f} CPU-s")
for k, v in T.items():
    print(f"| {k} | {v:.2f} | {100*v/tot:.0f}% |")
