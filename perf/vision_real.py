"""The safe fixes on torchvision and timm, run: outputs, random streams, breaks, TorchScript.

Fixes a copy of an installed torchvision and timm with `check --fix` (safe fixes only), then runs,
each in its own child process (original and fixed package first on sys.path), the torchvision
transforms the fixes touched (the `p <= 0.0` guard of GM101 on `if torch.rand(1) < self.p:`,
GM301's `torch._assert_async` in `normalize`) and a few timm models (eval under no_grad, train
with backward), eager and compiled (backend aot_eager), and compares bitwise against the original
eager run: outputs, the random numbers drawn after the call, and (timm train) the gradients.
Breaks are Dynamo's graph_breaks log. The fixed transforms are also scripted (torch.jit.script).

    pip download --no-deps timm==1.0.31 torchvision==0.29.1
    pip install --no-deps --target /tmp/tv/site timm-*.whl torchvision-*.whl
    python perf/vision_real.py --site /tmp/tv/site --out perf/results/vision_real

torchvision 0.29.1 is built for torch 2.14; on torch 2.13 its C++ ops do not load, and
`torchvision/_meta_registrations.py` (meta kernels for those ops) must be emptied for
`import torchvision` to work. Nothing measured here uses the C++ ops.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SEEDS = 3
TRANSFORMS = [("RandomHorizontalFlip", "p"), ("RandomVerticalFlip", "p"), ("RandomGrayscale", "p"),
              ("RandomErasing", "p"), ("RandomPerspective", "p")]
V2 = ["RandomHorizontalFlip", "RandomVerticalFlip", "RandomGrayscale"]  # `if torch.rand(1) >= self.p: return`
TIMM = ["resnet18", "vit_tiny_patch16_224", "convnext_atto", "efficientnet_b0"]


def _transforms(T, v2):
    out = []
    for name, arg in TRANSFORMS:
        for p in (0.0, 0.5):
            out.append((f"{name}(p={p})", lambda name=name, arg=arg, p=p: getattr(T, name)(**{arg: p})))
    for name in V2:
        for p in (0.0, 0.5):
            out.append((f"v2.{name}(p={p})", lambda name=name, p=p: getattr(v2, name)(p=p)))
    out.append(("Normalize", lambda: T.Normalize([0.5, 0.4, 0.3], [0.2, 0.25, 0.3])))
    return out


def child(root: str, backend: str, out: str) -> None:
    sys.path.insert(0, root)
    import timm
    import torch
    import torchvision
    import torchvision.transforms as T
    from torchvision.transforms import v2

    from graphmend_lint.verify.recorder import Recorder

    assert torchvision.__file__.startswith(root) and timm.__file__.startswith(root)
    got: dict = {"torchvision": torchvision.__version__, "timm": timm.__version__, "cases": {}}
    for name, make in _transforms(T, v2):
        rows = []
        for seed in range(SEEDS):
            torch._dynamo.reset()
            t = make()
            run = t if backend == "eager" else torch.compile(t, backend=backend)
            x = torch.rand(3, 16, 16, generator=torch.Generator().manual_seed(100 + seed))
            torch.manual_seed(seed)
            with Recorder() as rec:
                y = run(x)
            rows.append({"y": y.tolist(), "after": torch.rand(3).tolist(), "breaks": len(rec.breaks)})
        scripted = None
        if backend == "eager" and not name.startswith("v2."):  # jit.script of a v2 transform scripts its v1 class
            try:
                s = torch.jit.script(make())
                torch.manual_seed(0)
                a = s(x)
                torch.manual_seed(0)
                scripted = bool(torch.equal(a, make()(x)))
            except Exception as e:  # recorded, not raised: the report says which failed
                scripted = f"{type(e).__name__}: {e}".splitlines()[0][:200]
        got["cases"][name] = {"rows": rows, "scripted": scripted}
    for name in TIMM:
        for mode in ("eval", "train"):
            torch._dynamo.reset()
            torch.manual_seed(0)
            kw = {"img_size": 32} if name.startswith("vit") else {}
            model = timm.create_model(name, pretrained=False, num_classes=10, **kw)
            model.train(mode == "train")
            x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
            run = model if backend == "eager" else torch.compile(model, backend=backend)
            torch.manual_seed(0)
            with Recorder() as rec, torch.set_grad_enabled(mode == "train"):
                y = run(x)
            row = {"y": y.detach().tolist(), "after": torch.rand(3).tolist(), "breaks": len(rec.breaks)}
            if mode == "train":
                grads = torch.autograd.grad(y.sum(), list(model.parameters()), allow_unused=True)
                row["grads"] = [None if g is None else g.tolist() for g in grads]
            got["cases"][f"timm {name} {mode}"] = {"rows": [row], "scripted": None}
    Path(out).write_text(json.dumps(got))


def _run(root: Path, backend: str, tmp: Path) -> dict:
    out = tmp / f"{root.name}-{backend}.json"
    subprocess.run([sys.executable, __file__, "--child", str(root), backend, str(out)], check=True,
                   cwd=Path(__file__).resolve().parents[1])
    return json.loads(out.read_text())


def _equal(a: list, b: list) -> bool:
    """Outputs, later draws and gradients bitwise equal (json writes floats with repr: round-trips)."""
    def values(rows):
        return json.dumps([{k: v for k, v in r.items() if k != "breaks"} for r in rows])
    return values(a) == values(b)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--site", help="a folder with torchvision and timm installed (pip --target)")
    ap.add_argument("--out")
    ap.add_argument("--child", nargs=3)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return 0
    if not a.site or not a.out:
        ap.error("--site and --out are required")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        orig, fixed = tmp / "orig", tmp / "fixed"
        for dst in (orig, fixed):
            dst.mkdir()
            for pkg in ("torchvision", "timm"):
                shutil.copytree(Path(a.site) / pkg, dst / pkg)
        fix = subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "--fix", "--no-cache", "--exit-zero",
                              "--statistics", "torchvision", "timm"], cwd=fixed, capture_output=True, text=True)
        diff = subprocess.run(["diff", "-ru", "orig", "fixed"], cwd=tmp, capture_output=True, text=True).stdout
        diff = "".join(ln.split("\t")[0] + "\n" if ln.startswith(("--- ", "+++ ")) else ln
                       for ln in diff.splitlines(keepends=True))  # no file times
        (out / "fixes.diff").write_text(diff)
        runs = {(v, b): _run(root, b, tmp) for v, root in (("orig", orig), ("fixed", fixed))
                for b in ("eager", "aot_eager")}
    base = runs[("orig", "eager")]
    lines = [f"torchvision {base['torchvision']}, timm {base['timm']}; `check --fix` (safe fixes):",
             "", "```", fix.stdout.strip(), "```", "",
             "| case | breaks orig -> fixed (compiled) | eager fixed = orig | compiled fixed = orig eager "
             "| compiled orig = orig eager | TorchScript (fixed) |", "|---|---|---|---|---|---|"]
    summary = {}
    for name, want in base["cases"].items():
        def same(v, b, name=name, want=want):
            return _equal(runs[(v, b)]["cases"][name]["rows"], want["rows"])
        b0 = sum(r["breaks"] for r in runs[("orig", "aot_eager")]["cases"][name]["rows"])
        b1 = sum(r["breaks"] for r in runs[("fixed", "aot_eager")]["cases"][name]["rows"])
        row = {"breaks": [b0, b1], "eager_equal": same("fixed", "eager"), "compiled_equal": same("fixed", "aot_eager"),
               "baseline_equal": same("orig", "aot_eager"), "scripted": runs[("fixed", "eager")]["cases"][name]["scripted"]}
        summary[name] = row
        lines.append(f"| {name} | {b0} -> {b1} | {row['eager_equal']} | {row['compiled_equal']} | "
                     f"{row['baseline_equal']} | {row['scripted'] if row['scripted'] is not None else '-'} |")
    (out / "results.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
