"""The torch facts GM1xx proofs rely on (analysis/tables.py), measured against the installed torch."""
from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

from graphmend_lint.analysis import tables as T

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.bool)
# how to call each op with Python-number extra arguments (the only form a proof accepts)
CALLS = {
    "clamp": lambda x: torch.clamp(x, min=-0.5, max=0.5), "clip": lambda x: torch.clip(x, -0.5, 0.5),
    "clamp_min": lambda x: torch.clamp_min(x, 0.5), "clamp_max": lambda x: torch.clamp_max(x, 0.5),
    "nan_to_num": lambda x: torch.nan_to_num(x, nan=0.0), "neg": torch.neg, "negative": torch.negative,
    "abs": torch.abs, "relu": torch.relu, "sign": torch.sign, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
    "sin": torch.sin, "cos": torch.cos, "gelu": F.gelu, "silu": F.silu, "hardtanh": F.hardtanh,
    "leaky_relu": F.leaky_relu, "softsign": F.softsign, "detach": torch.detach, "clone": torch.clone,
    "contiguous": lambda x: x.contiguous(), "exp": torch.exp, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "masked_fill": lambda x: x.masked_fill(x > 0, 0), "log": torch.log, "log1p": torch.log1p, "reciprocal": torch.reciprocal, "pow": lambda x: torch.pow(x, 0.5),
    "softplus": F.softplus, "mish": F.mish, "elu": F.elu, "selu": F.selu, "celu": F.celu, "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid, "logsigmoid": F.logsigmoid, "relu6": F.relu6, "erf": torch.erf, "erfc": torch.erfc,
    "atan": torch.atan, "tanhshrink": F.tanhshrink, "floor": torch.floor, "ceil": torch.ceil, "round": torch.round,
    "trunc": torch.trunc, "square": torch.square, "expm1": torch.expm1, "sinh": torch.sinh,
    "softmax": lambda x: torch.softmax(x, -1), "log_softmax": lambda x: F.log_softmax(x, dim=0),
}
FLOATS = {torch.float32, torch.float16, torch.bfloat16, torch.float64}


def test_every_table_entry_is_measured():
    assert set(CALLS) == set(T.ELEMENTWISE)


@pytest.mark.parametrize("name", sorted(T.ELEMENTWISE))
def test_elementwise_shape_dtype_and_raising(name):
    op, call = T.ELEMENTWISE[name], CALLS[name]
    for dtype in DTYPES:
        x = (torch.randn(3, 4) * 3).to(dtype)
        try:
            y = call(x)
        except (RuntimeError, NotImplementedError, TypeError):
            assert op.raises and dtype not in FLOATS, f"{name} raised on {dtype}"
            continue
        if op.shape:
            assert y.shape == x.shape, (name, dtype)
        if op.dtype == "any" or dtype in FLOATS:
            assert y.dtype == dtype, (name, dtype, y.dtype)


def test_masked_fill_may_broadcast_beyond_its_input():
    assert not T.ELEMENTWISE["masked_fill"].shape
    x = torch.zeros(3, 4)
    assert x.masked_fill(torch.ones(2, 3, 4, dtype=torch.bool), 1.0).shape == (2, 3, 4)


@pytest.mark.parametrize("name", sorted(T.ELEMENTWISE))
def test_finite_grad_claims(name):
    """finite_grad=True: torch.where's zero gradient for the untaken branch stays zero through the
    op at awkward points (0, -1, tiny, huge, 100) and at NaN and +-inf (a branch that is not taken
    may hold them: -inf attention scores, a NaN from another branch's sqrt); found by the
    differential fuzzer under torch.compile (`h ** 2` and `tanh` gave NaN gradients there)."""
    op, call = T.ELEMENTWISE[name], CALLS[name]
    x = torch.tensor([0.0, -1.0, 1e-30, 1e30, 0.5, 100.0, float("nan"), float("inf"), -float("inf")],
                     requires_grad=True)
    y = call(x)
    if not y.requires_grad:
        assert not op.finite_grad  # detach: no gradient at all where `if` had one
        return
    # the gradient torch.where sends to an untaken branch is zero
    (g,) = torch.autograd.grad(y, x, torch.zeros_like(y))
    if op.finite_grad:
        assert (g == 0).all(), name
    else:
        assert not (g == 0).all(), f"{name} is marked finite_grad=False but the zero gradient stays zero"


CONSTRUCTS = {"zeros", "ones", "full", "arange", "tensor", "as_tensor", "zeros_like", "ones_like", "full_like",
              "empty_like", "new_zeros", "new_ones", "new_full", "new_empty"}  # constructors: no gradient to route


