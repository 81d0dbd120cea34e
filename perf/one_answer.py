"""One answer per file (issue 22): on a seeded sample of a tree's files, the findings of
`graphmend-lint check FILES`, of each file checked alone, and of `fixit --rules graphmend_lint lint
FILES` against those of a whole-tree run (a JSON output of `check --output-format json TREE`)
restricted to the same files.

    python perf/one_answer.py --tree /work/baseline/trees/tf5 --whole /work/baseline/base/tf5.json \
        [--sample 100] [--seed 0] [--singles 100] [--no-fixit] [--out FILE]

A finding is (path, line, column, code, message); for the CLI runs also the fix (applicability
and edits). Fixit reports 0-based columns and rule names: mapped to ours. Runs from the tree's
parent folder with an empty cache folder of its own (GRAPHMEND_CACHE_DIR), so the first command
indexes the whole project cold. Exits 1 when any entry point disagrees.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXIT_ROW = re.compile(r"(.+?)@(\d+):(\d+) (\w+): (.*?)( \(has autofix\))?$")


def _rel(path: str, base: Path) -> str:
    p = Path(path)
    return (p if not p.is_absolute() else p.relative_to(base)).as_posix()


def cli_rows(data: list, base: Path, fixes: bool = True) -> set[tuple]:
    out = set()
    for d in data:
        fix = json.dumps(d.get("fix"), sort_keys=True) if fixes else None
        out.add((_rel(d["filename"], base), d["location"]["row"], d["location"]["column"], d["code"], d["message"], fix))
    return out


def run_cli(args: list[str], cwd: Path, env: dict) -> tuple[list, float]:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "--output-format", "json",
                           "--exit-zero", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout or "[]"), time.perf_counter() - t


def run_fixit(files: list[str], cwd: Path, env: dict) -> tuple[set[tuple], float]:
    sys.path.insert(0, str(ROOT))
    from graphmend_lint.rules import ALL_RULES

    code = {r.__name__.removesuffix("Rule"): r.CODE for r in ALL_RULES}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fixit", "--rules", "graphmend_lint", "lint", *files],
                          cwd=cwd, env=env, capture_output=True, text=True)
    rows = set()
    for line in proc.stdout.splitlines():
        m = FIXIT_ROW.match(line)
        if m:
            rows.add((_rel(m[1], cwd), int(m[2]), int(m[3]) + 1, code[m[4]], m[5]))
    return rows, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", type=Path, required=True, help="folder holding the package folder")
    ap.add_argument("--package", default="transformers")
    ap.add_argument("--whole", type=Path, required=True, help="JSON output of the whole-tree run")
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--singles", type=int, default=100, help="how many of the sample to check alone too")
    ap.add_argument("--files", nargs="*", default=None, help="these files instead of a sample")
    ap.add_argument("--no-fixit", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose graphmend_lint runs (e.g. the base)")
    a = ap.parse_args()
    tree = a.tree.resolve()
    every = sorted(p.relative_to(tree).as_posix() for p in (tree / a.package).rglob("*.py")
                   if "__pycache__" not in p.parts)
    files = a.files or sorted(random.Random(a.seed).sample(every, min(a.sample, len(every))))
    wanted = set(files)
    whole_all = cli_rows(json.loads(a.whole.read_text()), tree)
    whole = {r for r in whole_all if r[0] in wanted}
    env = {**os.environ, "PYTHONPATH": str(a.code.resolve()), "GRAPHMEND_CACHE_DIR": tempfile.mkdtemp(prefix="one-answer-")}
    report: dict = {"tree": str(tree), "code": str(a.code.resolve()), "files": len(files), "seed": a.seed,
                    "whole_findings": len(whole)}
    ok = True

    data, secs = run_cli(files, tree, env)
    subset = cli_rows(data, tree)
    report["cli_subset"] = {"findings": len(subset), "equal": subset == whole, "seconds_cold_cache": round(secs, 2),
                            "missing": sorted(whole - subset)[:20], "extra": sorted(subset - whole)[:20]}
    ok &= subset == whole

    singles = set()
    alone = files[:a.singles]
    t = time.perf_counter()
    for f in alone:
        data, _ = run_cli([f], tree, env)
        singles |= cli_rows(data, tree)
    expect = {r for r in whole if r[0] in set(alone)}
    report["cli_each_alone"] = {"files": len(alone), "findings": len(singles), "equal": singles == expect,
                                "seconds_per_file_warm": round((time.perf_counter() - t) / max(len(alone), 1), 2),
                                "missing": sorted(expect - singles)[:20], "extra": sorted(singles - expect)[:20]}
    ok &= singles == expect

    if not a.no_fixit:
        theirs, secs = run_fixit(files, tree, env)
        mine = {r[:5] for r in whole}
        report["fixit_lint"] = {"findings": len(theirs), "equal": theirs == mine, "seconds": round(secs, 2),
                                "missing": sorted(mine - theirs)[:20], "extra": sorted(theirs - mine)[:20]}
        ok &= theirs == mine
    report["agree"] = bool(ok)
    text = json.dumps(report, indent=1, default=list)
    print(text)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
