"""GM1xx on real transformers 4.44.2 code: BART's fp16 overflow clamp (safe fix) and Phi-3's
LongRoPE factor choice (safe compile-only fix), on tiny random-weight models built from configs.

The fixed copy of each modeling file is produced by the engine (what `check --fix` runs) and loaded as a sibling module of the
original (`transformers.models.<family>.<name>_gm1`) so its relative imports resolve.
"""
from __future__ import annotations

import re

import contextlib
import importlib.util
import io
import sys
import warnings
from pathlib import Path

import pytest
import torch

from graphmend_lint import engine
from graphmend_lint.settings import Settings

transformers = pytest.importorskip("transformers")
TRANSFORMERS = Path(transformers.__file__).parent

def unwrap(text: str) -> str:
    """Fixed lines are wrapped as `ruff format` would: their one-line form, for substring checks."""
    text = re.sub(r"\(\n\s*", "(", text)
    text = re.sub(r",?\n\s*\)", ")", text)
    return re.sub(r",\n\s*", ", ", text)



def _fixed_module(tmp_path, family: str, name: str, unsafe: bool):
    """(fixed module, fixed source, findings on the original) for one transformers modeling file."""
    source = (TRANSFORMERS / "models" / family / f"{name}.py").read_bytes()
    gm1 = Settings(select=("GM1",), unsafe_fixes=unsafe)
    report = "\n".join(f"{f.code} fix={f.safety.value} {f.message}" for f in engine.check(source, gm1).findings)
    text = engine.check(source, gm1, fix=True).source.decode("utf-8")
    dst = tmp_path / f"{name}_gm1.py"
    dst.write_text(text, encoding="utf-8")
    mod_name = f"transformers.models.{family}.{name}_gm1"
    spec = importlib.util.spec_from_file_location(mod_name, dst)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    return module, text, report


def _breaks(model, **kwargs) -> int:
    torch._dynamo.reset()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        explanation = torch._dynamo.explain(model)(**kwargs)
    torch._dynamo.reset()
    return explanation.graph_break_count


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.isnan(), b.isnan()) and \
        torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))


def test_bart_fp16_clamp_fixed_safely(tmp_path):
    from transformers.models.bart import modeling_bart as original

    fixed, text, report = _fixed_module(tmp_path, "bart", "modeling_bart", unsafe=False)
    assert "GM101 fix=safe" in report and "fix: torch.where" in report
    assert "if hidden_states.dtype == torch.float16:\n" in text
    assert "torch.where(torch.logical_or(torch.isinf(hidden_states).any(), torch.isnan(hidden_states).any())" in unwrap(text)
    cfg = transformers.BartConfig(vocab_size=64, d_model=16, encoder_layers=2, decoder_layers=1,
                                  encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                                  decoder_ffn_dim=32, max_position_embeddings=32)
    torch.manual_seed(0)
    before = original.BartModel(cfg).half().eval()  # eval: no dropout draws; gradients still flow
    after = fixed.BartModel(cfg).half().eval()
    after.load_state_dict(before.state_dict())
    ids = torch.randint(3, 64, (2, 7))
    # fp16 on CPU: every op here has a Half CPU kernel in torch 2.13 (forward and backward)
    for overflow in (False, True):
        if overflow:  # push encoder layer 0 past fp16 range so the clamp branch really runs
            for m in (before, after):
                with torch.no_grad():
                    m.encoder.layers[0].final_layer_norm.weight.fill_(60000.0)  # normalised values ~2 -> inf
        seen = {}
        hook = before.encoder.layers[0].final_layer_norm.register_forward_hook(
            lambda mod, inp, out: seen.update(inf=bool(torch.isinf(out).any())))
        outs = []
        for m in (before, after):
            m.zero_grad()
            out = m(input_ids=ids)
            out.last_hidden_state.float().sum().backward()
            outs.append((out, [p.grad for p in m.parameters()]))
        hook.remove()
        assert seen["inf"] == overflow
        (o1, g1), (o2, g2) = outs
        assert _same(o1.last_hidden_state, o2.last_hidden_state)
        assert _same(o1.encoder_last_hidden_state, o2.encoder_last_hidden_state)
        assert all((a is None) == (b is None) and (a is None or _same(a, b)) for a, b in zip(g1, g2))
        if overflow:
            assert not torch.isinf(o2.encoder_last_hidden_state).any()
    broken, unbroken = _breaks(before, input_ids=ids), _breaks(after, input_ids=ids)
    print(f"BART fp16 graph breaks: {broken} -> {unbroken}")
    assert broken >= 2 and unbroken == 0  # one clamp per encoder layer, plus their resume jumps
    torch._dynamo.reset()
    with torch.no_grad():
        whole = torch.compile(after, fullgraph=True, backend="eager")(input_ids=ids).last_hidden_state
        assert _same(whole, after(input_ids=ids).last_hidden_state)
    torch._dynamo.reset()


def test_phi3_longrope_choice_fixed_safely(tmp_path):
    from transformers.models.phi3 import modeling_phi3 as original

    fixed, text, report = _fixed_module(tmp_path, "phi3", "modeling_phi3", unsafe=False)
    # compile-only: eager runs the `if`; while tracing, the number, the factor lists (so that
    # `torch.tensor` cannot raise on the untaken side) and the shapes are checked
    assert "GM101 fix=safe" in report and "GM101 fix=unsafe" not in report
    assert "and all(isinstance(v, (int, float)) for v in self.short_factor)" in unwrap(text)
    assert "ext_factors = torch.where(cond, ext_factors_if, ext_factors_else)" in unwrap(text)
    cfg = transformers.Phi3Config(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=32, original_max_position_embeddings=8, pad_token_id=0,
        rope_scaling={"type": "longrope", "short_factor": [1.0, 1.1, 1.2, 1.3], "long_factor": [2.0, 3.0, 4.0, 5.0]})
    torch.manual_seed(0)
    before = original.Phi3ForCausalLM(cfg).eval()
    after = fixed.Phi3ForCausalLM(cfg).eval()
    after.load_state_dict(before.state_dict())
    for length in (5, 12):  # short and long factors (original_max_position_embeddings = 8)
        ids = torch.randint(1, 64, (1, length))
        with torch.no_grad():
            want = before(input_ids=ids, use_cache=False).logits
            assert torch.equal(want, after(input_ids=ids, use_cache=False).logits)
            torch._dynamo.reset()
            got = torch.compile(after, backend="aot_eager")(input_ids=ids, use_cache=False).logits
            torch._dynamo.reset()
            assert torch.allclose(want, got, rtol=1e-5, atol=1e-6)
    broken, unbroken = _breaks(before, input_ids=ids, use_cache=False), _breaks(after, input_ids=ids, use_cache=False)
    print(f"Phi-3 LongRoPE graph breaks: {broken} -> {unbroken}")
    assert unbroken < broken  # what is left: `logger.warning_once` in Phi3Attention (GM202, not selected here)