@pytest.mark.parametrize("name", sorted(T.ROUTING_GRAD - CONSTRUCTS))
def test_routing_ops_keep_a_zero_gradient_zero(name):
    """ROUTING_GRAD: ops outside ELEMENTWISE that only route, sum or mask the gradient."""
    x = torch.tensor([[0.0, float("nan")], [float("inf"), -float("inf")]], requires_grad=True)
    calls = {"view": lambda t: t.view(4), "view_as": lambda t: t.view_as(t), "reshape": lambda t: t.reshape(4),
             "reshape_as": lambda t: t.reshape_as(t), "unflatten": lambda t: t.flatten().unflatten(0, (2, 2)),
             "squeeze": lambda t: t.squeeze(0), "unsqueeze": lambda t: t.unsqueeze(0),
             "permute": lambda t: t.permute(1, 0), "transpose": lambda t: t.transpose(0, 1),
             "expand": lambda t: t.expand(3, 2, 2), "expand_as": lambda t: t.expand_as(t),
             "repeat": lambda t: t.repeat(2, 1), "tile": lambda t: t.tile(2), "narrow": lambda t: t.narrow(0, 0, 1),
             "select": lambda t: t.select(0, 1), "to": lambda t: t.to(torch.float64), "type_as": lambda t: t.type_as(t),
             "cat": lambda t: torch.cat([t, t]), "concat": lambda t: torch.concat([t, t]),
             "concatenate": lambda t: torch.concatenate([t, t]), "stack": lambda t: torch.stack([t, t]),
             "chunk": lambda t: t.chunk(2)[0], "split": lambda t: t.split(1)[1], "unbind": lambda t: t.unbind()[0],
             "flip": lambda t: t.flip(0), "roll": lambda t: t.roll(1), "where": lambda t: torch.where(t > 0, t, 0.0),
             "masked_fill": lambda t: t.masked_fill(t > 0, 0.0),
             "gather": lambda t: t.gather(1, torch.tensor([[1], [0]])),
             "index_select": lambda t: t.index_select(0, torch.tensor([1])),
             "take_along_dim": lambda t: torch.take_along_dim(t, torch.tensor([[1], [0]]), 1),
             "cumsum": lambda t: t.cumsum(0), "diagonal": lambda t: t.diagonal(), "movedim": lambda t: t.movedim(0, 1),
             "swapaxes": lambda t: t.swapaxes(0, 1)}
    y = calls[name](x) if name in calls else getattr(x, name)()
    (g,) = torch.autograd.grad(y, x, torch.zeros_like(y))
    assert (g == 0).all(), name


@pytest.mark.parametrize("name", sorted(T.REDUCTIONS))
def test_reductions_on_empty(name):
    x = torch.zeros(0, 3)
    fn = getattr(torch, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn(x)
        except (RuntimeError, IndexError):
            assert name in T.RAISES_ON_EMPTY, name
            return
    assert name not in T.RAISES_ON_EMPTY, name
    assert bool(caught) == (name in T.WARNS_ON_EMPTY), name
    assert out.dim() == 0  # no dim argument: 0-d


def test_python_number_arithmetic_keeps_floating_dtype():
    for dtype in FLOATS:
        x = torch.ones(2, dtype=dtype)
        for y in (x + 0.5, x - 1, x * 2, x / 3, 2 * x, -x, x ** 2):
            assert y.dtype == dtype and y.shape == x.shape


@pytest.mark.parametrize("name", sorted(n for n, op in T.ELEMENTWISE.items() if not op.finite_grad and n != "detach"))
def test_double_where_guard_value_is_harmless(name):
    """The double-where guard feeds 1.0 to ops with an infinite derivative somewhere: value and
    derivative must be finite there, in every floating dtype."""
    for dtype in FLOATS:
        x = torch.ones(3, dtype=dtype, requires_grad=True)
        y = CALLS[name](x)
        (g,) = torch.autograd.grad(y.float().sum(), x)
        assert torch.isfinite(y).all() and torch.isfinite(g).all(), (name, dtype)


@pytest.mark.parametrize("name", sorted(n for n, op in T.ELEMENTWISE.items() if op.dim_arg))
def test_dims_minus_one_and_zero_fit_every_rank(name):
    """A dim of -1 or 0 is valid from 0-d up; others raise on tensors of too low rank."""
    fn = getattr(torch, name)
    for shape in ((), (3,), (2, 3), (2, 3, 4)):
        x = torch.randn(shape)
        for dim in (-1, 0):
            assert fn(x, dim).shape == x.shape
    with pytest.raises(IndexError):
        fn(torch.randn(3), 1)


# The CUDA autocast op reference ("CUDA Ops that can autocast to float32"): exp, expm1, log, log1p,
# pow/__pow__, reciprocal, rsqrt, sinh, softmax, log_softmax, softplus (and square, which calls pow).
CUDA_FLOAT32 = {"exp", "expm1", "log", "log1p", "pow", "reciprocal", "rsqrt", "sinh", "softmax", "log_softmax",
                "softplus", "square"}
ARITHMETIC = {"x ** n": lambda x: x ** 2, "n / x": lambda x: 2 / x}


def test_autocast_flags_are_the_cuda_float32_list():
    assert {n for n, op in T.ELEMENTWISE.items() if op.autocast} == CUDA_FLOAT32
    assert T.AUTOCAST_ARITHMETIC == set(ARITHMETIC)


@pytest.mark.parametrize("low", [torch.float16, torch.bfloat16])
def test_cpu_autocast_keeps_every_chain_dtype(low):
    """CPU autocast has none of the chain ops in its float32 list: the flags matter on CUDA."""
    x = torch.rand(3, 4).to(low) + 0.5
    with torch.autocast("cpu", dtype=low):
        for name, call in [*CALLS.items(), *ARITHMETIC.items()]:
            assert call(x).dtype == low, name


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("low", [torch.float16, torch.bfloat16])
def test_cuda_autocast_float32_ops_measured(low):
    x = torch.rand(3, 4, device="cuda").to(low) + 0.5
    with torch.autocast("cuda", dtype=low):
        for name, call in CALLS.items():
            if T.ELEMENTWISE[name].shape:
                assert (call(x).dtype == torch.float32) == T.ELEMENTWISE[name].autocast, name
        for name, call in ARITHMETIC.items():
            assert call(x).dtype == torch.float32, name
        assert (x / 2).dtype == (x * 2).dtype == (2 - x).dtype == low
