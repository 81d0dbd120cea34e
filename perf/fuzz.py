"""Differential fuzzing benchmark: `python perf/fuzz.py --examples 10000`.

Runs the oracle of tests/test_fuzz.py (tests/fuzzcheck.py) on programs from tests/fuzzgen.py,
seeded 0..N-1 (reproducible: `fuzzgen.generate(fuzzgen.RandomChooser(seed))`). Every example is
appended to a JSON-lines log as it finishes, so an interrupted run resumes where it stopped.
Writes perf/results/differential_fuzz/summary.json and summary.md, and one reproducer per failing program
under perf/results/differential_fuzz/failures/. To keep a program cheap, line coverage and idempotence are
measured on every 10th program and graph breaks (torch._dynamo.explain) on every 500th. `--compiled`:
every program's SAFE fix also runs under torch.compile (aot_eager) against the original in eager
(outputs, gradients, module state, the random stream after the call; about 1 s more a program).
"""
from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "perf" / "results" / "differential_fuzz"


COMMIT = ""
COMPILED = False


def _init(compiled: bool = False) -> None:
    global COMMIT, COMPILED
    COMMIT = _commit()
    COMPILED = compiled
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, str(ROOT / "tests"))
    import torch

    torch.set_num_threads(1)


def run_one(task: tuple[int, bool]) -> dict:
    import fuzzcheck
    import fuzzgen

    seed, explain = task
    start = time.perf_counter()
    program = fuzzgen.generate(fuzzgen.RandomChooser(seed))
    try:
        out = fuzzcheck.check_program(program.source, program.harness, breaks=explain, coverage=seed % 10 == 0,
                                      idempotence=seed % 10 == 0, compiled=COMPILED)
        failures = [(k, d[:2000]) for k, d in out.failures]
    except Exception as e:  # the oracle itself failed: count it, keep going
        out, failures = None, [("oracle-error", f"{type(e).__name__}: {e}"[:2000])]
    row = {"seed": seed, "commit": COMMIT, "kind": program.kind, "seconds": round(time.perf_counter() - start, 3), "failures": failures}
    if out is not None:
        row.update(findings=out.findings, safe_fixes=out.safe_fixes, unsafe_fixes=out.unsafe_fixes,
                   unsafe_differs=out.unsafe_differs, covered=round(out.covered, 3) if seed % 10 == 0 else None,
                   breaks=[b if b != float("inf") else "skipped-frame" for b in out.breaks] if out.breaks else None)
    if failures:
        row["reproducer"] = "\n".join(
            [f"# fuzz seed {seed}: " + "; ".join(f"{k}: {d.splitlines()[0] if d else ''}" for k, d in failures),
             program.source + program.harness, "# --- safe fix ---",
             *("# " + line for line in (out.fixed_source if out else "").splitlines())])
    return row


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "unknown"


def summarize(rows: list[dict], wall: float, args) -> dict:
    fails = collections.Counter(k for r in rows for k, _ in r["failures"])
    codes = collections.Counter()
    for r in rows:
        codes.update(r.get("findings") or {})
    explained = [r["breaks"] for r in rows if r.get("breaks")]
    covered = [r["covered"] for r in rows if r.get("covered") is not None]
    return {
        "examples": len(rows),
        "seeds": f"{rows[0]['seed']}..{rows[-1]['seed']}" if rows else "none",
        "failed_examples": sum(1 for r in rows if r["failures"]),
        "crashes": fails["crash"],
        "unparsable_fixes": fails["unparsable"],
        "mismatches": fails["mismatch"],
        "failures_by_kind": dict(sorted(fails.items())),
        "wall_seconds_last_session": round(wall, 1),
        "program_seconds_total": round(sum(r["seconds"] for r in rows), 1),
        "cpu_seconds_per_example": round(sum(r["seconds"] for r in rows) / max(len(rows), 1), 3),
        "jobs": args.jobs,
        "programs_with_safe_fixes": sum(1 for r in rows if r.get("safe_fixes")),
        "programs_with_unsafe_fixes": sum(1 for r in rows if r.get("unsafe_fixes")),
        "safe_fixes": sum(r.get("safe_fixes") or 0 for r in rows),
        "unsafe_fixes": sum(r.get("unsafe_fixes") or 0 for r in rows),
        "unsafe_fix_changed_eager_behaviour": sum(1 for r in rows if r.get("unsafe_differs")),
        "findings_by_code": dict(sorted(codes.items())),
        "branch_line_coverage_mean": round(sum(covered) / len(covered), 3) if covered else None,
        "explained": len(explained),
        "explained_breaks_before_after": explained,
        "kinds": dict(collections.Counter(r["kind"] for r in rows)),
        "commit": _commit(),
        "commits_of_examples": dict(collections.Counter(r.get("commit", "?") for r in rows)),
        "failing_seeds": [r["seed"] for r in rows if r["failures"]][:200],
    }


