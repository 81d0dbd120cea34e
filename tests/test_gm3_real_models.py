"""GM3xx on real transformers 4.44 code: CTC label checks and Mistral's 4-D attention-mask check.

Each modeling file is fixed by graphmend-lint (GM3 rules only), loaded as a sibling module, and
compared with the original on tiny random-weight models built from configs (no downloads): eager
outputs and exceptions identical, fewer graphs under torch.compile, the check still fires there.
"""
from __future__ import annotations

import re

import importlib
import importlib.util
import sys
import warnings

import pytest
import torch
from torch._dynamo.utils import counters

from graphmend_lint import engine
from graphmend_lint.settings import Settings

transformers = pytest.importorskip("transformers")

GM3 = Settings(select=("GM3",))
AUDIO = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8),
             conv_stride=(4, 4), conv_kernel=(8, 8), num_feat_extract_layers=2, num_conv_pos_embeddings=4,
             num_conv_pos_embedding_groups=2, vocab_size=12)

def unwrap(text: str) -> str:
    """Fixed lines are wrapped as `ruff format` would: their one-line form, for substring checks."""
    text = re.sub(r"\(\n\s*", "(", text)
    text = re.sub(r",?\n\s*\)", ")", text)
    return re.sub(r",\n\s*", ", ", text)



def fixed_module(name: str):
    """(original module, fixed module, findings before the fix)."""
    orig = importlib.import_module(name)
    with open(orig.__file__, "rb") as fh:
        source = fh.read()
    result = engine.check(source, GM3, fix=True)
    assert result.fixed >= 1 and not result.findings, [(f.code, f.line, f.message) for f in result.findings]
    spec = importlib.util.spec_from_loader(name + "_gm3fixed", loader=None)
    fixed = importlib.util.module_from_spec(spec)
    fixed.__package__ = orig.__package__  # relative imports resolve to the real package
    fixed.__file__ = orig.__file__
    sys.modules[spec.name] = fixed
    exec(compile(result.source, f"{orig.__file__} (fixed)", "exec"), fixed.__dict__)
    return orig, fixed, result.source.decode("utf-8")


def run(fn, kwargs, compiled: bool = False):
    """(output, exception, (graphs, breaks)) for one call: graphs counted by a backend, breaks as
    Dynamo logs them (a break before a frame's first op makes no graph but is logged)."""
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    if compiled:
        torch._dynamo.reset()
        counters.clear()
        fn = torch.compile(fn, backend=counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out, err = fn(**kwargs), None
        except Exception as e:  # the behaviour under test
            out, err = None, e
    return out, err, (len(graphs), sum(counters["graph_break"].values()))


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if hasattr(a, "to_tuple"):
        return same(a.to_tuple(), b.to_tuple())
    return a == b


def check_pair(orig, fixed, good: dict, bad: dict, message: str) -> tuple[tuple, tuple]:
    """Eager: identical results and exceptions. Compiled: fewer graphs, the check still fires."""
    for kwargs in (good, bad):
        o, f = run(orig, kwargs), run(fixed, kwargs)
        assert (type(o[1]), str(o[1])) == (type(f[1]), str(f[1]))
        assert same(o[0], f[0])
    assert str(run(orig, bad)[1]).startswith(message)
    _, err_before, before = run(orig, good, compiled=True)
    out, err_after, after = run(fixed, good, compiled=True)
    assert err_before is None and err_after is None
    # a data-dependent jump ends a graph but is not in counters["graph_break"]; a break before a
    # frame's first op is logged there but makes no graph: fewer graphs, and no more logged breaks
    assert after[0] < before[0] and after[1] <= before[1], (before, after)
    _, err, _ = run(fixed, bad, compiled=True)
    assert isinstance(err, RuntimeError) and str(err).startswith(message), repr(err)
    torch._dynamo.reset()
    return before, after


CTC = [
    ("transformers.models.wav2vec2.modeling_wav2vec2", "Wav2Vec2ForCTC", "Wav2Vec2Config"),
    ("transformers.models.hubert.modeling_hubert", "HubertForCTC", "HubertConfig"),
    ("transformers.models.data2vec.modeling_data2vec_audio", "Data2VecAudioForCTC", "Data2VecAudioConfig"),
]


@pytest.mark.parametrize("module,cls,config", CTC, ids=[c[1] for c in CTC])
def test_ctc_label_check(module, cls, config):
    orig_mod, fixed_mod, source = fixed_module(module)
    assert "torch._assert_async(torch.logical_not(labels.max() >= self.config.vocab_size)" in unwrap(source)
    cfg = getattr(transformers, config)(**AUDIO)
    torch.manual_seed(0)
    orig = getattr(orig_mod, cls)(cfg).eval()
    fixed = getattr(fixed_mod, cls)(cfg).eval()
    fixed.load_state_dict(orig.state_dict())
    x = torch.randn(2, 400)
    good = dict(input_values=x, labels=torch.tensor([[1, 2, 3], [4, 11, -100]]))
    bad = dict(input_values=x, labels=torch.tensor([[1, 12, 3], [4, 5, -100]]))
    before, after = check_pair(orig, fixed, good, bad, "Label values must be <= vocab_size: ")
    print(f"{cls}: (graphs, breaks) {before} -> {after}")


def test_mistral_4d_attention_mask_check():
    orig_mod, fixed_mod, source = fixed_module("transformers.models.mistral.modeling_mistral")
    assert "torch._assert_async(torch.logical_not(attention_mask.max() != 0)" in unwrap(source)
    cfg = transformers.MistralConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                                     attn_implementation="eager")
    torch.manual_seed(0)
    orig = orig_mod.MistralModel(cfg).eval()
    fixed = fixed_mod.MistralModel(cfg).eval()
    fixed.load_state_dict(orig.state_dict())
    ids = torch.randint(0, 32, (1, 5))
    causal = torch.full((5, 5), torch.finfo(torch.float32).min).triu(1)[None, None]
    good = dict(input_ids=ids, attention_mask=causal, use_cache=False)
    bad = dict(input_ids=ids, attention_mask=(causal == 0).float(), use_cache=False)  # not inverted
    before, after = check_pair(orig, fixed, good, bad, "Custom 4D attention mask should be passed in inverted form")
    print(f"MistralModel (4-D mask): (graphs, breaks) {before} -> {after}")
