"""Graph breaks of the GM1xx rule fixtures before and after the fixes (Dynamo's graph_breaks log).

    python perf/gm1_fixtures.py [--out perf/results/breaks_gm1_fixtures]

Every tests/fixtures/GM10x/invalid_*.py with a `make()`: its inputs (chosen so that every branch is
taken) run compiled with aot_eager, once per variant: the original, the safe fix (the golden
`.fixed.py`; the original where no safe fix exists) and the unsafe fixes (`.unsafe.fixed.py`, else
the safe one). Each input runs after `torch._dynamo.reset()`; breaks are summed over inputs. Two
modes: gradients on (train mode, inputs requiring grad, as the fixtures make them) and `no_grad`
(inference). Outputs are compared with the original's eager outputs (torch.equal).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness import load  # noqa: E402

from graphmend_lint.verify import recorder  # noqa: E402


def _leaves(v) -> list:
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (tuple, list)):
        return [t for x in v for t in _leaves(x)]
    return []


def _run(path: Path, tag: str, grad: bool, backend: str | None):
    torch.manual_seed(0)
    fn, inputs = load(path, f"gm1f_{tag}_{path.parent.name}_{path.stem.replace('.', '_')}").make()
    if isinstance(fn, torch.nn.Module):
        fn.train()
    total, outs = 0, []
    for args in inputs:
        args = tuple(a.detach().clone().requires_grad_(a.requires_grad and grad) if isinstance(a, torch.Tensor) else a
                     for a in args)
        torch._dynamo.reset()
        torch.manual_seed(1)
        mode = contextlib.nullcontext() if grad else torch.no_grad()
        with recorder.Recorder(console_level=logging.CRITICAL) as rec:  # Dynamo's graph_breaks log
            try:
                with mode, warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = (torch.compile(fn, backend=backend) if backend else fn)(*args)
                outs.append([t.detach() for t in _leaves(out)])
            except Exception as e:  # an input meant to raise
                outs.append(type(e).__name__)
        total += len(rec.breaks)
    torch._dynamo.reset()
    return total, outs


def _same(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(a, b))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "perf" / "results" / "breaks_gm1_fixtures"))
    args = ap.parse_args()
    cases = sorted(p for d in sorted((ROOT / "tests" / "fixtures").glob("GM10*")) for p in d.glob("invalid_*.py")
                   if not p.name.endswith("fixed.py") and "def make(" in p.read_text(encoding="utf-8"))
    rows = []
    for case in cases:
        safe = case.with_name(case.stem + ".fixed.py")
        unsafe = case.with_name(case.stem + ".unsafe.fixed.py")
        variants = {"original": case, "safe": safe if safe.exists() else case,
                    "unsafe": unsafe if unsafe.exists() else (safe if safe.exists() else case)}
        row = {"case": f"{case.parent.name}/{case.name}", "has_safe": safe.exists(), "has_unsafe": unsafe.exists()}
        for grad in (True, False):
            mode = "grad" if grad else "no_grad"
            _, want = _run(case, "eager", grad, None)
            for name, path in variants.items():
                n, got = _run(path, name, grad, "aot_eager")
                row[f"{mode}_{name}"] = n
                row[f"{mode}_{name}_equal"] = all(_same(w, g) for w, g in zip(want, got))
        rows.append(row)
        print(row["case"], {k: v for k, v in row.items() if k.endswith(("original", "safe", "unsafe"))}, flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    lines = ["# GM1xx fixtures: graph breaks before and after the fixes", "",
             f"`python perf/gm1_fixtures.py` (torch {torch.__version__}, aot_eager, Dynamo's graph_breaks log, "
             "summed over each fixture's inputs; every branch is taken). A cell marked (differs): its compiled outputs differ from the eager "
             "original (torch.equal).", "",
             "| fixture | grad: original | safe | unsafe | no_grad: original | safe | unsafe |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [f"{r[f'{m}_{v}']}{'' if r[f'{m}_{v}_equal'] else ' (differs)'}"
                 for m in ("grad", "no_grad") for v in ("original", "safe", "unsafe")]
        lines.append(f"| {r['case']} | " + " | ".join(cells) + " |")
    tot = {f"{m}_{v}": sum(r[f"{m}_{v}"] for r in rows) for m in ("grad", "no_grad") for v in ("original", "safe", "unsafe")}
    lines.append("| **total** | " + " | ".join(str(tot[f"{m}_{v}"]) for m in ("grad", "no_grad")
                                             for v in ("original", "safe", "unsafe")) + " |")
    bad = [r["case"] for r in rows for m in ("grad", "no_grad") if not r[f"{m}_safe_equal"]]
    lines += ["", f"{len(rows)} fixtures; safe fixes whose compiled outputs differ from the eager original: "
              f"{len(bad)} {bad if bad else ''}".rstrip()]
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines[-4:]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
