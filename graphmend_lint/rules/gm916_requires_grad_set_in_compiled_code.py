from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context, tables
from ..analysis import explain as X
from ..fixes import Fix, build
from . import base

UNSAFE = ("unsafe fix: under torch.compile the tensor then does not require grad, so what depends on it "
          "alone does not either, and a reentrant `torch.utils.checkpoint` whose only grad-requiring input "
          "it was computes no parameter gradients")
TITLE = "set it only in eager: guard it with `not torch.compiler.is_compiling()`"
# Tensor factories: one made with `requires_grad=True` in compiled code breaks the graph.
FACTORIES = tables.NEW_OBJECT_FUNCS | tables.CONSTRUCTORS


class RequiresGradSetInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds assignments to a tensor's `requires_grad` (`hidden_states.requires_grad = True`), and calls of
    `.requires_grad_()`/`.requires_grad_(True)` on a tensor (a gradient penalty's
    `x.detach().requires_grad_(True)`) and tensors made with `requires_grad=True` (fairscale's
    checkpoint wrapper: `torch.tensor([], requires_grad=True)`), both reported without a fix, in code
    that runs under `torch.compile`. Transformers' audio encoders (wav2vec2, hubert, speecht5, sew,
    unispeech) and the T5 family do it so that gradient checkpointing sees an input that needs grad.

    ## Why it breaks the graph
    Dynamo does not trace it: GB0206 "setattr() on Tensor.requires_grad" (mutating `requires_grad`
    can turn a non-leaf into a leaf in the middle of the graph, which AOTAutograd cannot handle).
    Measured on torch 2.13, aot_eager, on a view of the input in front of a `Conv1d`: 1 break;
    `h.requires_grad_(True)` and `h.detach().requires_grad_(True)` break as well (GB8985).

    ## Example
    ```python
    class FeatureEncoder(nn.Module):
        def forward(self, input_values):
            hidden_states = input_values[:, None]
            if self._requires_grad and self.training:
                hidden_states.requires_grad = True
            return self.conv(hidden_states)
    ```

    ## Fix
    Set it only in eager: `if not torch.compiler.is_compiling(): hidden_states.requires_grad = True`.
    Under compile the graph then stays whole.

    ## Fix safety
    Unsafe (applied only with `--unsafe-fixes`). Values and the gradients of parameters that require
    grad do not change; but under compile the tensor no longer requires grad, so an output that
    required grad only through it stops requiring it, and reentrant `torch.utils.checkpoint`
    (`use_reentrant=True`) of a block whose only grad-requiring input it was computes no gradients
    for that block's parameters. It is exact when gradient checkpointing is off, or non-reentrant,
    and the layers after it have parameters that require grad (transformers' default).

    ## When no fix is offered
    A `.requires_grad_()` call (the tensor it returns is used), a tensor made with
    `requires_grad=True`. When the tensor is not a local name (`self.weights.requires_grad = False` on a parameter the
    call creates: the flag outlives the call) or not one that a statement before it makes anew
    (an argument of the call, or `h = x.to(...)`, which may return `x` itself), when the value is
    not `True`, when the assignment
    shares its line with other statements or is the body of a one-line compound statement, when it
    has several targets, and when it runs only under compile already.
    """

    CODE = "GM916"
    NAME = "requires-grad-set-in-compiled-code"
    FIX = "unsafe"
    MESSAGE = ("setting `{target}.requires_grad` in compiled code breaks the graph (GB0206); "
               "set it outside the compiled code, or only in eager")
    FACTORY_MESSAGE = ("a tensor made with `requires_grad=True` in compiled code breaks the graph (\"Attempted "
                       "to use tensor creation function with requires_grad=True\"; also under no_grad, measured "
                       "on torch 2.13); make it outside the compiled code")
    METHOD_MESSAGE = ("`.requires_grad_()` on a tensor made in compiled code breaks the graph where it reaches an "
                      "output (GB8985, measured on torch 2.13); make the tensor that needs grad outside the compiled code")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    h = x[:, None]
                    if not torch.compiler.is_compiling():
                        h.requires_grad = True
                    return h * 2

            def prepare(x):
                x.requires_grad = True
                return x
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
                    h = x[:, None]
                    if self.training:
                        h.requires_grad = True
                    return h * 2
            """
        ),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            attr = target.target
            if not (isinstance(attr, cst.Attribute) and attr.attr.value == "requires_grad"):
                continue
            name = X.dotted(attr.value) or "..."
            if name == "self" or X.value(self, node, attr.value) is None:
                continue
            message = self.MESSAGE.format(target=name)
            why = self._refusal(node)
            if why is not None:
                self.report(node, f"{message}; no fix: {why}", at=attr)
                continue
            line = self.parent(node)
            spelled, needs_import = self.spell("torch.compiler.is_compiling")
            fix = Fix(build.guard_statement(line, spelled), applicability=base.Safety.UNSAFE, title=TITLE,
                      needs_torch_import=needs_import, node=line)
            self.report(node, f"{message}; {UNSAFE}", fix=fix, at=attr)

    def visit_Call(self, node: cst.Call) -> None:
        """`h.detach().requires_grad_(True)` / `h.requires_grad_()` on a tensor: the same break (GB8985)
        where the tensor reaches an output, no fix (`requires_grad_(False)` does not break; nor, measured,
        a module's or a parameter's `requires_grad_()`, nor a tensor that only the graph consumes: not
        reported where the receiver is not known to be a tensor; the last is not told apart)."""
        if any(a.keyword is not None and a.keyword.value == "requires_grad" and isinstance(a.value, cst.Name)
               and a.value.value == "True" for a in node.args) and X.qualified(self, node.func) in FACTORIES \
                and self.compiled_function(node) is not None:
            self.report(node, self.FACTORY_MESSAGE)  # fairscale's `torch.tensor([], requires_grad=True)`
            return
        attr = X.method_call(node, "requires_grad_")
        if attr is None or len(node.args) > 1 or node.args and (
                node.args[0].star or not (isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == "True")):
            return
        name = X.dotted(attr.value)
        v = X.value(self, node, attr.value)
        if name is not None and (name == "self" or name.startswith("self.")) or v is None or not v.is_tensor:
            return  # a module's `requires_grad_()`, a parameter's: no break (measured)
        self.report(node, self.METHOD_MESSAGE, at=attr.attr)

    def _refusal(self, node: cst.Assign) -> str | None:
        if len(node.targets) != 1:
            return "it has several targets"
        receiver = node.targets[0].target.value  # type: ignore[attr-defined]
        if not isinstance(receiver, cst.Name):
            return ("it sets a flag of a tensor that outlives the call (a module attribute, a parameter): "
                    "skipping it under compile would change later calls too")
        if not (isinstance(node.value, cst.Name) and node.value.value == "True"):
            return "only `= True` on a local tensor is offered a fix"
        if build.sole_line(node, self.parent) is None:
            up = self.parent(node)
            return ("it is the body of a one-line compound statement" if isinstance(up, cst.SimpleStatementSuite)
                    else "it shares its line with other statements")
        if not self._made_here(receiver.value, node):
            return (f"`{receiver.value}` is not made by a statement before it (an argument, or a name that may "
                    "share its object), so the flag may outlive the call")
        only = context.runs_only_compiled(node, self.parent, self.facts.bindings)
        if only is not None:
            return f"it runs only under torch.compile (the test `{only}` chooses this arm)"
        return None

    def _made_here(self, name: str, node: cst.CSTNode) -> bool:
        """The statement that last binds `name` before `node` makes a new tensor object
        (`x[:, None]`, `a + b`, `x.view(...)`, `torch.zeros(...)`), whose flag dies with the call."""
        value = context.reaching_value(node, name, self.parent)
        if isinstance(value, (cst.Subscript, cst.BinaryOperation, cst.UnaryOperation)):
            return True
        if not isinstance(value, cst.Call):
            return False
        if isinstance(value.func, cst.Attribute) and value.func.attr.value in tables.NEW_OBJECT_METHODS:
            return True
        return X.qualified(self, value.func) in tables.NEW_OBJECT_FUNCS
