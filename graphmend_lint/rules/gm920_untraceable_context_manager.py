from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from ..analysis import tables as T
from . import base

UNTRACEABLE = T.UNTRACEABLE_CONTEXTS


class UntraceableContextManagerRule(base.GraphMendRule):
    """
    ## What it does
    Finds `with` statements in code that runs under `torch.compile` whose context manager Dynamo
    cannot trace: `torch.random.fork_rng` (torchrl's seeded policies), the anomaly-detection
    managers, the saved-tensor hooks (`saved_tensors_hooks`, `save_on_cpu`: activation offloading),
    the deprecated `torch.backends.cuda.sdp_kernel` and `torch.utils.checkpoint.set_checkpoint_early_stop`.
    (`torch.backends.cudnn.flags` and `mkldnn.flags` are GM913's.)

    ## Why it breaks the graph
    Measured on torch 2.13: entering each of them breaks the graph (GB0208 "torch.* op returned
    non-Tensor", or Dynamo's "marked as skipped"), and the block runs outside the graph; inside a
    loop, or where the frame cannot be resumed, the whole function runs eagerly. `no_grad`,
    `enable_grad`, `set_grad_enabled`, `inference_mode`, `autocast`, `record_function`,
    `torch.nn.attention.sdpa_kernel`, `warnings.catch_warnings` and `contextlib.suppress` are traced
    (measured) and not reported.

    ## Example
    ```python
    class SeededPolicy(nn.Module):
        def forward(self, x):
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)
                return self.net(x) + torch.randn_like(x)
    ```

    ## Fix
    Enter the context manager around the call of the compiled model, or move the block into a
    function that is not compiled (`@torch.compiler.disable`).

    ## Fix safety
    No automatic fix: moving a context manager changes what it covers (the random state it restores,
    the tensors its hooks see).

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM920"
    NAME = "untraceable-context-manager"
    FIX = "none"
    MESSAGE = ("`with {name}(...)` is not traceable and breaks the graph ({why}); enter it around the "
               "compiled call instead")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    with torch.no_grad(), torch.autocast("cpu"):
                        return x * 2

            def run(m, x):
                with torch.random.fork_rng(devices=[]):
                    return m(x)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    with torch.random.fork_rng(devices=[]):
                        y = x + torch.randn_like(x)
                    return y * 2
            """
        ),
        Invalid(
            """
            from torch import nn
            from torch.autograd.graph import save_on_cpu

            class M(nn.Module):
                def forward(self, x):
                    with save_on_cpu(pin_memory=False):
                        return x.sin()
            """
        ),
    ]

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if not isinstance(call, cst.Call):
                continue
            q = X.qualified(self, call.func)
            if q in UNTRACEABLE and self.compiled_function(node) is not None:
                self.report(node, self.MESSAGE.format(name=X.dotted(call.func), why=UNTRACEABLE[q]), at=call)
                return
