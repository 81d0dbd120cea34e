"""Lint speed: graphmend-lint vs `fixit --rules graphmend_lint lint`, same rules, same files.

    python perf/lint_speed.py [--tree DIR] [--sample 200] [--seed 0] [--jobs 2]
    python perf/lint_speed.py --tree-only [--code DIR] [--out FILE] [--output-format json|text]
    python perf/lint_speed.py --stages [--tree DIR] [--every 5]

The warm run and the sample run are repeated (`--repeat`, default 3) and their median is kept.

`--stages`: where the cold time of one process goes. Every k-th file of the tree, CPU seconds per
stage of a lint-only run (read, validate = `ast.parse` + nesting-depth check, the project index's
summary of the file, pre-filter, skeleton, libcst parse, rules), printed as a markdown table;
nothing is written. As in the CLI, the collector is paused while a file is read and analysed, and
the rules get the skeleton's source (positions one statement at a time); without the index's facts. (The CLI makes the skeleton in the index's first pass, in its workers.)

`--tree-only`: no Fixit; lints a copy of the tree cold and warm, then edits 3 files (a comment line
appended) and lints those 3 alone with the warm cache, as a pre-commit hook would (per-file
latency), and the same 3 with an empty cache. `--code DIR`: the graphmend_lint package to time
(default: this checkout's), e.g. an export of the base commit for a same-time comparison.
`--output-format text` times the pre-commit hook's output (no fix edits); json (the default)
includes each fix's edits.

Both tools lint a copy of the whole tree (default: the installed `transformers` package). Our CLI
lints it all cold (empty cache) and warm (unchanged files), then a fixed, seeded sample of its files
in place without the cache; Fixit lints the same sample, its project index built from scratch. So
both see every file's cross-file facts. Both run from an empty folder on a frozen copy of
graphmend_lint (so edits made meanwhile do not count), with default settings. The findings on the
sample must be identical in all three runs (path, line, 0-based column, rule, message): the script
exits 1 otherwise. Wall, CPU (user+sys of the whole process tree), files/s and peak memory (sum of
the tree's RSS, sampled) are printed and written to perf/results/lint_speed/results.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python perf/lint_speed.py`: the parent reads rule names (and --stages lints)
    sys.path.insert(0, str(ROOT))
OUT = ROOT / "perf/results/lint_speed"
FIXIT_ROW = re.compile(r"(.+?)@(\d+):(\d+) (\w+): (.*?)(?: \(has autofix\))?$")


def _compiled(snap: Path) -> None:
    """Byte-compile the frozen copy, as `pip install` does: with PYTHONDONTWRITEBYTECODE set (as on
    some CI machines) every run would otherwise compile the package's sources again (~0.15 s warm)."""
    import compileall

    compileall.compile_dir(str(snap), quiet=1)


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _tree_rss(pid: int) -> int:
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) * 1024
        except (OSError, StopIteration):
            continue
        todo.extend(_children(p))
    return total


