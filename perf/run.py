"""Measure graph breaks and latency of models before and after graphmend-lint fixes.

    python perf/run.py [--device auto|cpu|cuda] [--backend inductor|aot_eager|eager] [--quick] [--unsafe]
                       [--rounds N] [--dynamic auto|true|false|mark] --out DIR

Every case runs in fresh worker processes (perf/worker.py), one per variant, each with an empty inductor
cache.  The fixed variants are produced by running the fixer on copies of the sources (perf/fixer.py).
With --rounds N each case runs N rounds, unfixed and fixed alternating (unfixed first in even rounds,
fixed first in odd ones), every run in a fresh process; the report gives medians, spreads and a noise band.
"""
import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from perf import fixer, hf_models, report  # noqa: E402

QUICK_LOCAL = ["branch_block", "logging_layer"]


def charts_available() -> bool:
    """Charts need matplotlib (the [perf] extra). Without it, say so once, before any case runs, and
    write the report without charts (not a ModuleNotFoundError after the first case)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # sys.modules["matplotlib"] = None
        found = False
    if not found:
        print("perf: matplotlib is not installed (pip install -e '.[perf]'); the report is written without "
              "charts", file=sys.stderr, flush=True)
        report.charts = lambda *args, **kwargs: None
    return found
QUICK_HF = ["hf_bart"]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--backend", default=None, choices=["inductor", "aot_eager", "eager"],
                    help="default: inductor (eager with --quick)")
    ap.add_argument("--quick", action="store_true", help="small subset, eager backend, < 2 minutes")
    ap.add_argument("--unsafe", action="store_true", help="also measure --unsafe-fixes")
    ap.add_argument("--steady", type=int, default=None, help="steady-state calls (>= 9)")
    ap.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    ap.add_argument("--no-hf", action="store_true", help="skip the transformers models")
    ap.add_argument("--all-hf", action="store_true",
                    help="all transformers cases (adds Marian, Pegasus, Blenderbot: same clamp as Bart)")
    ap.add_argument("--fixtures", action="store_true",
                    help="also run tests/fixtures/*/invalid_*.py that have a fix and define make() (many tiny cases; best with "
                         "--backend eager)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per worker")
    ap.add_argument("--threads", type=int, default=1,
                    help="CPU intra-op threads per worker (default 1: stable timings on a small shared machine; "
                         "0 = torch default)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds per case, variants interleaved, each run a fresh process (default 3; 1 with --quick)")
    ap.add_argument("--dynamic", default="auto", choices=["auto", "true", "false", "mark"],
                    help="torch.compile dynamic=None (auto, default) | True | False, or mark: dynamic=None plus "
                         "torch._dynamo.mark_dynamic on the case's sequence dims (hf_models.DYNAMIC_DIMS)")
    ap.add_argument("--modes", default=None,
                    help="comma-separated compile modes: default,reduce-overhead (default: default, plus "
                         "reduce-overhead on CUDA with inductor)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds: start no new case once this much wall time has passed (cuda_pass.py)")
    ap.add_argument("--profile", action="store_true",
                    help="torch.profiler over 5 steady calls per case and variant (round 0, after the timings): "
                         "OUT/profiles/CASE.VARIANT[.MODE].txt")
    ap.add_argument("--out", required=True)
    return ap.parse_args(argv)


def discover(args):
    """[(name, kind, source)] where kind is local|fixture|hf."""
    cases = []
    for p in sorted(glob.glob(os.path.join(HERE, "models", "*.py"))):
        name = os.path.splitext(os.path.basename(p))[0]
        if not name.startswith("_"):
            cases.append((name, "local", p))
    for p in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "*", "invalid_*.py"))):
        if p.endswith(".fixed.py") or not args.fixtures:
            continue
        try:
            text = open(p).read()
        except OSError:
            continue
        if not any(os.path.exists(p[:-3] + ext) for ext in (".fixed.py", ".unsafe.fixed.py")):
            continue  # no fix offered (golden files from tests/regen.py): nothing to compare
        if "\ndef make(" in text and "nn.Module" in text:  # fixtures' convention: make() -> (callable, [args])
            code = os.path.basename(os.path.dirname(p))
            cases.append((f"fx_{code}_{os.path.splitext(os.path.basename(p))[0]}", "fixture", p))
    if not args.no_hf:
        hf = hf_models.HF_CASES if args.all_hf else hf_models.DEFAULT_HF
        cases += [(name, "hf", name) for name in hf]
    if args.quick:
        cases = [c for c in cases if c[0] in QUICK_LOCAL + QUICK_HF]
    if args.cases:  # in the order given (cuda_pass.py lists the most wanted first)
        want = args.cases.split(",")
        cases = sorted([c for c in cases if c[0] in want], key=lambda c: want.index(c[0]))
    return cases


def prepare(cases, variants, work):
    """Copy sources per variant and run the fixer on the fixed ones.  Returns per-variant info."""
    local = [src for _, kind, src in cases if kind in ("local", "fixture")]
    hf_rel = sorted({rel for name, kind, _ in cases if kind == "hf" for rel in hf_models.HF_CASES[name][1]})
    info = {}
    for v in variants:
        dest = os.path.join(work, v)
        t0 = time.time()
        paths, pkgs = fixer.copy_tree(local, hf_rel, dest, copy_hf=(v != "unfixed"))
        entry = {"dest": dest, "pkgs": pkgs, "paths": paths, "copy_s": time.time() - t0}
        if v == "unfixed":
            found, _, _ = fixer.findings(list(paths.values()), dest)
            entry["findings"] = {src: found[dst] for src, dst in paths.items()}
            entry["fixer_status"], entry["fixer_output"] = "not run (unfixed)", ""
        else:
            rc, out, status = fixer.lint(list(paths.values()), dest, fix=True, unsafe=(v == "fixed_unsafe"))
            entry["fixer_status"], entry["fixer_output"] = status, out
        entry["diffs"] = {src: fixer.diff(src, dst) for src, dst in paths.items()}
        entry["prepare_s"] = time.time() - t0
        print(f"perf: prepared {v} in {entry['prepare_s']:.0f}s (fixer: {entry['fixer_status']})", flush=True)
        info[v] = entry
    return info


def case_files(name, kind, src, entry):
    """Sources of one case (original paths) and the loader spec for one variant."""
    if kind == "hf":
        import transformers
        base = os.path.dirname(transformers.__file__)
        files = [os.path.join(base, rel) for rel in hf_models.HF_CASES[name][1]]
        return files, {"kind": "hf", "case": name}
    return [src], {"kind": "local", "path": entry["paths"][src]}


def same_source(info, a, b, src, kind, name):
    """True when variants a and b of a case have byte-identical sources."""
    files, _ = case_files(name, kind, src, info[a])
    for f in files:
        pa, pb = info[a]["paths"].get(f), info[b]["paths"].get(f)
        if not pa or not pb or open(pa, "rb").read() != open(pb, "rb").read():
            return False
    return True


def worker_timeout(args):
    """--timeout, or less when --budget leaves less (never under 30 s)."""
    if not getattr(args, "budget", None) or not getattr(args, "t_start", None):
        return args.timeout
    return int(max(30, min(args.timeout, args.budget - (time.time() - args.t_start))))


def run_worker(spec, entry, args, work, tag, mode=None, light=False):
    jobdir = tempfile.mkdtemp(prefix=f"{tag}_", dir=work)
    job = {"spec": spec, "backend": args.backend, "device": args.device, "mode": mode, "steady": args.steady,
           "dynamic": getattr(args, "dynamic", "auto"), "light": light, "profile": getattr(args, "profile", False)}
    env = dict(os.environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(jobdir, "inductor_cache")
    env["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
    env["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # no compile worker pool on a small CPU box
    if args.device == "cpu" and args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)  # eager ops and inductor's C++ kernels alike
    env["TRITON_CACHE_DIR"] = os.path.join(jobdir, "triton_cache")
    pypath = [ROOT]
    if spec["kind"] == "hf" and entry["pkgs"]:
        pypath.insert(0, entry["pkgs"])
        job["expect_transformers"] = os.path.join(entry["pkgs"], "transformers")
    env["PYTHONPATH"] = os.pathsep.join(pypath + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    json.dump(job, open(os.path.join(jobdir, "job.json"), "w"))
    out_json, out_pt = os.path.join(jobdir, "res.json"), os.path.join(jobdir, "out.pt")
    t0 = time.time()
    timeout = worker_timeout(args)
    try:
        with open(os.path.join(jobdir, "stdout.txt"), "w") as so, open(os.path.join(jobdir, "stderr.txt"), "w") as se:
            p = subprocess.run([sys.executable, "-m", "perf.worker", os.path.join(jobdir, "job.json"), out_json,
                                out_pt], cwd=ROOT, env=env, stdout=so, stderr=se, timeout=timeout)
        log = open(os.path.join(jobdir, "stderr.txt"), errors="replace").read()[-4000:]
        ok = p.returncode == 0 and os.path.exists(out_json)
    except subprocess.TimeoutExpired:
        ok, log = False, f"timeout after {timeout}s"
    res = json.load(open(out_json)) if ok else {"error": log.strip().splitlines()[-1] if log.strip() else "failed"}
    res["wall_s"] = time.time() - t0
    res["out_pt"] = out_pt if ok else None
    return res


def compare(a_pt, b_pt):
    """Eager and compiled outputs of variant b against the eager outputs of the unfixed variant."""
    import torch
    from perf.worker import same
    if not a_pt or not b_pt:
        return None
    a, b = torch.load(a_pt), torch.load(b_pt)
    res = {}
    for key in ("eager", "compiled"):
        for i, outs in b[key].items():
            res[f"{key}{i}"] = same(outs, a["eager"].get(i))
    return res


def machine():
    cpu = platform.processor()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cpus"


def main(argv=None):
    args = parse_args(argv)
    import torch
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.backend is None:
        args.backend = "eager" if args.quick else "inductor"
    if args.steady is None:
        args.steady = 9 if args.quick else 20
    args.steady = max(args.steady, 9)
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    args.rounds = max(args.rounds, 1)
    os.makedirs(args.out, exist_ok=True)
    charts_available()
    work = tempfile.mkdtemp(prefix="gm_perf_")
    variants = ["unfixed", "fixed"] + (["fixed_unsafe"] if args.unsafe else [])
    if args.modes:
        modes = [None if m == "default" else m for m in args.modes.split(",")]
    else:
        modes = [None] + (["reduce-overhead"] if args.device == "cuda" and args.backend == "inductor" else [])
    cases = discover(args)
    t_start = args.t_start = time.time()
    print(f"perf: {len(cases)} cases x {variants} on {args.device}/{args.backend}; work dir {work}", flush=True)
    info = prepare(cases, variants, work)
    fixer_missing = fixer.fixer_command() is None
    try:
        import transformers
        tf_version = transformers.__version__
    except ImportError:
        tf_version = None
    meta = {
        "torch": torch.__version__, "transformers": tf_version, "device": args.device, "backend": args.backend,
        "machine": machine(), "python": platform.python_version(), "quick": args.quick, "steady_calls": args.steady,
        "variants": variants, "cpu_threads": args.threads if args.device == "cpu" else None,
        "modes": [m or "default" for m in modes], "fixer_missing": fixer_missing,
        "fixer_status": {v: info[v]["fixer_status"] for v in variants},
        "fixer_output": {v: info[v]["fixer_output"][-3000:] for v in variants},
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rounds": args.rounds, "dynamic": args.dynamic, "commit": commit(), "budget_s": args.budget,
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
        "compile_threads": os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "1"),
    }
    diff_dir = os.path.join(args.out, "diffs")
    os.makedirs(diff_dir, exist_ok=True)
    rows, cases_out, case_s = [], [], []  # case_s: wall seconds of each finished case (the budget's estimate)
    for n, (name, kind, src) in enumerate(cases, 1):
        files, _ = case_files(name, kind, src, info["unfixed"])
        case = {"case": name, "kind": kind, "files": [short(f) for f in files], "variants": {}}
        findings = {}
        for f in files:
            for code, k in info["unfixed"]["findings"].get(f, {}).items():
                findings[code] = findings.get(code, 0) + k
        case["findings"] = findings
        t_case = time.time()
        line = [f"[{n}/{len(cases)}] {name:<22}"]
        rounds = {}  # (variant, mode) -> [result of each round]
        for mode in modes:
            for r in range(args.rounds):
                if r and args.budget and time.time() - t_start + (time.time() - t_case) / r > args.budget:
                    case["rounds_cut"] = f"{r} of {args.rounds} rounds (budget)"
                    print(f"    budget: stopping {name} after {r} rounds", flush=True)
                    break
                order = variants if r % 2 == 0 else variants[::-1]  # alternate who goes first
                for v in order:
                    _, spec = case_files(name, kind, src, info[v])
                    changed = 0
                    for f in files:
                        text, k = info[v]["diffs"].get(f, ("", 0))
                        changed += k
                        if text and r == 0 and mode is None:
                            open(os.path.join(diff_dir, f"{name}.{v}.diff"), "a").write(text)
                    prev = rounds.get(("fixed", mode), [])
                    if v == "fixed_unsafe" and same_source(info, "fixed", v, src, kind, name) and len(prev) > r:
                        res = dict(prev[r], reused_from="fixed")  # identical code: not rerun
                    else:
                        res = run_worker(spec, info[v], args, work, f"{name}_{v}_r{r}", mode, light=r > 0)
                    res["changed_lines"] = changed
                    res["round"] = r
                    if res.get("profile"):
                        os.makedirs(os.path.join(args.out, "profiles"), exist_ok=True)
                        tag = f"{name}.{v}" + (f".{mode}" if mode else "")
                        open(os.path.join(args.out, "profiles", f"{tag}.txt"), "w").write(res.pop("profile"))
                    rounds.setdefault((v, mode), []).append(res)
                    if r == 0:
                        line.append(report.progress(v, mode, res))
                    elif args.rounds > 1:
                        print(f"    round {r + 1}/{args.rounds} " + report.progress(v, mode, res), flush=True)
            for v in variants:
                res = report.combine_rounds(rounds.get((v, mode), []))
                if v != "unfixed" and "error" not in res:
                    res["vs_unfixed"] = compare(case["variants"].get(("unfixed", mode), {}).get("out_pt"),
                                                res.get("out_pt"))
                case["variants"][(v, mode)] = res
                rows += report.rows_for(name, kind, v, mode or "default", res, meta)
        print(" | ".join(line), flush=True)
        case["variants"] = {f"{v}@{m or 'default'}": r for (v, m), r in case["variants"].items()}
        cases_out.append(case)
        meta["total_wall_s"] = time.time() - t_start
        meta["complete"] = n == len(cases)
        save(args.out, meta, rows, cases_out)  # after every case: a killed run still leaves a report
        case_s.append(time.time() - t_case)
        if args.budget and n < len(cases) and time.time() - t_start + max(case_s) > args.budget:
            meta["skipped_for_budget"] = [c[0] for c in cases[n:]]
            print(f"perf: the next case would overrun the budget of {args.budget:.0f}s; not started: {', '.join(meta['skipped_for_budget'])}",
                  flush=True)
            break
    meta["total_wall_s"] = time.time() - t_start
    meta["complete"] = not meta.get("skipped_for_budget")
    save(args.out, meta, rows, cases_out)
    print(f"perf: wrote {args.out}/results.json, report.md, charts in {meta['total_wall_s']:.0f}s", flush=True)
    return 0


def save(out, meta, rows, cases_out):
    json.dump({"meta": meta, "rows": rows, "cases": cases_out}, open(os.path.join(out, "results.json"), "w"),
              indent=1, default=str)
    report.write(out, meta, cases_out)


def commit():
    """The commit of the checkout that ran (with '+dirty' when the tree has changes), or None.

    A copy without git (the lent GPU machine gets the working tree only) names it in GRAPHMEND_PERF_COMMIT."""
    if os.environ.get("GRAPHMEND_PERF_COMMIT"):
        return os.environ["GRAPHMEND_PERF_COMMIT"]
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=20).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=20).stdout.strip()
        return (sha + ("+dirty" if dirty else "")) or None
    except (OSError, subprocess.SubprocessError):
        return None


def short(path):
    return path.split("site-packages/", 1)[-1] if "site-packages/" in path else os.path.relpath(path, ROOT)


if __name__ == "__main__":
    sys.exit(main())
