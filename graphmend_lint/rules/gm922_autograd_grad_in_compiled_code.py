from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from ..analysis import tables as T
from . import base

GRAD = T.GRAD_FUNCS


class AutogradGradInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds `torch.autograd.grad(...)` in code that runs under `torch.compile`: gradient penalties
    (WGAN-GP, StyleGAN's R1 and path-length penalties) written as a module's `forward`.

    ## Why it breaks the graph
    Dynamo does not trace it by default: GB9186 "using `torch.autograd.grad` with
    `torch._dynamo.config.trace_autograd_ops=False`". Measured on torch 2.13 (aot_eager): 1 break
    at the call; with `torch._dynamo.config.trace_autograd_ops = True` the penalty of an input that
    requires grad, differentiated through what the same graph computes from it, traces with 0
    breaks and the same value (an output computed outside the compiled call makes tracing fail).

    ## Example
    ```python
    class GradientPenalty(nn.Module):
        def forward(self, x, d):
            gradients = torch.autograd.grad(outputs=d, inputs=x, grad_outputs=torch.ones_like(d),
                                            create_graph=True)[0]
            return ((gradients.norm(2, dim=1) - 1) ** 2).mean()
    ```

    ## Fix
    Compute the penalty outside the compiled region (in the training step), set
    `torch._dynamo.config.trace_autograd_ops = True` where the graph computes what it
    differentiates, or use `torch.func.grad`/`torch.func.vjp`.

    ## Fix safety
    No automatic fix: where the gradient is taken decides what it differentiates.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM922"
    NAME = "autograd-grad-in-compiled-code"
    FIX = "none"
    MESSAGE = ("`torch.autograd.grad` in compiled code breaks the graph (GB9186); set "
               "`torch._dynamo.config.trace_autograd_ops = True`, or take the gradient outside the compiled code")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    return (x ** 2).sum()

            def penalty(m, x):
                x.requires_grad_(True)
                return torch.autograd.grad(m(x), x, create_graph=True)[0]
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class Penalty(nn.Module):
                def forward(self, x, d):
                    g = torch.autograd.grad(d, x, torch.ones_like(d), create_graph=True)[0]
                    return g.norm(2, dim=1).mean()
            """
        ),
        Invalid(
            """
            from torch import autograd, nn

            class Penalty(nn.Module):
                def forward(self, x, d):
                    g, = autograd.grad(outputs=d, inputs=x, create_graph=True)
                    return g.pow(2).sum()
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if last == "grad" and X.qualified(self, func) in GRAD and self.compiled_function(node) is not None:
            self.report(node, self.MESSAGE)
