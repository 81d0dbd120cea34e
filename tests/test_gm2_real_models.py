"""GM2xx on real code: the logger calls in the forward paths of transformers 4.44 Whisper and T5.

The modeling file shipped in the venv is fixed with `graphmend-lint --fix --select GM2`, loaded
as a sibling module (so its relative imports resolve), and tiny random-weight models built
from configs are run original vs fixed: same eager outputs, gradients and log records, and
fewer compiled graphs.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import sys
import warnings
from pathlib import Path

import pytest
import torch

from graphmend_lint import engine
from graphmend_lint.settings import Settings

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(transformers.__version__ != "4.44.2", reason="sites checked on transformers 4.44.2")


@functools.lru_cache(maxsize=None)
def _fixed(modname: str):
    """(original module, fixed module, findings before the fix)."""
    orig = importlib.import_module(modname)
    src = Path(orig.__file__).read_bytes()
    s = Settings(select=("GM2",))
    findings = engine.check(src, s).findings
    result = engine.check(src, s, fix=True)
    assert result.findings == [] and result.fixed == len(findings)
    package, _, leaf = modname.rpartition(".")
    name = f"{package}._graphmend_fixed_{leaf}"
    if name not in sys.modules:
        mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
        mod.__file__ = orig.__file__.replace(".py", "_fixed.py")
        sys.modules[name] = mod
        exec(compile(result.source, mod.__file__, "exec"), mod.__dict__)
    return orig, sys.modules[name], findings


def _source_line(path: str, line: int) -> str:
    return Path(path).read_text(encoding="utf-8").splitlines()[line - 1].strip()


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.levelno, record.getMessage()))


def _eager(model, kwargs, train: bool = False):
    """Outputs, parameter gradients (train) and log records of one eager call."""
    logging.Logger.warning_once.cache_clear()  # transformers' once-per-process cache
    handler = _Records()
    lib = logging.getLogger("transformers")
    lib.addHandler(handler)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.set_grad_enabled(train):
                out = model(**kwargs).last_hidden_state
                grads = torch.autograd.grad(out.sum(), list(model.parameters()), allow_unused=True) if train else ()
    finally:
        lib.removeHandler(handler)
    return out, grads, handler.seen


def _graphs(model, kwargs, train: bool = False, reasons: list | None = None) -> int:
    """Graphs compiled for one call (a counting backend); break reasons go to `reasons`."""
    count = 0

    def backend(gm, example_inputs):
        nonlocal count
        count += 1
        return gm.forward

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(model, backend=backend)
    with warnings.catch_warnings(), torch.set_grad_enabled(train):
        warnings.simplefilter("ignore")
        compiled(**kwargs)
    if reasons is not None:
        reasons += [r for r, n in torch._dynamo.utils.counters["graph_break"].items() for _ in range(n)]
    torch._dynamo.reset()
    return count


def _pair(orig_mod, fixed_mod, cls: str, config):
    torch.manual_seed(0)
    a = getattr(orig_mod, cls)(config)
    b = getattr(fixed_mod, cls)(config)
    b.load_state_dict(a.state_dict())
    return a, b


def _same_eager(a, b, kwargs, train=False) -> list:
    out_a, grads_a, logs_a = _eager(a, kwargs, train)
    out_b, grads_b, logs_b = _eager(b, kwargs, train)
    assert torch.equal(out_a, out_b)
    assert len(grads_a) == len(grads_b)
    assert all((x is None and y is None) or torch.equal(x, y) for x, y in zip(grads_a, grads_b))
    assert logs_a == logs_b
    return logs_a


WHISPER = dict(vocab_size=64, num_mel_bins=8, encoder_layers=1, decoder_layers=1, d_model=16,
               encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
               max_source_positions=8, max_target_positions=16, pad_token_id=0, bos_token_id=1,
               eos_token_id=2, decoder_start_token_id=1)


@pytest.mark.parametrize("output_attentions,graphs_before", [(False, 3), (True, 12)])
def test_whisper_warning_once_sites(output_attentions, graphs_before):
    orig, fixed, findings = _fixed("transformers.models.whisper.modeling_whisper")
    sites = [_source_line(orig.__file__, f.line) for f in findings]
    assert sites.count("logger.warning_once(") == 4, sites  # 2 decoder, 1 SDPA fallback, 1 flash-attn
    a, b = _pair(orig, fixed, "WhisperModel", transformers.WhisperConfig(**WHISPER))
    a.eval(), b.eval()
    kwargs = dict(input_features=torch.randn(1, 8, 16), decoder_input_ids=torch.tensor([[1, 5, 6]]),
                  output_attentions=output_attentions)
    logs = _same_eager(a, b, kwargs)
    assert any("past_key_values" in msg for _, msg in logs)  # the warning_once site really ran
    assert _graphs(a, kwargs) == graphs_before
    assert _graphs(b, kwargs) == 1


def test_t5_gradient_checkpointing_warning_once():
    orig, fixed, findings = _fixed("transformers.models.t5.modeling_t5")
    sites = [_source_line(orig.__file__, f.line) for f in findings]
    assert "logger.warning_once(" in sites, sites
    config = transformers.T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1,
                                   num_decoder_layers=1, num_heads=2, dropout_rate=0.0,
                                   decoder_start_token_id=0, pad_token_id=0)
    a, b = _pair(orig, fixed, "T5Model", config)
    for m in (a, b):
        m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        m.train()
    kwargs = dict(input_ids=torch.tensor([[3, 4, 5, 1]]), decoder_input_ids=torch.tensor([[0, 3, 4]]), use_cache=True)
    logs = _same_eager(a, b, kwargs, train=True)
    assert any("gradient checkpointing" in msg for _, msg in logs)

    before, after = [], []
    graphs_before = _graphs(a, kwargs, train=True, reasons=before)
    graphs_after = _graphs(b, kwargs, train=True, reasons=after)
    assert sum("logging.Logger" in r for r in before) == 2  # the encoder and decoder stacks
    assert not any("logging.Logger" in r for r in after)
    # Measured: removing the logger breaks lets Dynamo inline the checkpointed decoder layer,
    # where `position_bias.requires_grad = True` (modeling_t5.py:533) breaks instead.
    assert (graphs_before, graphs_after) == (3, 4)
    assert any("requires_grad" in r for r in after)
