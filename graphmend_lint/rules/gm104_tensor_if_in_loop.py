from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context
from ..fixes import where
from . import base


class TensorIfInLoopRule(base.GraphMendRule):
    """
    ## What it does
    Finds an `if` statement or `a if c else b` whose test depends on tensor data inside a Python
    `for`/`while` loop (typically a per-sample loop `for i in range(batch): if h[i].sum() > 0:`), in
    code that runs under `torch.compile`.

    ## Why it breaks the graph
    Dynamo cannot resume a graph in the middle of a loop body: instead of one break, it skips the
    whole function. The function then runs entirely in eager mode (no graph at all for it), every
    call.

    ## Example
    ```python
    for i in range(h.shape[0]):
        if h[i].sum() > 0:
            h[i] = h[i] * 2
    ```

    ## Fix
    LayerDrop, the most common form in real models (transformers: BART, Whisper, OPT, M2M-100 and
    some 40 other families), gets a fix:
    ```python
    for encoder_layer in self.layers:
        to_drop = False
        if self.training:
            dropout_probability = torch.rand([])
            if not (torch.compiler.is_compiling() and self.layerdrop <= 0.0 and torch._assert_async(dropout_probability < 1.0, "keeps the draw of torch.rand") is None) and dropout_probability < self.layerdrop:
                to_drop = True
    ```
    A draw of `torch.rand` lies in [0, 1): with `layerdrop <= 0.0`, the default of every config, the
    test is False, and while Dynamo traces `self.layerdrop` is a Python constant, so the test is
    decided without a graph break and the loop compiles. Eager evaluates the original test. Measured
    (torch 2.13 CPU, train mode, dropout in the layers): one graph instead of a skipped function, and
    forward and gradients equal to the eager original under aot_eager and inductor with
    `torch._inductor.config.fallback_random = True`, and the same later random numbers. The draw is
    kept on every path: the always-true `torch._assert_async(draw < 1.0, ...)` uses it, because
    AOTAutograd drops a draw whose value is unused (measured, torch 2.13 `aot_eager`: with the guard
    alone the next random number after the site differs, so later dropout masks differ).

    The wav2vec2 family binds the outcome first and tests the name (transformers 5.x: hubert,
    data2vec-audio, unispeech, wavlm, nllb-moe, ...), sometimes with the draw inline:
    ```python
    skip_the_layer = self.training and dropout_probability < self.config.layerdrop
    if not skip_the_layer or synced_gpus:
        ...
    if skip_the_layer:
        ...
    ```
    or binds `False` first and the outcome only when it draws (transformers 5.x's speecht5, and the
    wav2vec2 family behind `self.layerdrop > 0.0`), so the name is a tensor in training and a Python
    bool otherwise; a test of it still breaks where it is a tensor:
    ```python
    skip_the_layer = False
    if self.training:
        dropout_probability = torch.rand([])
        skip_the_layer = dropout_probability < self.layerdrop
    if skip_the_layer and not synced_gpus:
        continue
    ```
    The guard then goes into the binding (`self.training and not (torch.compiler.is_compiling() and
    self.config.layerdrop <= 0.0) and dropout_probability < ...`), which decides every test of the
    name; one finding carries the fix. Only when the name is read by tests alone (`if`, `while`,
    ternary tests, through `not`/`and`/`or`): under compile it becomes the Python value False where
    it was a 0-d bool tensor, which nothing else may see. In eager the `and` chain returns what it
    returned before. An inline draw (`torch.rand([]) < p`) is written in the guard's check too: each
    path (eager, compiled with any p) draws once, in the same place.

    Where the source shows `layerdrop > 0.0` (an enclosing `if self.training and self.layerdrop >
    0.0:`, as transformers 5.x writes it, or a default above 0.0), that guard would change nothing,
    and the draw decides on every call which layers run. There an unsafe fix gives the loop body a
    compile-only form that skips or runs the layer with `torch.cond`; eager runs the body unchanged:
    ```python
    for decoder_layer in self.layers:
        if torch.compiler.is_compiling() and self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            hidden_states = torch.cond(dropout_probability < self.layerdrop, lambda hidden_states: hidden_states.clone(), lambda hidden_states: decoder_layer(hidden_states, attention_mask)[0], (hidden_states,))
        else:
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:
                    continue
            hidden_states = decoder_layer(hidden_states, attention_mask)[0]
    ```
    The loop body must end with the draw, the skip and one layer call `h = layer(h, ...)`, `h =
    layer(h, ...)[0]` or `h, b = layer(h, b, ...)` (wavlm's position bias: `torch.cond` then carries
    both, and the layer must return tensors of their shapes and dtypes), and nothing after it: `if S: draw = torch.rand([]); if draw < p: continue`
    (bart's decoder), `draw = torch.rand([]); if S and draw < p: continue`, `skip = S and draw < p;
    if not skip: <call>` (wav2vec2), `to_drop = False; if S: ... to_drop = True; if not to_drop:
    <call>` (bart's encoder in transformers 4.x), or `skip = False; if S: draw = torch.rand([]);
    skip = draw < p; if not skip or synced_gpus: <call>` (wav2vec2 in transformers 5.x; a name or
    attribute after `or` joins the compile-only test as `not synced_gpus`), with S static
    (`self.training`).

    ## Fix safety
    The LayerDrop fix is safe: eager runs the same test, and the compiled path is exact (a draw is
    never below 0.0) and keeps the draw. Where it stops: with `layerdrop > 0.0` the draw decides on every call which
    layers run, so the graph still breaks and Dynamo still skips the function (in eager, as before);
    an exact graph-friendly form would have to run every layer (`torch.where` over the layer's
    output: its dropout draws and its parameters' zero gradients differ) or trace both sides
    (`torch.cond`). The `torch.cond` form above is therefore unsafe. Measured on torch 2.13 CPU
    (aot_eager, and inductor with `fallback_random`, train mode, layerdrop 0.5): one graph instead of
    a skipped function; outputs and the random numbers drawn after the loop equal the eager
    original's under the same seed. What changes is the backward: the skipped layer's parameters get
    zero gradients instead of None (optimizers with weight decay or momentum, AdamW, then move them),
    and the backward of `torch.cond` re-runs the taken branch, so a layer that draws random numbers
    (dropout in training, as in most transformer layers) gets gradients computed with new dropout
    masks, not the ones its forward used. The layer must return a tensor of its input's shape and
    dtype, or compilation fails (`torch.cond` checks it). Where `layerdrop` is not known to be above
    0.0 (`self.layerdrop = config.layerdrop`) the safe guard is offered instead, and with
    `layerdrop > 0.0` that code still breaks; writing `if self.training and self.layerdrop > 0.0:`
    around the draw (as transformers 5.x does) makes the unsafe form available.
    `draw <= p` (wav2vec2-bert) gets no safe guard: a draw can be exactly 0.0, so the outcome at
    p = 0.0 is not known; where p > 0.0 is shown, the torch.cond form keeps the comparison as
    written. `draw > p` is not rewritten.

    Any other `if` statement in a loop gets GM101's `torch.where` fix, with GM101's proofs and
    compile-only form, once per iteration: with every break in the loop body gone, Dynamo traces the
    loop (unrolled) instead of skipping the function.

    A ternary in a loop gets GM102's fix the same way. Code earlier in the loop body runs again
    after the rewritten statement, so the aliasing and printing proofs read the whole loop.

    ## When no fix is offered
    Where GM101 or GM102 offers none (side effects such as `out.append(...)` or `h[i] = ...` in a
    per-sample loop, a branch value that is a Python number, ...). The way out there is to
    vectorise over the loop dimension with a per-sample condition:
    `h = torch.where((h.sum(dim=1) > 0)[:, None], h * 2, h)` (check shapes and dtypes as for GM101).
    """

    CODE = "GM104"
    NAME = "tensor-if-in-loop"
    FIX = "sometimes"
    MESSAGE = ("`if` on a tensor value inside a Python loop: when it runs, Dynamo skips the whole function `{func}` "
               "(it runs in eager, no graph); vectorise over the loop with torch.where")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, xs):
                    for x in xs:
                        if x.dim() == 2:
                            x = x * 2
                    return xs
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, h):
                    for i in range(h.shape[0]):
                        if h[i].sum() > 0:
                            h[i] = h[i] * 2
                    return h
            """
        ),
    ]

    def _check(self, node: cst.If | cst.IfExp, tests: list[cst.BaseExpression]) -> None:
        func = self.compiled_function(node)
        if func is None or not context.in_loop(node, self.parent):
            return
        if where.is_fallback(self, node):
            return  # the original, kept by a compile-only fix
        ff = self.facts.function(func)
        flagged = [t for t in tests if where.breaks_on(ff, t)]
        if not flagged:
            return
        short = f"`if` on a tensor value inside a Python loop makes Dynamo skip the whole function `{func.name.value}`"
        if context.is_generator(func):  # traced where it is iterated (fairseq's LayerDropModuleList.__iter__)
            short = (f"`if` on a tensor value inside a Python loop of the generator `{func.name.value}` makes "
                     "Dynamo skip the whole function that iterates it")
        layerdrop = where.fix_layerdrop(self, node, func)
        if layerdrop is not None:
            if layerdrop is not where.Done.FIXED:
                self.report_fix(node, short, layerdrop, at=node.test)
            return
        if isinstance(node, cst.If):  # GM101's torch.where fix, once per iteration
            self.report_fix(node, short, where.fix_if(self, node, func), at=flagged[0])
        else:  # GM102's
            self.report_fix(node, short, where.fix_ternary(self, node, func), at=node.test)

    def visit_If(self, node: cst.If) -> None:
        up = self.parent(node)
        if isinstance(up, cst.If) and up.orelse is node or where.raise_only(node):
            return
        self._check(node, [t for t, _ in where.arms(node) if t is not None])

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node, [node.test])
