"""A module call in a branch (`h = self.proj(h)`): what torch.where needs to run it where its branch
is not taken, as trace-time checks (issue 23).

A module call may raise, may have side effects (hooks; BatchNorm updates its running statistics in
train mode; Dropout draws random numbers in train mode) and its parameters get zero gradients from
torch.where where `if` gave none. Only layers whose `__init__` store is a known torch class are
accepted, and the compile-only form checks while tracing (Python constants there, no graph break):

  - the runtime type is exactly that class (`type(self.proj) is torch.nn.Linear`: a subclass or a
    swapped-in module may do anything);
  - no forward or backward hooks (nor pre-hooks) on the module, and no global ones
    (`torch.nn.modules.module._global_forward_hooks`, ...): a hook would run for the untaken branch
    too (a backward hook where gradients are on: a module also called elsewhere needs no gradients off);
  - the input is valid for the layer, so the call cannot raise (`h.shape[-1] == self.proj.in_features`
    and the weight's dtype and device for Linear, the normalized shape for LayerNorm, a floating
    input for activations);
  - Dropout only in eval mode (`not self.drop.training`: then it is the identity and draws nothing);
  - gradients off (`not torch.is_grad_enabled()`) where the module is called in one branch only
    (compiled.one_sided reads `self.proj` there): under autograd torch.where gives its parameters
    zero gradients where the `if` gave none.
BatchNorm, Embedding, convolutions and user modules are not accepted (statistics updates in train
mode, index errors, shape rules not checked here; anything for a user module).

Measured (torch 2.13 CPU, aot_eager and inductor): `if h.sum() > 0: h = self.proj(h)` and a
LayerNorm arm under no_grad, 2 breaks -> 0, outputs equal to the eager original on both branches;
with gradients on, the `if` runs (breaks as before); a forward hook on the module, or a global one,
makes the check fail and the `if` run, so the hook runs only when eager runs it.
"""
from __future__ import annotations

import libcst as cst

from ...analysis.bindings import dotted
from ..syntax import code

# class -> the input checks, {x} the input and {m} the module. No check may hold a nested `and` (the
# compile-only form splits its checks on " and ").
_WEIGHT = "({x}.dtype, {x}.device) == ({m}.weight.dtype, {m}.weight.device)"
LAYERS: dict[str, str] = {
    "Linear": "{x}.dim() >= 1 and {x}.shape[-1] == {m}.in_features and " + _WEIGHT,
    "LayerNorm": ("{x}.is_floating_point() and tuple({x}.shape[{x}.dim() - len({m}.normalized_shape):]) == "
                  "tuple({m}.normalized_shape) and ({m}.weight is None or " + _WEIGHT + ")"),
    "ReLU": "{x}.is_floating_point() and not {m}.inplace",
    "SiLU": "{x}.is_floating_point() and not {m}.inplace",
    "GELU": "{x}.is_floating_point()",
    "Tanh": "{x}.is_floating_point()",
    "Sigmoid": "{x}.is_floating_point()",
    "Identity": "",
    "Dropout": "not {m}.training",
}


def module_checks(prover, call: cst.Call) -> list[tuple[str, str]] | None:
    """(missing proof, trace-time check) pairs under which torch.where may run `self.x(arg)` where its
    branch is not taken; None when the call is no such module call (the caller refuses it)."""
    name = dotted(call.func)
    if not name or not name.startswith("self.") or name.count(".") != 1:
        return None
    ctor = prover.ff.module_attrs.get(name[5:]) or ""
    if not ctor.startswith("torch.nn.") or ctor.rsplit(".", 1)[-1] not in LAYERS:
        return None
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    x = dotted(call.args[0].value)
    if x is None or x.split(".")[0] in prover.local:
        return None
    inputs = LAYERS[ctor.rsplit(".", 1)[-1]]
    hooks = code(prover.torch("torch.nn.modules.module"))
    global_hooks = (f"not ({hooks}._global_forward_hooks or {hooks}._global_forward_pre_hooks or "
                    f"{hooks}._global_backward_hooks or {hooks}._global_backward_pre_hooks)")
    hooked = "a global module hook (`register_module_forward_hook`, ...) would run for a module call whose branch is not taken"
    out = [(hooked, global_hooks)]
    if not prover.is_tensor(call.args[0].value):  # the same proof as values' (one check for both)
        out.append((f"`{x}` is not provably a tensor", f"isinstance({x}, {code(prover.torch('torch.Tensor'))})"))
    own_hooks = (f"not ({name}._forward_hooks or {name}._forward_pre_hooks or {name}._backward_hooks or "
                 f"{name}._backward_pre_hooks)")
    checks = [f"type({name}) is {code(prover.torch(ctor))}", own_hooks]
    if inputs:
        checks.append(inputs.format(x=x, m=name))
    why = (f"`{name}({x})` is a module call: torch.where runs it where its branch is not taken (checked: its "
           "type, no hooks, an input it accepts)")
    out.append((why, " and ".join(checks)))
    return out
