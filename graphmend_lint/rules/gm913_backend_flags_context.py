from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from ..analysis import tables as T
from . import base

FLAGS = T.BACKEND_FLAGS


class BackendFlagsContextRule(base.GraphMendRule):
    """
    ## What it does
    Finds `with torch.backends.cudnn.flags(...)` and `with torch.backends.mkldnn.flags(...)` in
    code that runs under `torch.compile` (Wav2Vec2's CTC loss uses the first).

    ## Why it breaks the graph
    Dynamo cannot trace these context managers: measured on torch 2.13 it logs GB0208
    "torch.* op returned non-Tensor" and GB0142 "Unsupported context manager" at the `with` line
    and runs the block outside the graph. `torch._dynamo.explain()` reports 0 breaks for it (it
    undercounts); the `graph_breaks` log shows the break. `torch.nn.attention.sdpa_kernel` and
    `torch.autograd.profiler.record_function` are traced (measured) and not reported.

    ## Example
    ```python
    class CTCHead(nn.Module):
        def forward(self, log_probs, targets, in_lens, tgt_lens):
            with torch.backends.cudnn.flags(enabled=False):
                return F.ctc_loss(log_probs, targets, in_lens, tgt_lens)
    ```

    ## Fix
    Set the backend flag outside the compiled region (around the call of the model), or move the
    block into a function that is not compiled.

    ## Fix safety
    No automatic fix: removing the context manager changes which kernels run (and their results on GPU).

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM913"
    NAME = "backend-flags-context"
    FIX = "none"
    MESSAGE = ("`with {name}(...)` is not traceable and breaks the graph (GB0142); set the flag around the "
               "compiled call instead")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    with torch.no_grad():
                        return x * 2

            def run(m, x):
                with torch.backends.cudnn.flags(enabled=False):
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
                    with torch.backends.cudnn.flags(enabled=False):
                        y = x + 1
                    return y * 2
            """
        ),
    ]

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and X.qualified(self, call.func) in FLAGS:
                if X.value(self, node, call) is not None:
                    self.report(node, self.MESSAGE.format(name=X.dotted(call.func)), at=call)
                return