def _break_tally(pairs: list) -> str:
    """'fewer in a, same in b, more in c; x -> y breaks' ('skipped-frame': the frame ran in eager)."""
    num = [(a, b) for a, b in pairs if isinstance(a, int) and isinstance(b, int)]
    fewer = sum(b < a for a, b in num)
    same = sum(b == a for a, b in num)
    more = sum(b > a for a, b in num)
    skipped = len(pairs) - len(num)
    return (f"fewer breaks in {fewer}, the same in {same}, more graphs in {more} (counted with their eager "
            f"fallbacks, see more_breaks in tests/fuzzcheck.py), a frame skipped before or after in {skipped}; "
            f"{sum(a for a, _ in num)} -> {sum(b for _, b in num)} breaks where both compiled")


def markdown(s: dict) -> str:
    lines = [
        "# Differential fuzzing (perf/fuzz.py)", "",
        f"Programs: {s['examples']} of {s.get('requested', s['examples'])} requested (seeds {s['seeds']}), "
        f"linter commits {s['commits_of_examples']}, "
        f"{s['jobs']} worker(s) on a shared 2-core machine: {s['program_seconds_total']} s of worker time, "
        f"{s['cpu_seconds_per_example']} s per program."
        + (" Every SAFE fix also compiled (aot_eager) against the original in eager." if s.get("compiled") else ""), "",
        "| check | count |", "|---|---|",
        f"| crashes | {s['crashes']} |", f"| unparsable fixes | {s['unparsable_fixes']} |",
        f"| semantic mismatches of SAFE fixes | {s['mismatches']} |",
    ]
    lines.append(f"| more graph breaks or eager fallbacks after SAFE fixes | {s['failures_by_kind'].get('more-breaks', 0)} |")
    if s.get("compiled"):
        lines.append(f"| SAFE fixes compiled, differing from the eager original | "
                     f"{s['failures_by_kind'].get('compiled-mismatch', 0)} |")
    for kind, n in s["failures_by_kind"].items():
        if kind not in ("crash", "unparsable", "mismatch", "more-breaks", "compiled-mismatch"):
            lines.append(f"| {kind} | {n} |")
    lines += [
        "", f"SAFE fixes applied: {s['safe_fixes']} in {s['programs_with_safe_fixes']} programs; "
        f"UNSAFE fixes: {s['unsafe_fixes']} in {s['programs_with_unsafe_fixes']} programs, of which "
        f"{s['unsafe_fix_changed_eager_behaviour']} changed eager behaviour (allowed: that is why they are unsafe).",
        f"Mean share of compiled-code lines run by the inputs (every 10th program): {s['branch_line_coverage_mean']}.",
        f"Graph breaks (before, after) on {s['explained']} compiled programs: {_break_tally(s['explained_breaks_before_after'])} "
        f"(pairs: {s['explained_breaks_before_after']}).",
        "", "Findings by code: " + ", ".join(f"{k} {v}" for k, v in s["findings_by_code"].items()), "",
        "Reproduce one program: `python -c \"import sys; sys.path.insert(0, 'tests'); import fuzzgen; "
        "p = fuzzgen.generate(fuzzgen.RandomChooser(SEED)); print(p.source + p.harness)\"`.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=10000)
    p.add_argument("--start", type=int, default=0, help="first seed: run seeds START..EXAMPLES-1")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--explain-every", type=int, default=250, help="count graph breaks on every k-th program")
    p.add_argument("--log", type=Path, default=Path("/tmp/graphmend-fuzz/examples.jsonl"))
    p.add_argument("--fresh", action="store_true", help="ignore the log of an earlier run")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--report-only", action="store_true", help="summarise the log, run nothing")
    p.add_argument("--compiled", action="store_true", help="also run every SAFE fix under torch.compile (aot_eager)")
    args = p.parse_args(argv)

    args.log.parent.mkdir(parents=True, exist_ok=True)
    done: dict[int, dict] = {}
    if args.log.exists() and not args.fresh:
        for line in args.log.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by an interrupted run: redo that seed
                continue
            done[row["seed"]] = row
    elif args.log.exists():
        args.log.unlink()
    todo = [] if args.report_only else [(s, s % args.explain_every == 0) for s in range(args.start, args.examples) if s not in done]
    start = time.perf_counter()
    with args.log.open("a") as log, multiprocessing.get_context("fork").Pool(args.jobs, _init, (args.compiled,)) as pool:
        for i, row in enumerate(pool.imap_unordered(run_one, todo, chunksize=4), 1):
            done[row["seed"]] = row
            log.write(json.dumps(row) + "\n")
            log.flush()
            if row["failures"]:
                print(f"seed {row['seed']}: {[k for k, _ in row['failures']]}", flush=True)
            if i % 100 == 0:
                print(f"{i}/{len(todo)} in {time.perf_counter() - start:.0f} s", flush=True)
    rows = [done[s] for s in sorted(done) if args.start <= s < args.examples]
    summary = summarize(rows, time.perf_counter() - start, args)
    summary["requested"] = args.examples - args.start
    summary["compiled"] = args.compiled
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (args.out / "summary.md").write_text(markdown(summary))
    failures = args.out / "failures"
    for row in rows:
        if row.get("reproducer"):
            failures.mkdir(exist_ok=True)
            (failures / f"seed_{row['seed']}.py").write_text(row["reproducer"] + "\n")
    print(markdown(summary))
    return 1 if summary["failed_examples"] else 0


if __name__ == "__main__":
    sys.exit(main())
