"""Run original and fixed fixture code side by side: outputs, gradients, exceptions, side effects, breaks."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Observation:
    output: object = None
    error: tuple[str, str] | None = None
    stdout: str = ""
    logs: list = field(default_factory=list)
    warns: list = field(default_factory=list)
    grads: list = field(default_factory=list)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelno, record.getMessage()))


def _leaves(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _leaves(v)]
    if isinstance(value, dict):
        return [t for k in sorted(value) for t in _leaves(value[k])]
    return []


def observe(fn, args: tuple) -> Observation:
    """Call fn(*args) in eager mode, recording everything a user could see."""
    obs = Observation()
    handler = _Records()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    args = tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                obs.output = fn(*args)
            except Exception as e:  # the exception is part of the behaviour
                obs.error = (type(e).__name__, str(e))
        obs.warns = [(w.category.__name__, str(w.message)) for w in caught]
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    obs.stdout = buf.getvalue()
    obs.logs = handler.records
    outs = [t for t in _leaves(obs.output) if t.requires_grad]
    if outs:
        params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
        inputs = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad] + params
        for p in params:
            p.grad = None
        grads = torch.autograd.grad(sum(o.float().sum() for o in outs), inputs, allow_unused=True)
        obs.grads = [g for g in grads]
    return obs


def same_tensors(a, b) -> bool:
    la, lb = _leaves(a), _leaves(b)
    if len(la) != len(lb):
        return False
    return all(x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(la, lb)) and (
        la or a == b)


def assert_same(orig: Observation, fixed: Observation, where: str) -> None:
    assert orig.error == fixed.error, f"{where}: exception differs: {orig.error} vs {fixed.error}"
    assert same_tensors(orig.output, fixed.output), f"{where}: outputs differ"
    assert orig.stdout == fixed.stdout, f"{where}: stdout differs"
    assert orig.logs == fixed.logs, f"{where}: log records differ"
    assert orig.warns == fixed.warns, f"{where}: warnings differ"
    assert len(orig.grads) == len(fixed.grads), f"{where}: gradient count differs"
    for g1, g2 in zip(orig.grads, fixed.grads):
        assert (g1 is None) == (g2 is None), f"{where}: gradient presence differs"
        if g1 is not None:
            assert torch.equal(g1, g2), f"{where}: gradients differ"


def graph_breaks(fn, args_list: list) -> int:
    """Graph breaks Dynamo reports across all inputs (max over inputs, fresh state each time)."""
    worst = 0
    for args in args_list:
        torch._dynamo.reset()
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                explanation = torch._dynamo.explain(fn)(*args)
            except Exception:
                continue  # an input meant to raise
        # a frame Dynamo skips whole (a break inside a loop) runs all in eager: worse than any break
        worst = max(worst, explanation.graph_break_count if explanation.graph_count else math.inf)
    torch._dynamo.reset()
    return worst
