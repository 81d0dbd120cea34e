"""Why graphmend-lint does not write `torch.compiler.nested_compile_region` for you (issue 25).

The region gives a fixed model of repeated blocks its cold start back (perf/cold_regions.py), but on
torch 2.13 what Dynamo cannot capture inside a region is a hard error, not a graph break. This
probe compiles (aot_eager, train mode, forward + backward) a stack of 4 blocks whose `forward` is a
region, with one thing in the block at a time, and compares outputs and gradients with eager:

    python perf/region_limits.py            # prints a markdown table
"""
import copy
import sys

import torch
from torch import nn

from graphmend_lint.verify.recorder import Recorder

# what the block holds -> the source of the extra step (run in Block.forward)
CONTENTS = {
    "nothing else": lambda blk, h: h,
    "Dropout(0.3), train": lambda blk, h: blk.drop(h),
    "BatchNorm1d, train": lambda blk, h: blk.bn(h),
    "print(...)": lambda blk, h: (print("block"), h)[1],
    "a graph break": lambda blk, h: (torch._dynamo.graph_break(), h)[1],
    "h.sum().item()": lambda blk, h: h * h.sum().item(),
}


def model(step):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.bn, self.drop = nn.Linear(16, 16), nn.BatchNorm1d(16), nn.Dropout(0.3)

        @torch.compiler.nested_compile_region
        def forward(self, x):
            return torch.relu(step(self, self.lin(x))) + x

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(4))

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    return Stack().train()


def run(m, x, fn):
    torch.manual_seed(1)
    y = fn(x)
    y.sum().backward()
    return y.detach(), [p.grad for p in m.parameters()], [b.clone() for b in m.buffers()]


def same(a, b):
    return all((u is None and v is None) or (u is not None and v is not None and torch.equal(u, v))
               for u, v in zip(a, b))


def probe(name):
    torch.manual_seed(0)
    eager = model(CONTENTS[name])
    compiled = copy.deepcopy(eager)
    x = torch.randn(8, 16)
    want = run(eager, x, eager)
    torch._dynamo.reset()
    try:
        with Recorder() as rec:
            got = run(compiled, x, torch.compile(compiled, backend="aot_eager"))
    except Exception as e:  # noqa: BLE001 - the point is which error
        lines = str(e).strip().splitlines()
        why = next((ln for ln in lines if ln.startswith("RuntimeError")), lines[0])  # the backend's own
        return f"**error**: {type(e).__name__}: {why[:120]}"
    equal = torch.equal(want[0], got[0]) and same(want[1], got[1]) and same(want[2], got[2])
    return f"{len(rec.sites())} breaks, {rec.graphs} graph(s), outputs/grads/buffers {'equal' if equal else 'DIFFER'}"


def main() -> int:
    print(f"torch {torch.__version__}, aot_eager, train mode, forward + backward\n")
    print("| the region's block holds | result |\n|---|---|")
    for name in CONTENTS:
        print(f"| {name} | {probe(name)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
