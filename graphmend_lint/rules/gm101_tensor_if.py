from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context
from ..fixes import where
from . import base


class TensorIfRule(base.GraphMendRule):
    """
    ## What it does
    Finds `if`/`elif` statements whose test depends on tensor data (`x.sum() > 0`,
    `torch.isnan(h).any()`, `(x > 0).all() and ...`, `.item()`), in code that runs under
    `torch.compile`. Static tests are never flagged: `self.training`, `x.dim() == 3`,
    `x.shape[0] > 1`, `x.dtype == torch.float16`, `mask is None`, `isinstance(...)`, config attributes.

    ## Why it breaks the graph
    Python must know which branch to run, so Dynamo ends the graph at the test ("Data-dependent
    branching", GB0170), runs the test in eager, and compiles a new graph for the code after it.
    The first call that takes the other branch compiles again (hundreds of milliseconds on CPU).

    ## Example
    ```python
    if hidden_states.dtype == torch.float16 and (
        torch.isinf(hidden_states).any() or torch.isnan(hidden_states).any()
    ):
        clamp_value = torch.finfo(hidden_states.dtype).max - 1000
        hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
    ```

    ## Fix
    The branch choice becomes `torch.where`, which computes both values and picks one in the graph,
    and only under compile: eager runs the original `if` unchanged (its exceptions, random numbers,
    gradients, `grad_fn`, aliasing and speed stay as they were). Where the source proves that
    `torch.where` gives exactly what the `if` gives, the compiled path needs no check:
    ```python
    if torch.compiler.is_compiling():
        if hidden_states.dtype == torch.float16:
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.where(torch.logical_or(torch.isinf(hidden_states).any(), torch.isnan(hidden_states).any()), torch.clamp(hidden_states, min=-clamp_value, max=clamp_value), hidden_states)
    elif hidden_states.dtype == torch.float16 and (
        torch.isinf(hidden_states).any() or torch.isnan(hidden_states).any()
    ):
        clamp_value = torch.finfo(hidden_states.dtype).max - 1000
        hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
    ```
    The shorter fix, the `if` replaced by `torch.where` in eager too, is not offered: it gives the
    same values but was slower in eager in every case measured (`perf/eager_short_form.py`, torch
    2.13 CPU, 32x128 and 4x256x768 tensors, both outcomes: 1.3x to 400x, the fp16 clamp above
    1.3-2.1x), because `torch.where` computes every branch and the `if` one. Under compile both
    trace the same graph. Otherwise the compiled path gets `torch.where` behind checks that are
    Python constants while tracing:
    ```python
    if torch.compiler.is_compiling() and hidden_states.is_floating_point():
        clamp_value = torch.finfo(hidden_states.dtype).max - 1000
        hidden_states = torch.where(torch.logical_not(torch.isfinite(hidden_states).all()), torch.clamp(hidden_states, min=-clamp_value, max=clamp_value), hidden_states)
    elif not torch.isfinite(hidden_states).all():
        clamp_value = torch.finfo(hidden_states.dtype).max - 1000
        hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
    ```
    When the branch values are not provably of one shape and dtype, the compiled path binds them and
    compares them while tracing; a mismatch runs the original choice (the graph break stays, the
    result is right):
    ```python
    if torch.compiler.is_compiling():
        cond = h.mean() > 0
        y_if = h.mean(dim=0, keepdim=True)
        if y_if.shape == h.shape and y_if.dtype == h.dtype:
            y = torch.where(cond, y_if, h)
        else:
            y = y_if if cond else h
    elif h.mean() > 0:
        ...  # the original, unchanged
    ```
    Under static shapes (the default) `y_if.shape == h.shape`, `h.is_floating_point()` and
    `isinstance(self.limit, (int, float))` are constants while Dynamo traces: no graph break, no
    runtime cost; under dynamic shapes a shape comparison becomes a guard (measured on torch 2.13
    CPU: one graph, forward and gradients equal to the eager original under aot_eager and inductor).
    Autocast changes dtypes the source cannot see: CUDA autocast runs `exp`, `log`, `pow`/`**`,
    `softmax` and a few more (PyTorch's autocast op reference) in float32 for a float16/bfloat16
    input, so `torch.where(c, h.exp(), h)` would be float32 where the `if` keeps `h` float16. Where
    one branch value has such an op and the other not, the compiled path also checks
    `(h.dtype == torch.float32 or h.is_cpu or (h.is_cuda and not torch.is_autocast_enabled()))`,
    constants while tracing: CPU autocast keeps those ops' dtypes (measured), CUDA's state is the
    call without a device (the form TorchScript compiles too), and a half tensor on another device
    runs the `if`.
    Accepted shapes: the same names assigned in every branch; `return` in every branch (tuples
    element by element); an `if` without `else` updating a name bound before it
    (`h = torch.where(c, f(h), h)`); `elif` chains (nested `torch.where`, safe or unsafe). A
    static leading conjunct stays a Python `if`; `and`/`or`/`not` over tensor tests become
    `torch.logical_and/or/not`; setup assignments used nowhere else are hoisted out of the branch.

    LayerDrop (`dropout_probability = torch.rand([])`, then `if self.training and
    dropout_probability < self.layerdrop:`) gets a guard before the draw's comparison:
    `if self.training and not (torch.compiler.is_compiling() and self.layerdrop <= 0.0 and
    torch._assert_async(dropout_probability < 1.0, "keeps the draw of torch.rand") is None) and
    dropout_probability < self.layerdrop:`. A draw of `torch.rand` lies in [0, 1), so with
    `layerdrop <= 0.0` (the default of every config) the test is False, and Dynamo decides it while
    tracing; eager evaluates the test as before. The random stream is kept on every backend: the
    draw is still made, in the same place, and the always-true `_assert_async` uses it, because
    AOTAutograd drops a draw whose value is unused (measured, torch 2.13 `aot_eager`: without it the
    next random number after the site differs from eager's, so later dropout masks differ). The same
    holds for random transforms (`if torch.rand(1) < self.p:`, torchvision), whose inline draw is
    written in the guard too: eager, and compiled with any p, each draw exactly once. torchvision's v2
    transforms skip instead (`if torch.rand(1) >= self.p: return inpt`, True whenever p <= 0.0): the
    same guard comes first, joined by `or` (`(torch.compiler.is_compiling() and self.p <= 0.0 and
    torch._assert_async(...) is None) or torch.rand(1) >= self.p`). Compiled random
    ops equal eager's under `aot_eager` and under Inductor with `torch._inductor.config.fallback_random
    = True` (without it Inductor draws its own numbers, for any model). With a layerdrop above
    0.0 the graph still breaks there: the draw decides on every call which layers run, and neither
    `torch.where` (it would run every layer: its dropout draws and its parameters' zero gradients
    differ) nor `torch.cond` keeps that exact. `draw <= p` and `draw > p` are not rewritten (a draw
    can be 0.0, so the outcome at p = 0.0 is not known).

    The guard is a patch only where p <= 0.0 can reach the test, so it is not offered (a no-op
    patch) where the source proves p > 0.0 there: an enclosing test or another conjunct excludes it
    (`if self.training and self.layerdrop > 0.0:`, as transformers 5.x writes it), or every store of
    the probability in its class is a number literal above 0.0, one of them unconditional in
    `__init__` (`self.p = 0.5`; a `+=`, a `del` or another value anywhere in the class, e.g. a
    `disable()` that sets 0.0, and the fix is offered). A parameter default is no such proof:
    `def __init__(self, p: float = 0.5): self.p = p` (torchvision's flips) gets the fix, whose
    title names the default, because a caller may pass 0.0 (`RandomHorizontalFlip(p=0.0)`), the
    very case the guard decides while tracing (one graph instead of a break, measured in
    `tests/test_fidelity.py`); at the default the guard does not fire (a constant while tracing) and
    costs nothing. Neither is a config value (`self.layerdrop = config.layerdrop`): configs are loaded
    with any value. Stores from outside the class (`flip.p = 0.0`), from bases or subclasses, or by
    `setattr` are not seen: where they exist, the skipped fix is only a missed one, never a wrong one.

    ## Fix safety
    A fix is safe when eager runs the user's code and the compiled path is proved exact or checked
    while tracing. Where every proof below is made, the compiled path needs no check; otherwise the
    unproved ones that are Python constants while tracing become its checks (those marked
    (compiled) are needed for any safe fix):
    - the test is a 0-d tensor (a reduction without `dim`, or a comparison of one with a number):
      `torch.where` broadcasts a larger condition instead of failing like `if`; the compile-only form
      checks `isinstance(limit, (int, float))` when the number is an attribute;
    - the branch values are tensors of the same shape and dtype: each is the same name, or a chain
      of shape- and dtype-keeping ops of it (`clamp`, `nan_to_num`, `tanh`, arithmetic with Python
      numbers, ...; the table in `analysis/tables.py` is checked against torch by the tests), and
      the name is floating where an op keeps the dtype only for floating tensors; the compile-only
      form checks `x.is_floating_point()`, `isinstance(x, torch.Tensor)` and the bound values'
      shapes and dtypes while tracing;
    - (compiled) everything now evaluated in both branches (values, hoisted setup, every test of an
      `and`/`or` or `elif`) is free of side effects and cannot raise (no calls of modules or user
      functions, `torch.finfo` only on a floating dtype, which the compile-only form checks, no
      division by a possible zero; a reduction that raises on an empty tensor, `x.amax()`, only
      with `x.numel() > 0` checked while tracing, a shape; indexing a branch value only as below;
      constructors only on arguments proved valid:
      `torch.tensor(self.factors, dtype=..., device=x.device)` is checked while tracing with
      `isinstance(self.factors, (list, tuple)) and all(isinstance(v, (int, float)) for v in
      self.factors)`, which is how Phi-3's LongRoPE factor choice gets a safe fix);
    - (compiled, or with gradients off) what only one branch reads is read elsewhere too:
      `torch.where` gives it a zero gradient when that branch is not taken, where `if` gave none
      (`.grad` stays None; optimizers with weight decay or momentum treat the two differently);
      a branch value reads what its names were computed from before the `if` (`t =
      torch.zeros_like(h)`: nothing differentiable), and only the code after the `if` counts as
      elsewhere (tests/fuzz_regressions/GM101_5.py, GM101_6.py);
    - (compiled, or with gradients off) every op keeps a zero gradient zero: torch.where sends the
      untaken branch a zero gradient, which an op multiplies by its derivative; that is NaN where
      the derivative is infinite (`torch.where(c, sqrt(x), x)` at 0), and, for an op whose
      derivative depends on its input, where the input is NaN or infinite (`x ** 2`, `tanh`,
      `gelu`, `softmax`, `amax`, a product of two tensors, a module call: -inf attention scores, a
      NaN from another branch), where `if` gave no gradient at all. Ops that only route, sum or mask
      the gradient (`clamp`, `relu`, views, indexing, `cat`, `sum`, arithmetic with numbers) are
      exact at every input (measured for every op of the tables, `tests/test_gm1_tables.py`; found
      by the differential fuzzer under torch.compile). When the branch values read one floating
      tensor only (`torch.sqrt(x)`, `x - x.amax()`), the fix guards that tensor wherever the value
      reads it ("double where": `torch.where(c, torch.sqrt(torch.where(c, x, 1.0)), x)`; in an `elif`
      chain, each arm's input with the tests that take it, `torch.where(c0, 1.0, torch.where(c1, x,
      1.0))`), which gives bit-identical values and
      gradients: where the arm is not taken its ops see 1.0, and torch.where's backward selects
      (it does not multiply), so nothing they compute there reaches `x` (measured for every such
      op in the table, float32 and float16, and on NaN and -inf inputs);
    - when either of the last two is not proved (values that read two tensors, such as `h * x`
      or a module call; a parameter read in one branch only), the compiled form also checks
      `not torch.is_grad_enabled()`, a constant
      while tracing (Dynamo guards on the grad mode): under `no_grad` / `inference_mode` it runs in
      one graph, and with gradients on the original `if` runs as before, break included; the
      message says so. A branch value the `if` hands on as it is (`Q` in `Q = Q * s`) is also
      checked with `not Q.requires_grad`: under no_grad `torch.where` returns a new tensor that
      never requires grad, where the `if` handed on, say, a parameter passed in (peft's psoft
      `_project_Q`); such a call keeps the `if`;
    - (compiled) under `no_grad`, a branch that passes a name on unchanged needs that name to be
      computed inside the `no_grad` region: `if` hands on the tensor with its autograd history,
      while `torch.where` there returns a new tensor that never requires grad;
    - (compiled) the assigned name is not modified in place later (`if` kept the same tensor object
      when the branch was not taken; `torch.where` makes a new one), and neither is a name a branch
      passes on as it is (`y = x`: `y` is the tensor `x` itself, so `x.add_(1)`, `x[0] = 0`,
      `x += 1` or `out=x` later also changed `y`), nor a name bound to one of those tensors by
      `a = b` anywhere in the function (`keep = h` before the `if`, then `keep.mul_(3.0)`);
    - (compiled) a branch value that is a parameter nothing rebinds before the `if` (the caller's own
      tensor) is not handed back by the function (returned, yielded or stored): a caller that then
      modifies the result or its own tensor in place sees both change with the `if`, and only one
      with `torch.where` (vLLM's `cast_overflow_tensors`; not seen: a view of the parameter);
    - (compiled) the assigned name is not observed later in the function: passed to `print`, a
      logger, `warnings.warn`, `str`/`repr`/`format`, shown in an f-string, or read as `.grad_fn`:
      its `grad_fn` becomes `WhereBackward0`, which printing shows.
    When one of these cannot be proved or checked the fix is unsafe (applied with `--unsafe-fixes`)
    and the message names the missing proof. In a function with a `try` statement every GM1xx fix
    is unsafe: for some layouts of the fixed code Dynamo (torch 2.13, Python 3.11 and 3.12) fails
    while rewriting such a function's bytecode ("exception table entry start instruction has no
    offset"; found by fuzzing, `tests/fuzz_regressions/GM101_8.py`). `torch.where` also evaluates both branches, so an
    expensive branch is paid for on every compiled call: measured with Inductor on CPU
    (`perf/cond_vs_where.py`), arms of a few large Linear layers cost 1.6-1.8x the `if` under
    `torch.where` and the same as the `if` under `torch.cond`; with cheap arms `torch.where` is
    5-20% faster than `torch.cond` (one fused kernel, where `cond` runs a predicate kernel, then
    the branch's own). On CUDA we expect `torch.where` to keep its lead with cheap arms: Inductor's
    `cond` reads its predicate with `.item()` (a host sync, twice per training step) and disables
    CUDA graphs.

    Indexing a branch value (`x[idx]`, `x[:, 0]`, `x[1:, idx]`) may raise where its branch is not
    taken. The compiled form uses the double-where idiom on the index: a tensor index becomes
    `torch.where(cond, idx, 0)` in the `if` branch (`torch.where(cond, 0, idx)` in the `else`
    branch), the same rows where the branch is taken and a valid index where it is not, behind
    trace-time checks that the index is a long tensor (a boolean mask would change the result's
    shape with the data) and that the dim it indexes is not empty; an integer index is checked
    against its dim's size. Slices with literal bounds cannot raise. Basic indexing is a view, so a
    later in-place change of the indexed tensor keeps the fix unsafe. On CPU, both aot_eager (an
    IndexError) and Inductor (its bounds assertion) raise on the unguarded form; the guarded one
    runs in one graph.

    Not a fix's doing, yet seen through one: AOTAutograd runs the backward of a graph output that no
    gradient reaches with a zero gradient, where eager autograd never runs it, so a value with a NaN
    or infinite derivative there (`torch.sqrt` of a negative, the taken branch) gives `0 * NaN` in
    the gradients of inputs the same graph also uses. Removing a break can put such a value in one
    graph with those inputs (fuzz seed 10962); `tests/test_fuzz.py` shows the same without any fix.

    A torch layer called in a branch (`h = self.proj(h)`, `x = self.norm(x)`, its `__init__` store
    `self.proj = nn.Linear(...)`: Linear, LayerNorm, ReLU, SiLU, GELU, Tanh, Sigmoid, Identity,
    Dropout) gets the compile-only form too, behind checks made while tracing: the module is exactly
    that class (`type(self.proj) is torch.nn.Linear`), it has no forward hooks or pre-hooks and no
    global ones are registered (a hook would run for the untaken branch), its input is one it accepts
    (`h.shape[-1] == self.proj.in_features` and the weight's dtype and device; the normalized shape;
    a floating input; Dropout only in eval mode, where it is the identity and draws nothing). A
    module called in one branch only also needs gradients off (`not torch.is_grad_enabled()`): its
    parameters would get zero gradients where the `if` gave none. Measured on torch 2.13 CPU
    (aot_eager and inductor): under no_grad 2 breaks -> 0 with a Linear and a LayerNorm arm, outputs
    equal to the eager original on every branch; with gradients on, a hook, or train-mode Dropout,
    the `if` runs as before. On that form, an arm `h = self.proj(h)` then gets a second, unsafe fix
    for gradients on: an `elif torch.compiler.is_compiling() and <the same checks>:` (plus
    `self.proj.out_features == self.proj.in_features` for a Linear: torch.cond needs one output
    shape) that runs `h = torch.cond(h.sum() > 0, lambda h: self.proj(h), lambda h: h.clone(), (h,))`,
    before the original `elif`. torch.cond runs the module only where its branch is taken, so no
    random numbers or hooks run for the other (Dropout is not offered it: the backward of torch.cond
    re-runs the branch with new random numbers); what changes is that the module's parameters get
    zero gradients instead of None where the branch is not taken. Measured (torch 2.13 CPU,
    aot_eager and inductor, gradients on): 0 breaks, outputs and input gradients equal to the eager
    original, parameter gradients equal except None -> zeros.

    A `print`, logging or `warnings` call in a branch is left out of the compiled form (under compile
    it does not run, exactly as the GM2xx guard makes it) and stays in the eager code: the fix is then
    compile-only, and the message names the call. The same holds for the guards the GM2xx fixes
    write (`if not torch.compiler.is_compiling(): ...`): they do not run under compile, so they do
    not block this fix, and fixes compose. When the branch holds nothing else, the compiled path
    skips the whole `if` and eager evaluates it as before:
    `if not torch.compiler.is_compiling() and h.abs().max() > 1e3:`. That needs a test that has no
    side effects and cannot raise (a reduction that raises on an empty tensor gets
    `not (torch.compiler.is_compiling() and h.numel() > 0) and ...`, a shape checked while
    tracing) and an `if` without `elif`/`else` (their arms would then run under compile).

    A guard that only skips a no-op, `if (x == 0).sum() != 0: x[x == 0] = 1` (visual_bert; also
    `.any()`, `torch.any(...)`, `.sum() > 0`, `x.masked_fill_(mask, v)`, several such updates under
    one test (rag's `ll` and `smooth_obj`), and a view as the updated tensor, wav2vec2's
    `logits[1:][neg_is_pos] = float("-inf")`): where the test is False the mask selects no element
    and the updates change nothing, so under compile they run alone, checked while tracing that
    autograd does not track `x` (an in-place update of a tracked tensor changes its `grad_fn` and
    raises on a leaf, even when it selects nothing; with gradients on, the `if` runs as before),
    and, where `x` comes from the caller (a parameter, `self.x`), that gradients are off: an op
    there may have saved `x` for backward (`y = w * x`), and an update of no element still bumps
    its version, so that backward would raise (monai's VISTA3D form, found by an audit; not seen:
    a tensor saved with gradients on, then updated by a call under `no_grad`, then backward):
    `if torch.compiler.is_compiling() and not x.requires_grad: x[x == 0] = 1` then `elif` the
    original. The mask is an elementwise test of a name (`x == 0`, `torch.isnan(x)`: bool) or a
    bool name `mask` (its dtype checked), used as tested or, for a name, with basic indexing
    (`mask[:, None, :]`, `mask[..., None]`: a view of some of its elements, so where none is True
    none of the view is); the value a number literal or `float("-inf")`-like. Its dims, its shape against the updated
    tensor and the value's fit in its dtype are checked while tracing where not proved; logging in
    the branch stays in eager. Measured on torch 2.13: the guard is 1 break, the update alone 0.
    A guard that only skips a multiplication by ones, the Mamba layers of transformers 5.4.0
    (nemotron_h, zamba, zamba2): `if mask is not None and not torch.all(mask == 1): h = (h *
    mask[:, :, None]).to(dtype)` (also `(mask != 1).any()`, `mask.unsqueeze(1)`, after `dtype =
    h.dtype` when `dtype` is read elsewhere only before the `if` or after binding it again): where the test is False every element of the mask is 1 and the
    product is `h` itself (x * 1 is x for every integer and real float, NaN and infinities
    included, and so is the gradient), so under compile it runs alone, checked while tracing that
    the product keeps `h`'s shape and dtype, its index cannot raise, `h` is not complex and the mask
    does not require grad; refused when `h` is modified in place or its `grad_fn` read later (it
    becomes a new tensor where the `if` kept the same one). Measured on torch 2.13: the guard is 1
    break, the product alone 0, outputs and gradients bitwise equal.
    An out-of-place `x = x.masked_fill(mask[:, None, :], v)` in a branch takes the torch.where
    form, with what `masked_fill` raises on (a mask not bool or not broadcasting to `x`, a value
    `x`'s dtype cannot hold) checked while tracing.

    ### Which form: `torch.where`, `torch.cond`, or the `if` kept
    The rule the fixes follow, and the measurements behind it (`perf/cond_vs_where.py`,
    torch 2.13, Inductor on CPU; `perf/results/cond_vs_where/notes.md`):
    - `torch.where` (safe, compile-only) when both arms are tensor expressions that are proved
      or checked while tracing to be exact under it (no raise, finite gradients, same shapes):
      with cheap arms it is the fastest form, 5-20% faster than `torch.cond` (one fused kernel;
      `cond` runs a predicate kernel, reads it on the host with `.item()`, then the branch's own
      kernels), and 1.25-1.6x faster than the unfixed `if` in eval; the first call on the other
      branch costs no compile (the unfixed `if` compiles a new graph: 0.1-6.6 s on CPU).
      On a GPU (one H200, torch 2.11, Inductor; `perf/results/breaks_latency_cuda_inductor`),
      where small models are host-bound, the fixed models ran 1.57-2.41x faster in steady state
      (4.5x with CUDA graphs): the same kernels, without the returns to Python and the
      device-to-host reads of the tests; cold start 0.58-1.49x (one graph inlines every layer).
    - Its price: both arms run on every compiled call. Arms of a few large Linear layers cost
      1.6-1.8x the `if` under `torch.where` and the same as the `if` under `torch.cond`. The module
      arms above are therefore one call of a known torch layer (Linear, LayerNorm, an activation)
      under `torch.where`; their `torch.cond` step is the form that runs only the taken arm.
    - `torch.cond` is offered only as an unsafe fix (module arms with gradients on, GM104's
      LayerDrop with p > 0): its backward gives the untaken branch's parameters zeros instead of
      None, re-runs the taken branch (dropout inside it then draws new numbers, so gradients
      differ), and what it cannot capture is a hard compile error, not a break.
    - The `if` is kept (no fix) where neither form is exact: side effects in an arm, an op that
      may raise only in the untaken arm and cannot be checked while tracing, a test read as a
      Python value. A break that remains costs a graph switch per call and a compile per new
      branch; that is the price of exactness.

    ## When no fix is offered
    Branches with other side effects (calls, `+=`, attribute stores) or calls of other modules
    (BatchNorm updates its running statistics in train mode, Embedding raises on an index out of
    range, a user module may do anything; a call with keyword arguments) and user functions; indexing in a hoisted setup statement, by an expression other than a name, or by an
    integer or tensor after `...`; other operations that may raise only in the untaken branch; a branch value
    that is a Python number or `None` (also a name an enclosing `if x is None` proves None, kept by a
    branch that does not set it); a test proved not 0-d or read as a Python value (`.item()`,
    `torch.equal`); `return` in some branches only (an `if` whose arms all return and that is
    followed by `return <value>` is fixed: that `return` is its `else`, also after assignments
    `y = ...` that cannot raise, computed first on the compiled path, a name they rebind that the
    test or an arm reads renamed there; not inside a `try`, nor with a call among them); a
    static test after a tensor test. For branches
    that call other modules, `torch.cond(pred, true_fn, false_fn, operands)` under `is_compiling()` is the
    manual way out when both branches are free of side effects and mutation and return tensors of
    equal shape and dtype; it is offered (unsafe) only for the one-statement torch-layer arm above:
    measured on torch 2.13 CPU, the untaken branch's
    parameters get zero gradients instead of None (as with `torch.where`), Dynamo traces both
    branches, and what it cannot capture is a hard error, not a graph break (an input returned as
    it is, outputs of different shapes under autograd or of different dtypes, a data-dependent op
    such as `x[mask]` or `x[i]` with a 0-d index, a `print`, a BatchNorm updating its statistics), and
    its backward re-runs the taken branch, so dropout inside it gets new random numbers (measured for
    GM104's LayerDrop form, which offers it as an unsafe fix). `if`-chains with a `raise` in an arm are left to GM3xx, and an `if` inside a Python
    loop to GM104. A LayerDrop or random-transform test where p > 0.0 is proved (above) keeps its
    break: the draw decides on every call.
    """

    CODE = "GM101"
    NAME = "tensor-if"
    FIX = "sometimes"
    MESSAGE = "`if` on a tensor value breaks the graph (data-dependent branching)"

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, mask=None):
                    if self.training and x.dim() == 3 and x.shape[0] > 1:
                        x = x * 2
                    if mask is None or isinstance(mask, float):
                        x = x + 1
                    if x.dtype == torch.float16:
                        x = x.float()
                    return x

            def eager_only(x):
                if x.sum() > 0:
                    x = x * 2
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
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.proj(x)
                    if h.sum() > 0:
                        y = h * 2
                    else:
                        y = h - 1
                    return y
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.proj(x)
                    if torch.compiler.is_compiling():
                        y = torch.where(h.sum() > 0, h * 2, h - 1)
                    elif h.sum() > 0:
                        y = h * 2
                    else:
                        y = h - 1
                    return y
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if x.sum() > 0:
                        print("positive")
                    return x
            """
        ),
    ]

    def visit_If(self, node: cst.If) -> None:
        up = self.parent(node)
        if isinstance(up, cst.If) and up.orelse is node:
            return  # an `elif`: handled with its head
        func = self.compiled_function(node)
        if func is None:
            return
        if where.is_fallback(self, node):  # the original, kept by a compile-only fix
            grad_on = where.fix_module_grad_on(self, node, func) if not context.in_loop(node, self.parent) else None
            if grad_on is not None:  # a module arm: its compiled form waits for gradients off
                self.report_fix(node, f"{self.MESSAGE} with gradients on", grad_on, at=node.orelse.test)
            return
        ff = self.facts.function(func)
        tests = [t for t, _ in where.arms(node) if t is not None]
        flagged = [t for t in tests if where.breaks_on(ff, t)]
        if not flagged or context.in_loop(node, self.parent) or where.raise_only(node):
            return
        layerdrop = where.fix_layerdrop(self, node, func)
        if layerdrop is not None:
            if layerdrop is not where.Done.FIXED:
                self.report_fix(node, self.MESSAGE, layerdrop, at=node.test)
            return
        self.report_fix(node, self.MESSAGE, where.fix_if(self, node, func), at=flagged[0])
