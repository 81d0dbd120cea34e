"""The suite's CUDA pass, for the day a GPU is lent: one command, a fixed time budget, results report.py reads.

    python perf/cuda_pass.py --out perf/results/breaks_latency_cuda_inductor     # on the GPU machine
    python perf/cuda_pass.py --dry --out /tmp/cuda-dry                           # the same plan on CPU, eager

The plan (PLAN below) is a list of perf/run.py invocations run one after another in this process's
children: inductor on CUDA in the default mode with rounds, then mode="reduce-overhead" (CUDA graphs)
on the cases where CUDA graphs apply, then the Phi-3 flip with dynamic=None vs mark_dynamic. Each step
gets a share of what is left of the overall budget (default 450 s: 8 minutes with the grace and the
machine's start, including the fixer's preparation); run.py starts no case and no round that would
overrun it (its estimates: the slowest case, the mean round so far), a worker's timeout is what the
budget leaves, and a step still running 30 s past its share is killed with its workers (process
group); the pass ends in time and leaves a report for every finished case.
Each step writes its own folder under --out (results.json, report.md, charts), and --out/README.md
lists the steps, their status and the command line.

--dry: device cpu, backend eager, 1 round, 9 steady calls, a short budget, no reduce-overhead (the
mode needs CUDA; the step runs in the default mode and says so): it checks the plan end to end without
a GPU (tests/test_perf_cuda_pass.py).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (step folder, run.py arguments, the cases). Sized for an H100/H200-class GPU in 8 minutes: tiny models
# compile in ~10-40 s each with inductor; 2 variants x rounds per case.
CORE = "hf_phi3_longrope,hf_bart,enc_layer_clamp,hf_whisper,hf_wav2vec2_ctc,mixed_block"  # most wanted first
CUDAGRAPH_CASES = "enc_layer_clamp,hf_bart,hf_phi3_longrope"  # no CPU ops mid-graph once fixed: CUDA graphs apply
PLAN = [
    # one round here: on a dedicated GPU, 30 CUDA-event-timed calls are steady enough, and every case gets its turn
    ("inductor_default", ["--modes", "default", "--rounds", "1", "--steady", "30", "--profile"], CORE),
    ("inductor_reduce_overhead", ["--modes", "reduce-overhead", "--rounds", "2", "--steady", "30"], CUDAGRAPH_CASES),
    ("phi3_flip_dynamic_mark", ["--modes", "default", "--rounds", "2", "--dynamic", "mark"],
     "hf_phi3_longrope,hf_phi3_longrope_grow"),
    ("phi3_flip_dynamic_auto", ["--modes", "default", "--rounds", "2", "--dynamic", "auto"], "hf_phi3_longrope_grow"),
]
# share of what is left that each step may use (of 450 s: about 200, 130, 70, 50; what a step leaves unused
# goes to the next ones)
SHARE = {"inductor_default": 0.45, "inductor_reduce_overhead": 0.52, "phi3_flip_dynamic_mark": 0.58,
         "phi3_flip_dynamic_auto": 1.0}
# a step given less than this is not started: on the H200 (2026-12-04) one Phi-3 case took 10 s to prepare and
# 33-45 s per variant, so a 59 s share ran past its hard stop and left nothing (perf/results/breaks_latency_cuda_inductor)
MIN_STEP_S = 100.0


def parse_args(argv=None, default_budget=450.0, doc=__doc__, default_timeout=240):
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=default_budget,
                    help=f"seconds for the whole pass (default {default_budget:.0f})")
    ap.add_argument("--dry", action="store_true", help="CPU, backend eager, tiny counts: test the plan")
    ap.add_argument("--cases", default=None, help="replace the case list of every step (comma-separated)")
    ap.add_argument("--steps", default=None, help="comma-separated step names to run (default: all)")
    ap.add_argument("--timeout", type=int, default=default_timeout,
                    help=f"seconds per worker process (default {default_timeout})")
    return ap.parse_args(argv)



def step_argv(name, extra, cases, args, budget, device="cuda"):
    argv = [sys.executable, os.path.join(HERE, "run.py"), "--out", os.path.join(args.out, name),
            "--budget", f"{budget:.0f}"] + (["--cases", args.cases or cases] if args.cases or cases else [])
    if args.dry:
        extra = list(extra)
        for flag, value in (("--rounds", "1"), ("--steady", "9"), ("--modes", "default")):
            if flag in extra:
                extra[extra.index(flag) + 1] = value
            else:
                extra += [flag, value]
        argv += ["--device", "cpu", "--backend", "eager"] + extra
    else:
        argv += ["--device", device, "--backend", "inductor"] + extra
    # a worker never outlives the step's budget
    argv += ["--timeout", str(max(30, min(args.timeout, int(budget))))]
    return argv


def main(argv=None, plan=None, share=None, device="cuda", title="CUDA pass", default_budget=450.0,
         doc=__doc__, default_timeout=240, min_step=MIN_STEP_S):
    """Run a plan of run.py steps within a budget (remeasure.py runs its CPU plan through this)."""
    plan, share = plan or PLAN, SHARE if share is None else share
    args = parse_args(argv, default_budget, doc, default_timeout)
    args.title = title
    os.makedirs(args.out, exist_ok=True)
    if not args.dry and device == "cuda":
        import torch
        if not torch.cuda.is_available():
            print("cuda_pass: no CUDA device (torch.cuda.is_available() is False); use --dry to test the plan",
                  file=sys.stderr)
            return 2
    t0 = time.time()
    steps = [s for s in plan if not args.steps or s[0] in args.steps.split(",")]
    done = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p]))
    if device == "cuda" and not args.dry:
        # a GPU machine has cores to spare: inductor's parallel compile, as its users get it (both variants
        # alike; run.py records the setting). Set TORCHINDUCTOR_COMPILE_THREADS=1 to measure it serially.
        env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(min(8, os.cpu_count() or 1)))
    for name, extra, cases in steps:
        left = args.budget - (time.time() - t0)
        if left < 30:
            done.append({"step": name, "status": "skipped: budget spent"})
            continue
        budget = left * share.get(name, 1.0) if len(steps) > 1 else left  # one step (--steps): all of it
        if budget < min_step and not args.dry:
            done.append({"step": name, "status": f"skipped: {budget:.0f} s is too little for one case"})
            continue
        argv = step_argv(name, extra, cases, args, budget, device)
        print(f"cuda_pass: {name} ({budget:.0f}s of {left:.0f}s left): {' '.join(argv[1:])}", flush=True)
        t = time.time()
        # the hard stop: run.py keeps to its budget (no case, round or worker starts past it, a worker's timeout
        # is what the budget leaves); 30 s of grace for saving, then the step and its workers are killed
        rc = run_step(argv, env, min(budget + 30, max(30.0, args.budget + 30 - (time.time() - t0))))
        res = os.path.join(args.out, name, "results.json")
        entry = {"step": name, "rc": rc, "seconds": round(time.time() - t, 1), "argv": argv[1:],
                 "status": "ok" if rc == 0 and os.path.exists(res) else f"failed (rc {rc})"}
        if os.path.exists(res):
            meta = json.load(open(res))["meta"]
            entry["complete"] = meta.get("complete")
            entry["skipped_for_budget"] = meta.get("skipped_for_budget")
        done.append(entry)
        write_readme(args, done, time.time() - t0)
    write_readme(args, done, time.time() - t0)
    print(f"{title}: {len(done)} steps in {time.time() - t0:.0f}s; see {args.out}/README.md", flush=True)
    return 0 if all(d["status"] == "ok" for d in done if not d["status"].startswith("skipped")) else 1


def run_step(argv, env, timeout):
    """Run one step in its own process group; on timeout kill the group (run.py and its workers)."""
    import signal
    p = subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return "timeout"


def write_readme(args, done, total):
    lines = [f"# {args.title}{' (dry: CPU, backend eager)' if args.dry else ''}", "",
             f"Made by `python {os.path.relpath(sys.argv[0], ROOT) if sys.argv[0].endswith('.py') else 'perf'} "
             f"{' '.join(sys.argv[1:])}` in {total:.0f} s "
             f"(budget {args.budget:.0f} s), {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}. Each step "
             "folder holds a perf/run.py report (`python -m perf.report DIR` rebuilds it).", "",
             "| step | status | seconds | complete | not run (budget) |", "|---|---|---|---|---|"]
    for d in done:
        lines.append(f"| [{d['step']}]({d['step']}/report.md) | {d['status']} | {d.get('seconds', '-')} | "
                     f"{d.get('complete', '-')} | {', '.join(d.get('skipped_for_budget') or []) or '-'} |")
    lines += ["", "Commands:", ""] + [f"- `{' '.join(d['argv'])}`" for d in done if d.get("argv")]
    json.dump(done, open(os.path.join(args.out, "steps.json"), "w"), indent=1)
    open(os.path.join(args.out, "README.md"), "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