def timed(cmd: list[str], cwd: Path, env: dict) -> dict:
    """Run `cmd`; wall, CPU of the whole process tree, peak summed RSS, stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mb": round(peak[0] / 2**20, 1),
            "returncode": proc.returncode, "stdout": out.decode(), "stderr": err.decode()}


TEXT_ROW = re.compile(r"(.+?):(\d+):(\d+): (\w+) (.*)$")


def text_rows(stdout: str) -> set[tuple]:
    rows = set()
    for line in stdout.splitlines():
        m = TEXT_ROW.match(line)
        if m:
            rows.add((str(Path(m[1]).resolve()), int(m[2]), int(m[3]) - 1, m[4], m[5]))
    return rows


def ours_rows(stdout: str, fmt: str = "json") -> set[tuple]:
    if fmt == "text":
        return text_rows(stdout)
    return {(str(Path(d["filename"]).resolve()), d["location"]["row"], d["location"]["column"] - 1,
             d.get("name", d.get("code")), d["message"]) for d in json.loads(stdout or "[]")}  # ruff's shape: "code"


def fixit_rows(stdout: str) -> set[tuple]:
    """Fixit's findings, its rule names turned into our codes (the JSON output's "code")."""
    from graphmend_lint.rules import by_code

    rows = set()
    for line in stdout.splitlines():
        m = FIXIT_ROW.match(line)
        if m:
            rule = by_code(m[4])
            rows.add((str(Path(m[1]).resolve()), int(m[2]), int(m[3]), rule.CODE if rule else m[4], m[5]))
    return rows


def median_run(cmd: list[str], cwd: Path, env: dict, repeat: int) -> dict:
    """`timed` run `repeat` times (this box's speed drifts by 10-20% from run to run): the run of
    median wall time, with every run's wall and CPU seconds beside it."""
    runs = [timed(cmd, cwd, env) for _ in range(max(1, repeat))]
    mid = sorted(runs, key=lambda r: r["wall_s"])[(len(runs) - 1) // 2]
    return {**mid, "walls_s": [r["wall_s"] for r in runs], "cpus_s": [r["cpu_s"] for r in runs],
            "same_output": all(r["stdout"] == runs[0]["stdout"] for r in runs)}


def summary(name: str, r: dict, files: int) -> dict:
    keep = {k: v for k, v in r.items() if k not in ("stdout", "stderr")}
    keep["files"] = files
    keep["files_per_s"] = round(files / r["wall_s"], 1) if r["wall_s"] else None
    keep["files_per_cpu_s"] = round(files / r["cpu_s"], 1) if r["cpu_s"] else None
    print(f"{name:34s} {files:5d} files  wall {r['wall_s']:8.2f} s  cpu {r['cpu_s']:8.2f} s  "
          f"{keep['files_per_s']:8.1f} files/s  peak {r['peak_rss_mb']:7.1f} MB  rc {r['returncode']}"
          + (f"  (median of walls {r['walls_s']})" if len(r.get("walls_s", ())) > 1 else ""))
    return keep


THREE = ("models/llama/modeling_llama.py", "models/bert/modeling_bert.py", "models/wav2vec2/modeling_wav2vec2.py")


def tree_only(args) -> int:
    src = args.tree.resolve()
    with tempfile.TemporaryDirectory(prefix="gm-lint-speed-") as tmp:
        tmp = Path(tmp)
        tree = tmp / "tree" / src.name
        shutil.copytree(src, tree, ignore=shutil.ignore_patterns("__pycache__"))
        files = sorted(str(p) for p in tree.rglob("*.py") if p.is_file())
        snap = tmp / "code"
        shutil.copytree(args.code, snap / "graphmend_lint", ignore=shutil.ignore_patterns("__pycache__"))
        _compiled(snap)
        work = tmp / "work"
        work.mkdir()
        env = {**os.environ, "PYTHONPATH": str(snap), "GRAPHMEND_CACHE_DIR": str(tmp / "cache"),
               "OMP_NUM_THREADS": "1"}
        ours = [sys.executable, "-m", "graphmend_lint", "check", "--output-format", args.output_format,
                "--exit-zero", "-q", "-j", str(args.jobs)]
        print(f"code {args.code}, {args.output_format} output; tree copy of {src} ({len(files)} files); load before {os.getloadavg()}")
        runs = {}
        cold = timed([*ours, str(tree)], work, env)
        runs["tree_cold"] = summary("tree, cold", cold, len(files))
        warm = timed([*ours, str(tree)], work, env)
        runs["tree_warm"] = summary("tree, warm", warm, len(files))
        three = [tree / t for t in THREE]
        for p in three:
            p.write_bytes(p.read_bytes() + b"\n# edited\n")
        edited = timed([*ours, *map(str, three)], work, env)
        runs["three_edited_warm_cache"] = summary("3 edited files, warm cache", edited, 3)
        empty = timed([*ours, *map(str, three)], work, {**env, "GRAPHMEND_CACHE_DIR": str(tmp / "cache2")})
        runs["three_empty_cache"] = summary("3 files, empty cache", empty, 3)
        if args.keep_output and args.output_format == "json":  # the cold run's JSON, file names relative to the tree (to diff two codes)
            items = json.loads(cold["stdout"] or "[]")
            for d in items:
                d["filename"] = str(Path(d["filename"]).relative_to(tree))
            args.keep_output.write_text(json.dumps(items, indent=1, sort_keys=True) + "\n")
        fmt = args.output_format
        rows = ours_rows(cold["stdout"], fmt)
        result = {"code": str(args.code), "tree": str(src), "files": len(files), "output_format": fmt, "runs": runs,
                  "findings_tree": len(rows), "warm_equals_cold": rows == ours_rows(warm["stdout"], fmt),
                  "findings_three": len(ours_rows(edited["stdout"], fmt)),
                  "load_average_after": os.getloadavg()}
        findings_path = args.out.with_suffix(".findings.json")
        findings_path.write_text(json.dumps(sorted(
            [str(Path(r[0]).relative_to(tree)), *r[1:]] for r in rows), indent=0) + "\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


STAGES = ("read", "validate", "summary", "prefilter", "skeleton", "libcst_parse", "rules")


def stages(args) -> int:
    """CPU seconds per stage of a lint-only run, one process, every `args.every`-th file of the tree."""
    from graphmend_lint import cstparse, engine, files, gcpause, prefilter, runner, skeleton
    from graphmend_lint.analysis import summary
    from graphmend_lint.settings import Settings

    paths = sorted(args.tree.resolve().rglob("*.py"))[::args.every]
    s = Settings()
    spent = dict.fromkeys(STAGES, 0.0)
    kept = lines = 0

    def clock(stage, fn, *a):
        t = time.process_time()
        try:
            return fn(*a)
        finally:
            spent[stage] += time.process_time() - t

    def run() -> None:
        for p in paths:
            with gcpause.paused():  # as the CLI's two passes: the collector waits while a file is analysed
                one(p)

    def one(p: Path) -> None:
        nonlocal kept, lines
        try:
            source = clock("read", files.read_source, p, runner.MAX_BYTES)
            tree = clock("validate", runner.validate, source)
        except Exception:  # bad input: the CLI reports it and moves on
            return
        clock("summary", summary.summarize, tree, source.decode("utf-8", "replace"))
        if not clock("prefilter", prefilter.may_have_findings, source, s.compiled_scope, tree):
            return
        kept += 1
        lines += source.count(b"\n")
        lean = clock("skeleton", skeleton.skeleton, source, tree, s.compiled_scope)
        module = clock("libcst_parse", cstparse.parse_module, lean)
        clock("rules", engine.lint_module, module, s, None, lean)  # positions one statement at a time

    # the CLI's analysis runs on a thread with a large stack and a high recursion limit: so does this
    sys.setrecursionlimit(max(sys.getrecursionlimit(), runner.RECURSION_LIMIT))
    threading.stack_size(runner.STACK_BYTES)
    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    total = sum(spent.values())
    print(f"{len(paths)} files (every {args.every}th of {args.tree}), {kept} kept by the pre-filter "
          f"({lines} lines); {total:.1f} CPU-s in all\n")
    print("| stage | CPU s | share |\n|---|---|---|")
    for stage, v in spent.items():
        print(f"| {stage} | {v:.2f} | {100 * v / total:.0f}% |")
    return 0


def main() -> int:
    import transformers  # noqa: F401  (only to locate the default tree)

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, default=Path(transformers.__file__).parent)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="runs of the warm and the sample run (the median is kept)")
    ap.add_argument("--out", type=Path, default=OUT / "results.json")
    ap.add_argument("--tree-only", action="store_true")
    ap.add_argument("--code", type=Path, default=ROOT / "graphmend_lint")
    ap.add_argument("--keep-output", type=Path, help="--tree-only: write the cold run's JSON output here")
    ap.add_argument("--output-format", choices=("json", "text"), default="json", help="--tree-only: the CLI's output")
    ap.add_argument("--stages", action="store_true", help="CPU seconds per stage of a lint-only run (one process)")
    ap.add_argument("--every", type=int, default=5, help="--stages: every k-th file of the tree")
    args = ap.parse_args()
    if args.stages:
        return stages(args)
    if args.tree_only:
        return tree_only(args)

    src = args.tree.resolve()
    with tempfile.TemporaryDirectory(prefix="gm-lint-speed-") as tmp:
        tmp = Path(tmp)
        # One copy of the whole tree (Fixit skips git-ignored paths, such as a venv's packages): both
        # tools lint the sample in place, so each file's project index sees the whole project.
        tree = tmp / "tree" / src.name
        shutil.copytree(src, tree, ignore=shutil.ignore_patterns("__pycache__"))
        files = sorted(str(p) for p in tree.rglob("*.py") if p.is_file())
        lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
        sample = sorted(random.Random(args.seed).sample(files, min(args.sample, len(files))))
        snap = tmp / "code"
        shutil.copytree(ROOT / "graphmend_lint", snap / "graphmend_lint",
                        ignore=shutil.ignore_patterns("__pycache__"))
        _compiled(snap)
        work = tmp / "work"
        work.mkdir()
        env = {**os.environ, "PYTHONPATH": str(snap), "GRAPHMEND_CACHE_DIR": str(tmp / "cache"),
               "OMP_NUM_THREADS": "1"}
        ours = [sys.executable, "-m", "graphmend_lint", "check", "--output-format", "json", "--exit-zero",
                "-q", "-j", str(args.jobs)]
        print(f"tree copy of {src} ({len(files)} files, {lines} lines); Fixit sample {len(sample)} files, "
              f"seed {args.seed}")
        print(f"load average before: {os.getloadavg()}")
        runs = {}
        cold = timed([*ours, str(tree)], work, env)
        runs["ours_tree_cold"] = summary("graphmend-lint tree, cold", cold, len(files))
        warm = median_run([*ours, str(tree)], work, env, args.repeat)
        runs["ours_tree_warm"] = summary("graphmend-lint tree, warm", warm, len(files))
        nocache = median_run([*ours, "--no-cache", *sample], work, env, args.repeat)
        runs["ours_sample_no_cache"] = summary("graphmend-lint sample, no cache", nocache, len(sample))
        fixit = timed([sys.executable, "-m", "fixit", "--rules", "graphmend_lint", "lint", *sample], work,
                      {**env, "GRAPHMEND_CACHE_DIR": str(tmp / "cache-fixit")})  # its index from scratch too
        runs["fixit_sample"] = summary("fixit lint sample", fixit, len(sample))
        print(f"load average after: {os.getloadavg()}")

        tree_rows = ours_rows(cold["stdout"])
        same_warm = tree_rows == ours_rows(warm["stdout"]) and warm["same_output"] and nocache["same_output"]
        in_sample = {str(Path(f).resolve()) for f in sample}
        ours_on_sample = {r for r in tree_rows if r[0] in in_sample}
        theirs = fixit_rows(fixit["stdout"])
        fixit_errors = [line for line in (fixit["stdout"] + fixit["stderr"]).splitlines()
                        if "EXCEPTION" in line or "Traceback" in line or "Failed to load" in line]
        fixit_errors += [] if f"{len(sample)} files" in fixit["stderr"] + fixit["stdout"] else [
            "fixit did not report all sample files: " + (fixit["stderr"] + fixit["stdout"]).strip()[-200:]]
        equal = ours_on_sample == theirs and ours_rows(nocache["stdout"]) == theirs
        ratio_sample = fixit["wall_s"] / nocache["wall_s"]
        fixit_fps = len(sample) / fixit["wall_s"]
        ratio_tree = (len(files) / fixit_fps) / cold["wall_s"]
        print(f"findings: tree {len(tree_rows)}, sample ours {len(ours_on_sample)}, sample fixit {len(theirs)}, "
              f"identical: {equal}; warm == cold: {same_warm}")
        print(f"speed-up on the sample (fixit wall / ours wall, no cache): {ratio_sample:.1f}x")
        print(f"speed-up on the tree (fixit's files/s extrapolated / ours cold): {ratio_tree:.1f}x")
        for r in sorted(ours_on_sample ^ theirs)[:20]:
            print("  only in", "ours " if r in ours_on_sample else "fixit", r)

        import libcst
        from importlib import metadata

        result = {
            "tree": str(src), "tree_files": len(files), "tree_lines": lines,
            "transformers": metadata.version("transformers"), "libcst": metadata.version("libcst"),
            "fixit": metadata.version("fixit"), "python": platform.python_version(),
            "cpus": os.cpu_count(), "jobs": args.jobs, "seed": args.seed, "sample_files": len(sample),
            "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                     text=True).stdout.strip(),
            "rules": subprocess.run([sys.executable, "-m", "graphmend_lint", "rule", "--all"], cwd=work, env=env,
                                    capture_output=True, text=True).stdout.count("\n"),
            "runs": runs,
            "findings": {"tree": len(tree_rows), "sample_ours": len(ours_on_sample), "sample_fixit": len(theirs),
                         "identical_on_sample": equal, "warm_equals_cold": same_warm,
                         "fixit_exceptions": fixit_errors[:10]},
            "speedup": {"sample_wall": round(ratio_sample, 1), "tree_wall_extrapolated": round(ratio_tree, 1)},
            "load_average_after": os.getloadavg(),
            "libcst_module": libcst.__file__,
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0 if equal and same_warm and not fixit_errors else 1


if __name__ == "__main__":
    sys.exit(main())
