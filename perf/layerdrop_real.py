"""GM104's unsafe torch.cond LayerDrop fix on a real model: transformers 5.x Wav2Vec2 (issue 23).

transformers 5.x writes LayerDrop as `skip = False; if self.training and p > 0.0: draw; skip =
draw < p` then `if not skip or synced_gpus: h = layer(h, ...)`. This script fixes a copy of
`models/wav2vec2/modeling_wav2vec2.py` with `check --fix --unsafe-fixes --select GM104`, then runs a
tiny random-weight Wav2Vec2Model in train mode (LayerDrop 0.5, dropout on) in three child processes
(original eager, original compiled, fixed compiled; backend aot_eager), each seed the same, and
compares: outputs and the random numbers drawn after the forward (bitwise), graph breaks (Dynamo's
graph_breaks log), parameter gradients (the fix's message says what changes: a skipped layer's
parameters get zeros instead of None, and a layer with dropout gets gradients from a re-run).

    pip install --no-deps --target /tmp/tp/t524dep transformers==5.24.0 huggingface-hub==1.32.0 \
        tokenizers typer click httpx httpcore h11 anyio safetensors
    python perf/layerdrop_real.py --tp /tmp/tp/t524dep --out perf/results/layerdrop_real
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FILE = "transformers/models/wav2vec2/modeling_wav2vec2.py"
SEEDS = 4


def child(root: str, backend: str, out: str) -> None:
    import torch

    from graphmend_lint.verify.recorder import Recorder

    sys.path.insert(0, root)
    import transformers
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    assert transformers.__file__.startswith(root), transformers.__file__
    got = {"version": transformers.__version__}
    for stable in (False, True):
        config = Wav2Vec2Config(hidden_size=32, num_hidden_layers=6, num_attention_heads=2, intermediate_size=37,
                                conv_dim=(8, 8), conv_stride=(4, 4), conv_kernel=(8, 8), num_conv_pos_embeddings=8,
                                num_conv_pos_embedding_groups=2, layerdrop=0.5, mask_time_prob=0.0,
                                do_stable_layer_norm=stable, feat_extract_norm="layer" if stable else "group")
        torch.manual_seed(0)
        model = Wav2Vec2Model(config).train()
        x = torch.randn(2, 400)
        run = model if backend == "eager" else torch.compile(model, backend=backend)
        rows = []
        for seed in range(SEEDS):
            torch._dynamo.reset()
            torch.manual_seed(seed)
            with Recorder() as rec:
                y = run(x).last_hidden_state
            after = torch.rand(3)
            grads = torch.autograd.grad(y.sum(), list(model.parameters()), allow_unused=True)
            rows.append({"y": y.detach().tolist(), "after": after.tolist(), "breaks": len(rec.breaks),
                         "grads": [None if g is None else g.tolist() for g in grads]})
        got["stable" if stable else "default"] = rows
    Path(out).write_text(json.dumps(got))


def _flat(v):
    if isinstance(v, list):
        for x in v:
            yield from _flat(x)
    else:
        yield v


def _max_diff(a, b) -> float:
    return max((abs(x - y) for x, y in zip(_flat(a), _flat(b))), default=0.0)


def compare(orig: dict, origc: dict, fixc: dict) -> list[dict]:
    rows = []
    for variant in ("default", "stable"):
        for seed in range(SEEDS):
            a, b, c = orig[variant][seed], origc[variant][seed], fixc[variant][seed]
            pairs = list(zip(a["grads"], c["grads"]))
            rows.append({
                "variant": variant, "seed": seed,
                "breaks_original_compiled": b["breaks"], "breaks_fixed_compiled": c["breaks"],
                "outputs_fixed_compiled_equal_eager": a["y"] == c["y"],
                "draws_after_equal": a["after"] == c["after"],
                "outputs_original_compiled_equal_eager": a["y"] == b["y"],
                "grads_none_to_zero": sum(x is None and y is not None and not any(_flat(y)) for x, y in pairs),
                "grads_other_differing": sum(x is not None and (y is None or _max_diff(x, y) > 1e-5) for x, y in pairs),
                "grads_original_compiled_differing": sum(
                    x is not None and (y is None or _max_diff(x, y) > 1e-5) for x, y in zip(a["grads"], b["grads"])),
                "grads": len(pairs),
            })
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tp", required=True, help="folder holding transformers 5.x and its dependencies")
    ap.add_argument("--out", default="perf/results/layerdrop_real")
    ap.add_argument("--child", nargs=3, metavar=("ROOT", "BACKEND", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return 0
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        fixed = Path(tmp) / "fixed"
        shutil.copytree(Path(a.tp) / "transformers", fixed / "transformers")
        lint = subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "--no-cache", "--fix", "--unsafe-fixes",
                               "--select", "GM104", str(fixed / FILE)], capture_output=True, text=True, cwd=repo)
        diff = subprocess.run(["diff", "-u", str(Path(a.tp) / FILE), str(fixed / FILE)], capture_output=True, text=True).stdout
        runs = {}
        for name, root, backend in (("orig", a.tp, "eager"), ("origc", a.tp, "aot_eager"), ("fixc", str(fixed), "aot_eager")):
            out = Path(tmp) / f"{name}.json"
            env_path = ":".join(dict.fromkeys([str(repo), root, a.tp]))
            subprocess.run([sys.executable, __file__, "--tp", a.tp, "--child", root, backend, str(out)], check=True,
                           env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}, cwd=tmp)
            runs[name] = json.loads(out.read_text())
    rows = compare(runs["orig"], runs["origc"], runs["fixc"])
    dest = Path(a.out)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "results.json").write_text(json.dumps({"transformers": runs["orig"]["version"], "lint": lint.stdout.strip(),
                                                   "rows": rows}, indent=1) + "\n")
    (dest / "fix.diff").write_text(diff.replace(str(fixed), "fixed").replace(a.tp, "original"))
    for r in rows:
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
