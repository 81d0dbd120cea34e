"""Held-out check on whole packages (issues 23 and 24): fix a copy of transformers 4.44.2 (or diffusers
0.42.1) with the CLI's default safe fixes, then run tiny random-weight models from the original and the
fixed copy, each in its own process, and compare.

    python perf/real_models.py                                   # transformers: fix a copy, run every model
    python perf/real_models.py --fixed /tmp/tf-fixed             # reuse (or make) the fixed copy there
    python perf/real_models.py --models bart,t5 --modes eval     # some of them
    python perf/real_models.py --suite diffusers --tp /work/tp/diffusers --fixed /tmp/df-fixed
    python perf/real_models.py --tp /work/tp/t518 --out perf/results/real_models_t518 -j 1   # another transformers
    python perf/real_models.py --report                          # report.md again from the JSON files
    python perf/real_models.py --unsafe --fixed /tmp/tf-unsafe --out perf/results/real_models_unsafe   # with --unsafe-fixes

Per model and mode (eval: forward under no_grad; train: forward + backward of the sum of the floating
outputs, dropout on, the same seed for every run):
  * eager: the original vs the fixed copy, outputs and (train) parameter gradients, bitwise (NaN-aware);
  * compiled, torch.compile(backend="aot_eager"): eval, the fixed copy's compiled output vs the original
    eager output (and the original's compiled output, as the baseline); train, compiled original vs
    compiled fixed (the same seed: dropout draws the same numbers);
  * graph breaks from Dynamo's graph_breaks log (graphmend_lint.verify.recorder.Recorder): distinct sites
    and every logged break, by class (a: data-dependent branching, b: print/logging/warnings,
    c: tensor -> Python value such as .item()/.tolist(), other), graphs compiled, crashes.
Weights: the original's child saves its state_dict, the fixed copy's child loads it; torch.seed() (Reformer's
reversible layers call it in train mode) is made deterministic in the children, the same for both copies. Import isolation:
the fixed copy is first on sys.path in its child (the child records which package it imported).
The diffusers suite also checks that every diffusers module that imported without torch (a blocked
`import torch`) before the fix still does after it. Results: perf/results/real_models/.
With --tp, the transformers suite runs the transformers found there (pip --target with its dependencies, such as
5.18.0 in perf/results/real_models_t518/; --out is then required). A factory whose class or config the package
does not have (AttributeError, ImportError while building) is recorded as skipped with the reason.
"""
from __future__ import annotations

import argparse
import datetime
import filecmp
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = HERE / "results" / "real_models"
PY = sys.executable

CLASSES = ("a", "b", "c", "other")
CLASS_NAMES = {"a": "data-dependent branching", "b": "print/logging/warnings",
               "c": "tensor -> Python value (.item(), .tolist(), ...)", "other": "other"}

# ----------------------------------------------------------------------------------------------- models
# name -> (factory, dtype name, note). Factories take the package module and return (model, inputs list):
# inputs[0] is used in train mode; eval runs every entry.
_SEQ = 16


def _ids(lo=3, hi=128, shape=(2, _SEQ), seed=1):
    import torch
    return torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed))


def _seq2seq(tf, model, config, **extra):
    cfg = getattr(tf, config)(
        vocab_size=128, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
        pad_token_id=1, decoder_start_token_id=2, **extra)
    m = getattr(tf, model)(cfg)
    return m, [{"input_ids": _ids(), "decoder_input_ids": _ids(shape=(2, 8), seed=2), "use_cache": False}]


def m_bart(tf):
    return _seq2seq(tf, "BartModel", "BartConfig")


def m_mbart(tf):
    return _seq2seq(tf, "MBartModel", "MBartConfig")


def m_pegasus(tf):
    return _seq2seq(tf, "PegasusModel", "PegasusConfig")


def m_marian(tf):
    return _seq2seq(tf, "MarianModel", "MarianConfig")


def m_blenderbot(tf):
    return _seq2seq(tf, "BlenderbotModel", "BlenderbotConfig")


def m_fsmt(tf):
    cfg = tf.FSMTConfig(langs=["en", "de"], src_vocab_size=128, tgt_vocab_size=128, d_model=32, encoder_layers=2,
                        decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
                        encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1,
                        decoder_start_token_id=2)
    return tf.FSMTModel(cfg), [{"input_ids": _ids(), "decoder_input_ids": _ids(shape=(2, 8), seed=2),
                                "use_cache": False}]


def m_whisper(tf):
    import torch
    cfg = tf.WhisperConfig(
        vocab_size=128, num_mel_bins=16, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_source_positions=16, max_target_positions=32, pad_token_id=1, decoder_start_token_id=2,
        bos_token_id=2, eos_token_id=3, dropout=0.1, attention_dropout=0.1)
    feats = torch.randn(2, 16, 32, generator=torch.Generator().manual_seed(1))
    return tf.WhisperModel(cfg), [{"input_features": feats, "decoder_input_ids": _ids(4, 128, (2, 8), 2),
                                   "use_cache": False}]


def m_t5(tf):
    cfg = tf.T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                      num_heads=4, decoder_start_token_id=0, pad_token_id=0)
    return tf.T5Model(cfg), [{"input_ids": _ids(1), "decoder_input_ids": _ids(1, 128, (2, 8), 2),
                              "use_cache": False}]


def _audio_cfg(tf, config, **extra):
    return getattr(tf, config)(
        vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=4, **extra)


def _wav():
    import torch
    return torch.randn(2, 1600, generator=torch.Generator().manual_seed(1))


def m_wav2vec2(tf):
    cfg = _audio_cfg(tf, "Wav2Vec2Config", layerdrop=0.5, mask_time_prob=0.05, mask_time_length=2)
    return tf.Wav2Vec2Model(cfg), [{"input_values": _wav()}]


def m_wav2vec2_pretraining(tf):
    """The contrastive loss with its `if neg_is_pos.any(): logits[1:][neg_is_pos] = -inf` guard; masks and
    negatives drawn here (numpy) and passed in. A codebook of 2 x 2 entries: some negative equals its positive
    (the guard's test is True; where it is False the update selects nothing, tests/test_gm1_compiled.py)."""
    import numpy as np
    import torch
    from transformers.models.wav2vec2 import modeling_wav2vec2 as mw
    cfg = _audio_cfg(tf, "Wav2Vec2Config", layerdrop=0.0, mask_time_prob=0.5, mask_time_length=2,
                     num_codevectors_per_group=2, num_codevector_groups=2, codevector_dim=16,
                     proj_codevector_dim=16, num_negatives=4)
    m = tf.Wav2Vec2ForPreTraining(cfg)
    wav = _wav()
    frames = int(m._get_feat_extract_output_lengths(wav.shape[1]))
    np.random.seed(0)
    mask = mw._compute_mask_indices((2, frames), mask_prob=0.5, mask_length=2, min_masks=2)
    negatives = mw._sample_negative_indices((2, frames), cfg.num_negatives, mask_time_indices=mask)
    return m, [{"input_values": wav, "mask_time_indices": torch.tensor(mask, dtype=torch.bool),
                "sampled_negative_indices": torch.tensor(negatives, dtype=torch.long)}]


def m_hubert(tf):
    cfg = _audio_cfg(tf, "HubertConfig", layerdrop=0.5, mask_time_prob=0.05, mask_time_length=2)
    return tf.HubertModel(cfg), [{"input_values": _wav()}]


def m_speecht5(tf):
    cfg = tf.SpeechT5Config(
        vocab_size=128, hidden_size=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, conv_dim=(16, 16),
        conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=2,
        max_speech_positions=400, max_text_positions=64, encoder_layerdrop=0.5, decoder_layerdrop=0.5,
        mask_time_prob=0.05, mask_time_length=2, pad_token_id=1, decoder_start_token_id=2)
    return tf.SpeechT5ForSpeechToText(cfg), [{"input_values": _wav(), "decoder_input_ids": _ids(4, 128, (2, 8), 2),
                                              "use_cache": False}]


def m_xlm(tf):
    cfg = tf.XLMConfig(vocab_size=128, emb_dim=32, n_layers=2, n_heads=4, max_position_embeddings=64)
    return tf.XLMModel(cfg), [{"input_ids": _ids()}]


def m_reformer(tf):
    cfg = tf.ReformerConfig(
        vocab_size=128, hidden_size=32, num_attention_heads=2, attention_head_size=16, feed_forward_size=64,
        attn_layers=["local", "lsh"], axial_pos_shape=[4, 4], axial_pos_embds_dim=[16, 16],
        max_position_embeddings=16, local_attn_chunk_length=4, lsh_attn_chunk_length=4, num_buckets=2,
        num_hashes=1, is_decoder=False, pad_token_id=0, hidden_dropout_prob=0.1)
    return tf.ReformerModel(cfg), [{"input_ids": _ids()}]


def m_visual_bert(tf):
    import torch
    cfg = tf.VisualBertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=64, visual_embedding_dim=16, max_position_embeddings=64)
    vis = torch.randn(2, 4, 16, generator=torch.Generator().manual_seed(3))
    return tf.VisualBertModel(cfg), [{"input_ids": _ids(), "visual_embeds": vis}]


def m_longformer(tf):
    import torch
    cfg = tf.LongformerConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        attention_window=[4, 4], max_position_embeddings=80, pad_token_id=1, sep_token_id=2)
    ids = _ids()
    glob = torch.zeros_like(ids)
    glob[:, 0] = 1
    return tf.LongformerModel(cfg), [{"input_ids": ids, "global_attention_mask": glob}, {"input_ids": ids}]


def m_phi3(tf):
    import torch
    cfg = tf.Phi3Config(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, max_position_embeddings=64, original_max_position_embeddings=16,
        rope_scaling={"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0, 2.5, 3.0, 4.0]},
        pad_token_id=0, bos_token_id=1, eos_token_id=2, attention_dropout=0.1, resid_pdrop=0.1,
        attn_implementation="eager")
    ids = _ids(shape=(2, 8))
    pos = torch.arange(8).unsqueeze(0).repeat(2, 1)
    return tf.Phi3ForCausalLM(cfg), [{"input_ids": ids, "position_ids": pos, "labels": ids, "use_cache": False},
                                     {"input_ids": ids, "position_ids": pos + 20, "use_cache": False}]


def _decoder(tf, config, model, attn="sdpa", **extra):
    import torch
    cfg = getattr(tf, config)(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                              pad_token_id=0, **extra)
    cfg._attn_implementation = attn
    ids = _ids(shape=(2, 8))
    pad = torch.ones_like(ids)
    pad[1, :2] = 0
    return getattr(tf, model)(cfg), [{"input_ids": ids, "attention_mask": pad, "labels": ids, "use_cache": False},
                                     {"input_ids": ids, "use_cache": False}]


def m_llama(tf):
    return _decoder(tf, "LlamaConfig", "LlamaForCausalLM", attention_dropout=0.1)


def m_mistral(tf):
    return _decoder(tf, "MistralConfig", "MistralForCausalLM", attention_dropout=0.1)


def m_mixtral(tf):
    return _decoder(tf, "MixtralConfig", "MixtralForCausalLM", attn="eager", num_local_experts=4,
                    num_experts_per_tok=2)


def m_gpt2(tf):
    import torch
    cfg = tf.GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    ids = _ids(shape=(2, 8))
    mask = torch.ones_like(ids)
    mask[1, :2] = 0
    return tf.GPT2LMHeadModel(cfg), [{"input_ids": ids, "attention_mask": mask, "labels": ids, "use_cache": False}]


def _encoder(tf, config, model, **extra):
    import torch
    kw = {"vocab_size": 128, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "max_position_embeddings": 64}
    kw.update(extra)
    cfg = getattr(tf, config)(**kw)
    ids = _ids()
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0
    return getattr(tf, model)(cfg), [{"input_ids": ids, "attention_mask": mask}]


def m_bert(tf):
    return _encoder(tf, "BertConfig", "BertModel", pad_token_id=0)


def m_roberta(tf):
    return _encoder(tf, "RobertaConfig", "RobertaModel", pad_token_id=1)


def m_electra(tf):
    return _encoder(tf, "ElectraConfig", "ElectraModel", embedding_size=16)


def m_distilbert(tf):
    cfg = tf.DistilBertConfig(vocab_size=128, dim=32, hidden_dim=64, n_layers=2, n_heads=4, max_position_embeddings=64)
    return tf.DistilBertModel(cfg), [{"input_ids": _ids()}]


def m_mobilebert(tf):
    return _encoder(tf, "MobileBertConfig", "MobileBertModel", hidden_size=32, embedding_size=16,
                    intra_bottleneck_size=16, true_hidden_size=16, num_attention_heads=2, intermediate_size=32,
                    num_feedforward_networks=2)


def m_deberta_v2(tf):
    import torch
    m, inp = _encoder(tf, "DebertaV2Config", "DebertaV2ForSequenceClassification", num_labels=3)
    inp[0]["labels"] = torch.tensor([0, 2])
    return m, inp


def m_funnel(tf):
    cfg = tf.FunnelConfig(vocab_size=128, block_sizes=[1, 1], num_decoder_layers=1, d_model=32, n_head=2, d_head=16,
                          d_inner=64, max_position_embeddings=64)
    return tf.FunnelModel(cfg), [{"input_ids": _ids()}]


def m_switch(tf):
    cfg = tf.SwitchTransformersConfig(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                                      num_heads=4, num_experts=4, encoder_sparse_step=1, decoder_sparse_step=1)
    return tf.SwitchTransformersModel(cfg), [{"input_ids": _ids(shape=(2, 8)),
                                              "decoder_input_ids": _ids(shape=(2, 4), seed=2), "use_cache": False}]


def m_bart_flip(tf):
    """BART taking the other side of its fixed branches: LayerDrop 0.5 (train) and the fp16 overflow clamp of
    encoder layer 0 (its final_layer_norm weight 60000 overflows fp16: the clamp runs)."""
    import torch
    m, inp = _seq2seq(tf, "BartModel", "BartConfig", encoder_layerdrop=0.5, decoder_layerdrop=0.5)
    with torch.no_grad():
        m.encoder.layers[0].final_layer_norm.weight.fill_(60000.0)
    return m, inp


def m_whisper_flip(tf):
    """Whisper (pre-LN) with LayerDrop 0.5 and encoder layer 0's fc2 scaled so fp16 overflows: the clamp runs."""
    import torch
    m, inp = m_whisper(tf)
    m.config.encoder_layerdrop = m.config.decoder_layerdrop = 0.5
    m.encoder.layerdrop = m.decoder.layerdrop = 0.5
    with torch.no_grad():
        m.encoder.layers[0].fc2.weight.fill_(5000.0)
        m.encoder.layers[0].fc2.bias.fill_(64000.0)
    return m, inp


def m_fsmt_flip(tf):
    m, inp = m_fsmt(tf)
    m.config.encoder_layerdrop = m.config.decoder_layerdrop = 0.5
    m.encoder.layerdrop = m.decoder.layerdrop = 0.5
    return m, inp


# name -> (factory, dtype): fp16 where the family has an fp16-only branch (the overflow clamps)
TRANSFORMERS = {
    "bart": (m_bart, "float16"), "mbart": (m_mbart, "float16"), "pegasus": (m_pegasus, "float16"),
    "marian": (m_marian, "float16"), "blenderbot": (m_blenderbot, "float16"), "fsmt": (m_fsmt, "float32"),
    "whisper": (m_whisper, "float16"), "t5": (m_t5, "float16"), "switch_transformers": (m_switch, "float16"),
    "wav2vec2": (m_wav2vec2, "float32"), "hubert": (m_hubert, "float32"), "speecht5": (m_speecht5, "float32"),
    "xlm": (m_xlm, "float32"), "reformer": (m_reformer, "float32"), "visual_bert": (m_visual_bert, "float32"),
    "longformer": (m_longformer, "float32"), "phi3": (m_phi3, "float32"), "llama": (m_llama, "float32"),
    "mistral": (m_mistral, "float32"), "mixtral": (m_mixtral, "float32"), "gpt2": (m_gpt2, "float32"),
    "bert": (m_bert, "float32"), "roberta": (m_roberta, "float32"), "electra": (m_electra, "float32"),
    "distilbert": (m_distilbert, "float32"), "mobilebert": (m_mobilebert, "float32"),
    "deberta_v2": (m_deberta_v2, "float32"), "funnel": (m_funnel, "float32"),
    "bart_flip": (m_bart_flip, "float16"), "whisper_flip": (m_whisper_flip, "float16"),
    "fsmt_flip": (m_fsmt_flip, "float32"),
    "wav2vec2_pretraining": (m_wav2vec2_pretraining, "float32"),
}


# diffusers: factories take the diffusers module
def d_unet2d(df):
    import torch
    m = df.UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                       block_out_channels=(16, 32), norm_num_groups=8, attention_head_dim=8,
                       down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
                       dropout=0.1)
    g = torch.Generator().manual_seed(1)
    return m, [{"sample": torch.randn(2, 3, 16, 16, generator=g), "timestep": torch.tensor([10, 500])}]


def d_unet2d_cond(df):
    import torch
    m = df.UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(16, 32),
        norm_num_groups=8, cross_attention_dim=16, attention_head_dim=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
    g = torch.Generator().manual_seed(1)
    return m, [{"sample": torch.randn(2, 4, 16, 16, generator=g), "timestep": torch.tensor([10, 500]),
                "encoder_hidden_states": torch.randn(2, 6, 16, generator=g)}]


def d_autoencoder_kl(df):
    import torch
    m = df.AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                         up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(16, 32), layers_per_block=1,
                         latent_channels=4, norm_num_groups=8, sample_size=16)
    g = torch.Generator().manual_seed(1)
    return m, [{"sample": torch.randn(2, 3, 16, 16, generator=g), "sample_posterior": False}]


def d_dit(df):
    import torch
    m = df.DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4,
                                 num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=10, norm_num_groups=8,
                                 dropout=0.1)
    g = torch.Generator().manual_seed(1)
    return m, [{"hidden_states": torch.randn(2, 4, 8, 8, generator=g), "timestep": torch.tensor([1, 5]),
                "class_labels": torch.tensor([0, 3])}]


def d_flux(df):
    import torch
    m = df.FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
                                  attention_head_dim=8, num_attention_heads=2, joint_attention_dim=16,
                                  pooled_projection_dim=16, axes_dims_rope=(2, 2, 4))
    g = torch.Generator().manual_seed(1)
    n_img, n_txt = 16, 4
    img_ids = torch.zeros(n_img, 3)
    img_ids[:, 1] = torch.arange(n_img) // 4
    img_ids[:, 2] = torch.arange(n_img) % 4
    return m, [{"hidden_states": torch.randn(2, n_img, 16, generator=g),
                "encoder_hidden_states": torch.randn(2, n_txt, 16, generator=g),
                "pooled_projections": torch.randn(2, 16, generator=g), "timestep": torch.tensor([0.5, 0.25]),
                "img_ids": img_ids, "txt_ids": torch.zeros(n_txt, 3)}]


def d_unet2d_cond_warn(df):
    """The fixed logging paths: a LoRA `scale` without the PEFT backend (utils/peft_utils.py) and a kwarg no
    attention processor takes (models/attention_processor.py)."""
    m, inp = d_unet2d_cond(df)
    inp[0]["cross_attention_kwargs"] = {"scale": 0.5, "unused_kwarg": 1}
    return m, inp


def d_flux_warn(df):
    """The fixed logging paths of transformer_flux.py: 3-d txt_ids/img_ids (deprecated), a LoRA `scale`
    without PEFT, an unused joint_attention_kwargs key."""
    m, inp = d_flux(df)
    inp[0]["txt_ids"] = inp[0]["txt_ids"][None]
    inp[0]["img_ids"] = inp[0]["img_ids"][None]
    inp[0]["joint_attention_kwargs"] = {"scale": 0.5, "unused_kwarg": 1}
    return m, inp


def d_transformer2d_warn(df):
    """Transformer2DModel (continuous input, cross-attention): the deprecated `scale` warning of
    models/transformers/transformer_2d.py."""
    import torch
    m = df.Transformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=16, num_layers=1,
                              norm_num_groups=8, cross_attention_dim=16, dropout=0.1)
    g = torch.Generator().manual_seed(1)
    return m, [{"hidden_states": torch.randn(2, 16, 4, 4, generator=g),
                "encoder_hidden_states": torch.randn(2, 6, 16, generator=g),
                "cross_attention_kwargs": {"scale": 0.5}}]


DIFFUSERS = {"unet2d": (d_unet2d, "float32"), "unet2d_condition": (d_unet2d_cond, "float32"),
             "autoencoder_kl": (d_autoencoder_kl, "float32"), "dit": (d_dit, "float32"),
             "flux": (d_flux, "float32"), "unet2d_condition_warn": (d_unet2d_cond_warn, "float32"),
             "flux_warn": (d_flux_warn, "float32"), "transformer2d_warn": (d_transformer2d_warn, "float32")}

SUITES = {"transformers": TRANSFORMERS, "diffusers": DIFFUSERS}


# ------------------------------------------------------------------------------------------------ child
def _flatten(out, prefix="out"):
    """Every tensor of a model output (ModelOutput, tuple, dict), with a path name."""
    import torch
    if isinstance(out, torch.Tensor):
        return [(prefix, out)]
    if hasattr(out, "to_tuple"):
        out = {k: v for k, v in out.items()}
    if isinstance(out, dict):
        return [t for k, v in out.items() for t in _flatten(v, f"{prefix}.{k}")]
    if isinstance(out, (list, tuple)):
        return [t for i, v in enumerate(out) for t in _flatten(v, f"{prefix}.{i}")]
    return []


_SEEDS = iter(())


def _det_seed() -> int:
    """Stands in for torch.seed() in the children: Reformer's reversible layers call torch.seed() in train mode
    (a fresh OS-random seed, so two runs of the same code differ); this gives the next seed of a sequence
    restarted by every _seed() call, the same in the original and the fixed copy."""
    import torch
    s = next(_SEEDS)
    torch.manual_seed(s)
    return s


def _seed(seed):
    import itertools
    import random

    import numpy as np
    import torch
    global _SEEDS
    _SEEDS = itertools.count(seed * 1000 + 1)
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def _run(model, fn, inp, train, seed):
    """One call (eval: no_grad; train: forward + backward of the floating outputs' sum) -> {name: tensor}."""
    import torch
    _seed(seed)
    model.zero_grad(set_to_none=True)
    with torch.set_grad_enabled(train):
        out = fn(**inp)
        ts = _flatten(out)
        res = {k: v.detach().clone() for k, v in ts}
        if train:
            loss = sum(v.float().sum() for _, v in ts if v.requires_grad and v.is_floating_point())
            loss.backward()
            for n, p in model.named_parameters():
                if p.grad is not None:
                    res[f"grad.{n}"] = p.grad.detach().clone()
    return res


class _Records:
    """Log records (the package's loggers) and warnings emitted inside the block, as text."""

    def __init__(self, pkg: str) -> None:
        self.pkg, self.seen = pkg, []

    def __enter__(self):
        import logging
        import warnings

        once = getattr(logging.Logger, "warning_once", None)  # transformers' once-per-process cache
        if hasattr(once, "cache_clear"):
            once.cache_clear()
        outer = self

        class H(logging.Handler):
            def emit(self, record):
                outer.seen.append(f"log {record.levelname} {record.name}: {record.getMessage()[:160]}")

        self.h = H(logging.DEBUG)
        self.logger = logging.getLogger(self.pkg)
        self.logger.addHandler(self.h)
        self.level = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.cw = warnings.catch_warnings(record=True)
        self.w = self.cw.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self.cw.__exit__(*exc)
        self.seen += [f"warn {w.category.__name__}: {str(w.message)[:160]}" for w in self.w]
        self.logger.removeHandler(self.h)
        self.logger.setLevel(self.level)


def _classify(site: dict, text: str) -> str:
    reason = (site.get("reason") or "").lower()
    t = text.replace(" ", "")
    if any(s in reason for s in ("print", "logging", "logger", "warning", "warn(")) or \
            any(s in t for s in ("print(", "logger.", "logging.", "warnings.warn", "warn(")):
        return "b"
    if any(s in reason for s in (".item()", "tolist", "item()", "numpy", "tensor.__bool__", "scalar outputs",
                                 "data dependent operator", "data-dependent operator")) or \
            any(s in t for s in (".item()", ".tolist()", ".numpy()", ".cpu().numpy")):
        return "c"
    if "data-dependent branching" in reason or "data dependent branching" in reason or "generic_jump" in reason:
        return "a"
    return "other"


def _rel(path: str, pkg: str) -> str:
    marker = f"/{pkg}/"
    if marker in path:
        return pkg + "/" + path.rsplit(marker, 1)[1]
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1]
    return path


def child(a) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    pkg = a.suite
    for p in reversed(a.path or []):
        sys.path.insert(0, p)
    if pkg == "diffusers":
        sys.modules["transformers"] = None  # transformers 4.44.2 rejects the hub diffusers needs; not used here
    sys.path.insert(len(a.path or []), str(REPO))  # after the package copy, before site-packages
    import importlib
    import linecache
    import warnings

    import torch
    import torch._dynamo
    from graphmend_lint.verify.recorder import Recorder

    torch.set_num_threads(1)
    torch.seed = _det_seed  # see _det_seed
    warnings.simplefilter("ignore")
    mod = importlib.import_module(pkg)
    factory, dtype = SUITES[pkg][a.child]
    work = Path(a.work)
    res: dict = {"model": a.child, "variant": a.variant, "package_file": mod.__file__, "dtype": dtype,
                 "modes": {}, "crash": None}
    tensors: dict = {}
    try:
        _seed(0)
        model, inputs = factory(mod)
        model = model.to(getattr(torch, dtype))
        inputs = [{k: v.to(getattr(torch, dtype)) if isinstance(v, torch.Tensor) and v.is_floating_point()
                   and k not in ("timestep", "img_ids", "txt_ids") else v for k, v in inp.items()} for inp in inputs]
        state = work / f"{a.child}.state.pt"
        if a.variant == "orig":
            torch.save(model.state_dict(), state)
        else:
            model.load_state_dict(torch.load(state), strict=True)
        res["files"] = sorted({_rel(sys.modules[type(m).__module__].__file__, pkg)
                               for m in model.modules() if type(m).__module__.startswith(pkg + ".")})
    except (AttributeError, ImportError) as e:
        missing = isinstance(e, AttributeError) and re.match(rf"module '?{pkg}'? has no attribute '?(\w+)", str(e))
        if a.variant != "orig" or (missing and hasattr(mod, missing.group(1))) or (
                isinstance(e, AttributeError) and not missing):
            res["crash"] = "build: " + traceback.format_exc(limit=4)
        else:  # a model, config or optional dependency this version does not have: skipped
            res["skipped"] = f"build: {type(e).__name__}: {e}"
        (work / f"{a.child}.{a.variant}.json").write_text(json.dumps(res, indent=1))
        return 0
    except Exception:  # noqa: BLE001 (recorded as a crash)
        res["crash"] = "build: " + traceback.format_exc(limit=4)
        (work / f"{a.child}.{a.variant}.json").write_text(json.dumps(res, indent=1))
        return 0
    for mode in a.modes.split(","):
        train = mode == "train"
        model.train(train)
        runs = inputs[:1] if train else inputs
        r = {"crash": [], "breaks": [], "sites": 0, "total": 0, "graphs": 0, "recompiles": 0, "skips": 0,
             "classes": {}}
        with _Records(pkg) as logs:
            for i, inp in enumerate(runs):
                try:
                    for k, v in _run(model, model, inp, train, 1234 + i).items():
                        tensors[f"{mode}.{i}.eager.{k}"] = v
                except Exception:  # noqa: BLE001 (recorded as a crash)
                    r["crash"].append(f"eager input {i}: " + traceback.format_exc(limit=-3))
        r["records_eager"] = logs.seen
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="aot_eager")
        rec = Recorder()
        with rec, _Records(pkg) as logs:
            for i, inp in enumerate(runs):
                try:
                    for k, v in _run(model, compiled, inp, train, 1234 + i).items():
                        tensors[f"{mode}.{i}.compiled.{k}"] = v
                except Exception:  # noqa: BLE001 (recorded as a crash)
                    r["crash"].append(f"compiled input {i}: " + traceback.format_exc(limit=-3))
        r["records_compiled"] = logs.seen
        for b in rec.sites():
            text = linecache.getline(b.file, b.line).strip()
            d = {"file": _rel(b.file, pkg), "line": b.line, "text": text, "gb": b.gb, "reason": b.reason,
                 "count": b.count, "frame_skip": b.frame_skip}
            d["class"] = _classify(d, text)
            r["breaks"].append(d)
        r["sites"] = len(r["breaks"])
        r["total"] = len(rec.breaks)
        r["graphs"] = rec.graphs
        r["recompiles"] = len(rec.recompiles)
        r["skips"] = len(rec.skips)
        for c in CLASSES:
            r["classes"][c] = [sum(1 for d in r["breaks"] if d["class"] == c),
                               sum(d["count"] for d in r["breaks"] if d["class"] == c)]
        res["modes"][mode] = r
        torch._dynamo.reset()
    torch.save(tensors, work / f"{a.child}.{a.variant}.pt")
    (work / f"{a.child}.{a.variant}.json").write_text(json.dumps(res, indent=1))
    return 0


# ----------------------------------------------------------------------------------------------- parent
def _same(x, y) -> bool:
    import torch
    return (x.dtype == y.dtype and x.shape == y.shape and torch.equal(x.isnan(), y.isnan())
            and torch.equal(torch.nan_to_num(x), torch.nan_to_num(y)))


def _maxdiff(x, y) -> float:
    import torch
    if x.shape != y.shape:
        return float("inf")
    d = (torch.nan_to_num(x.double()) - torch.nan_to_num(y.double())).abs()
    return float(d.max()) if d.numel() else 0.0


def compare(tx: dict, ty: dict, kind_x: str, kind_y: str, mode: str) -> dict:
    """Compare {mode}.{i}.{kind_x}.* of tx with {mode}.{i}.{kind_y}.* of ty: equal, close, max diff, first diffs."""
    import torch
    px = {k.replace(f".{kind_x}.", ".", 1): v for k, v in tx.items() if k.startswith(mode + ".") and f".{kind_x}." in k}
    py = {k.replace(f".{kind_y}.", ".", 1): v for k, v in ty.items() if k.startswith(mode + ".") and f".{kind_y}." in k}
    if not px or not py:
        return {"equal": None, "close": None, "n": 0, "note": "missing outputs"}
    keys = sorted(set(px) | set(py))
    missing = [k for k in keys if k not in px or k not in py]
    diffs, worst, close = [], 0.0, True
    for k in keys:
        if k in missing:
            continue
        x, y = px[k], py[k]
        if not _same(x, y):
            md = _maxdiff(x, y)
            worst = max(worst, md)
            ok = x.shape == y.shape and torch.allclose(x.double(), y.double(), rtol=1e-3, atol=1e-4, equal_nan=True)
            close &= bool(ok)
            diffs.append(f"{k} maxdiff={md:.3g}")
    grad = [d for d in diffs if d.split(".", 3)[2] == "grad"]  # "{mode}.{i}.grad.<param>"
    return {"equal": not diffs and not missing, "close": close and not missing, "n": len(keys),
            "maxdiff": worst, "diffs": diffs[:6], "ndiffs": len(diffs), "missing": missing[:6],
            "out_equal": len(grad) == len(diffs) and not missing, "ndiffs_grad": len(grad),
            "diffs_out": [d for d in diffs if d not in grad][:6]}


def compare_row(a, row: dict, work: Path) -> None:
    """Fill row["compare"] from the children's saved tensors in `work`."""
    import torch
    name = row["model"]
    row["records"] = {}
    for mode in a.modes.split(","):
        o, f = _mode(row, "orig", mode), _mode(row, "fixed", mode)
        if o and f and "records_eager" in o and "records_eager" in f:
            row["records"][mode] = {"eager_equal": o["records_eager"] == f["records_eager"],
                                    "eager": len(o["records_eager"]), "compiled_orig": len(o["records_compiled"]),
                                    "compiled_fixed": len(f["records_compiled"])}
    to, tf_ = work / f"{name}.orig.pt", work / f"{name}.fixed.pt"
    if not (to.exists() and tf_.exists()):
        return
    o, f = torch.load(to), torch.load(tf_)
    row["compare"] = {}
    for mode in a.modes.split(","):
        row["compare"][mode] = {
            "eager_orig_vs_fixed": compare(o, f, "eager", "eager", mode),
            "compiled_orig_vs_eager_orig": compare(o, o, "compiled", "eager", mode),
            "compiled_fixed_vs_eager_orig": compare(f, o, "compiled", "eager", mode),
            "compiled_fixed_vs_compiled_orig": compare(f, o, "compiled", "compiled", mode)}


def run_model(a, name: str, work: Path, paths: dict) -> dict:
    row = {"model": name}
    for variant in ("orig", "fixed"):
        cmd = [PY, str(Path(__file__).resolve()), "--suite", a.suite, "--child", name, "--variant", variant,
               "--work", str(work), "--modes", a.modes]
        for path in paths[variant]:
            cmd += ["--path", path]
        t = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, cwd=str(work),
                               env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ""})
            rc, err = p.returncode, p.stderr[-3000:]
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        row[f"{variant}_seconds"] = round(time.time() - t, 1)
        jf = work / f"{name}.{variant}.json"
        if rc != 0 or not jf.exists():
            row[variant] = {"crash": f"child rc={rc}: {err}", "modes": {}}
            continue
        row[variant] = json.loads(jf.read_text())
        if row[variant].get("skipped"):
            row["skipped"] = row[variant]["skipped"]
            return row
    compare_row(a, row, work)
    return row


def ensure_fixed(a, src: Path, dest: Path) -> dict:
    """Copy the package to dest/<name> and run the CLI's `check --fix --no-cache` on it (unless done before)."""
    marker = dest / "FIXED.json"
    if marker.exists():
        info = json.loads(marker.read_text())
        info["reused"] = True
        return info
    pkgdir = dest / src.name
    if pkgdir.exists():
        shutil.rmtree(pkgdir)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, pkgdir, ignore=shutil.ignore_patterns("__pycache__"))
    cmd = [PY, "-m", "graphmend_lint", "check", "--fix", "--no-cache", "--exit-zero", "--statistics", str(pkgdir)]
    if a.jobs:
        cmd += ["-j", str(a.jobs)]
    if a.unsafe:
        cmd += ["--unsafe-fixes"]
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=str(dest), env={**os.environ, "PYTHONPATH": str(REPO)})
    info = {"command": "python -m graphmend_lint check --fix --no-cache --exit-zero --statistics " + str(pkgdir)
            + (f" -j {a.jobs}" if a.jobs else "") + (" --unsafe-fixes" if a.unsafe else ""),
            "rc": p.returncode, "seconds": round(time.time() - t, 1), "stdout_tail": p.stdout[-4000:],
            "stderr_tail": p.stderr[-2000:]}
    info.update(changed_files(src, pkgdir))
    marker.write_text(json.dumps(info, indent=1))
    info["reused"] = False
    return info


def changed_files(src: Path, fixed: Path) -> dict:
    changed = []
    for f in sorted(src.rglob("*.py")):
        rel = f.relative_to(src)
        g = fixed / rel
        if g.exists() and not filecmp.cmp(f, g, shallow=False):
            changed.append(str(rel))
    return {"files_changed": len(changed), "changed": changed}


def import_without_torch(a, paths: list[str], out: Path) -> dict:
    """In a child Python with `import torch` blocked: import every module of the package; which import."""
    code = f"""
import sys, json, pkgutil, importlib, warnings, io, contextlib
warnings.simplefilter("ignore")
for p in reversed({paths!r}):
    sys.path.insert(0, p)
for name in ("torch", "torchvision", "torchaudio", "transformers", "flax", "jax"):
    sys.modules[name] = None  # find_spec() -> None and `import` raises ImportError: not installed, as far as it sees
import {a.suite} as pkg
res = {{"file": pkg.__file__, "ok": [], "fail": {{}}}}
names = [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".", onerror=lambda n: None)]
for n in sorted(set(names)):
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            importlib.import_module(n)
        res["ok"].append(n)
    except BaseException as e:
        res["fail"][n] = type(e).__name__ + ": " + str(e).splitlines()[0][:160] if str(e) else type(e).__name__
for attr in ("UNet2DModel", "DiffusionPipeline", "DDPMScheduler"):
    try:
        obj = getattr(pkg, attr)
        res.setdefault("attrs", {{}})[attr] = type(obj).__name__ + ":" + getattr(obj, "__name__", "")
    except BaseException as e:
        res.setdefault("attrs", {{}})[attr] = "error " + type(e).__name__
print(json.dumps(res))
"""
    p = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=1200, cwd=str(out),
                       env={**os.environ, "PYTHONPATH": ""})
    if p.returncode != 0:
        return {"crash": p.stderr[-3000:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=sorted(SUITES), default="transformers")
    ap.add_argument("--fixed", help="folder for the fixed copy (reused when it holds FIXED.json)")
    ap.add_argument("--tp", help="folder holding the package and its dependencies (diffusers: --target of pip)")
    ap.add_argument("--models", help="comma-separated subset")
    ap.add_argument("--modes", default="eval,train")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--out", help="results folder (default perf/results/real_models; needed by --tp on transformers)")
    ap.add_argument("--jobs", "-j", type=int, help="worker processes of the fix (the CLI's -j; default: its own)")
    ap.add_argument("--unsafe", action="store_true", help="fix with --unsafe-fixes too (the opt-in figure)")
    ap.add_argument("--report", action="store_true", help="only rebuild report.md from the JSON files")
    ap.add_argument("--no-import-check", action="store_true")
    ap.add_argument("--recompare", help="recompute the comparisons from the children's tensors kept in this folder")
    ap.add_argument("--keep", help="copy the children's tensors (*.pt) and JSON here (for --recompare)")
    # child
    ap.add_argument("--child")
    ap.add_argument("--variant")
    ap.add_argument("--work")
    ap.add_argument("--path", action="append")
    a = ap.parse_args(argv)
    if a.child:
        return child(a)
    if a.out is None and a.suite == "transformers" and a.tp and not a.child:
        ap.error("--tp with the transformers suite needs --out (the default folder holds the 4.44.2 results)")
    out = Path(a.out or OUT)
    out.mkdir(parents=True, exist_ok=True)
    if a.recompare:
        f = out / f"{a.suite}.json"
        data = json.loads(f.read_text())
        for row in data["models"].values():
            compare_row(a, row, Path(a.recompare))
        f.write_text(json.dumps(data, indent=1, default=str))
        a.report = True
    if a.report:
        write_report(out)
        return 0
    if a.tp:
        sys.path.insert(0, a.tp)
    if a.suite == "diffusers":
        sys.modules["transformers"] = None
    import importlib
    pkg = importlib.import_module(a.suite)
    src = Path(pkg.__file__).parent
    fixed_root = Path(a.fixed or tempfile.mkdtemp(prefix=f"gm-fixed-{a.suite}-"))
    print(f"fixing a copy of {src} in {fixed_root} ...", flush=True)
    fix = ensure_fixed(a, src, fixed_root)
    print(f"  {fix['files_changed']} files changed ({'reused' if fix['reused'] else str(fix['seconds']) + ' s'})",
          flush=True)
    paths = {"orig": [a.tp] if a.tp else [], "fixed": [str(fixed_root)] + ([a.tp] if a.tp else [])}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "graphmend_lint"], capture_output=True, text=True,
                                cwd=REPO).stdout.strip())
    import torch
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": commit, "graphmend_lint_dirty": dirty, "machine": platform.platform(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
            "package": a.suite, "package_version": getattr(pkg, "__version__", "?"), "package_dir": str(src),
            **({"tp": a.tp} if a.tp else {}),
            "fixed_dir": str(fixed_root), "backend": "aot_eager", "modes": a.modes,
            "load_avg": os.getloadavg(), "fix": {k: v for k, v in fix.items() if k != "changed"},
            "fixed_files": fix.get("changed", [])}
    result_file = out / f"{a.suite}.json"
    data = {"meta": meta, "models": {}}
    if result_file.exists() and a.models:  # a partial rerun: keep the other models
        old = json.loads(result_file.read_text())
        data["models"] = old.get("models", {})
        data["import_without_torch"] = old.get("import_without_torch")
    if a.suite == "diffusers" and not a.no_import_check:
        print("import without torch: original / fixed ...", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            before = import_without_torch(a, paths["orig"], Path(tmp))
            after = import_without_torch(a, paths["fixed"], Path(tmp))
        data["import_without_torch"] = summarize_imports(before, after)
        print("  ", {k: v for k, v in data["import_without_torch"].items() if not isinstance(v, (list, dict))},
              flush=True)
    names = a.models.split(",") if a.models else list(SUITES[a.suite])
    with tempfile.TemporaryDirectory(prefix="gm-real-") as tmp:
        for name in names:
            t = time.time()
            row = run_model(a, name, Path(tmp), paths)
            if a.keep:
                Path(a.keep).mkdir(parents=True, exist_ok=True)
                for g in Path(tmp).glob(f"{name}.*"):
                    shutil.copy(g, Path(a.keep) / g.name)
            data["models"][name] = row
            data["meta"]["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            result_file.write_text(json.dumps(data, indent=1, default=str))
            print(f"{name}: {time.time() - t:.0f} s  " + one_line(row), flush=True)
    write_report(out)
    return 0


def summarize_imports(before: dict, after: dict) -> dict:
    if "crash" in before or "crash" in after:
        return {"before": before, "after": after}
    ok_b, ok_a = set(before["ok"]), set(after["ok"])
    return {"modules": len(ok_b) + len(before["fail"]), "importable_before": len(ok_b),
            "importable_after": len(ok_a), "lost": sorted(ok_b - ok_a), "gained": sorted(ok_a - ok_b),
            "lost_errors": {n: after["fail"].get(n) for n in sorted(ok_b - ok_a)},
            "package_before": before["file"], "package_after": after["file"],
            "attrs_before": before.get("attrs"), "attrs_after": after.get("attrs")}


# ------------------------------------------------------------------------------------------------ report
def _mode(row, variant, mode):
    return (row.get(variant) or {}).get("modes", {}).get(mode)


def one_line(row) -> str:
    parts = []
    for mode in ("eval", "train"):
        o, f = _mode(row, "orig", mode), _mode(row, "fixed", mode)
        if not o or not f:
            continue
        c = row.get("compare", {}).get(mode, {})
        parts.append(f"{mode}: breaks {o['sites']}/{o['total']} -> {f['sites']}/{f['total']}, graphs {o['graphs']} -> "
                     f"{f['graphs']}, eager={_v(c.get('eager_orig_vs_fixed'))} compiled={_v(_compiled(c, mode))}")
    for v in ("orig", "fixed"):
        if (row.get(v) or {}).get("crash"):
            parts.append(f"{v} CRASH")
    if row.get("skipped"):
        parts.append("skipped: " + row["skipped"][:120])
    return "; ".join(parts)


def _compiled(c: dict, mode: str):
    """eval: the fixed copy compiled vs the original eager; train: compiled fixed vs compiled original (the
    same seed), or vs the original eager where the original did not compile."""
    if mode != "train":
        return c.get("compiled_fixed_vs_eager_orig")
    got = c.get("compiled_fixed_vs_compiled_orig")
    if (not got or got.get("equal") is None) and (c.get("compiled_fixed_vs_eager_orig") or {}).get("equal") is not None:
        return {**c["compiled_fixed_vs_eager_orig"], "vs": "eager"}
    return got


def _v(c) -> str:
    if not c or c.get("equal") is None:
        return "n/a"
    if c.get("vs"):
        return f"vs original eager: {_v({k: v for k, v in c.items() if k != 'vs'})}"
    if c["equal"]:
        return "equal"
    what = "" if "out_equal" not in c else (f"outputs equal, {c['ndiffs_grad']} grads " if c["out_equal"] else
                                            f"outputs {'close' if c['close'] else 'DIFFER'}: ")
    return what + (f"close ({c['maxdiff']:.2g})" if c["close"] else f"DIFF ({c['maxdiff']:.2g})")


def write_report(out: Path) -> None:
    lines = ["# Held-out check: whole packages fixed with `check --fix` (issues 23, 24)", "",
             "Generated by `perf/real_models.py` (the docstring says what each column means).", ""]
    for suite in ("transformers", "diffusers"):
        f = out / f"{suite}.json"
        if not f.exists():
            continue
        data = json.loads(f.read_text())
        m = data["meta"]
        lines += [f"## {suite} {m['package_version']}", "",
                  (f"- date {m['date']} (last model {m.get('finished', '?')}), commit `{m['commit'][:12]}`"
                  f"{' (graphmend_lint/ dirty)' if m['graphmend_lint_dirty'] else ''}, {m['machine']}, {m['cpus']} CPUs, "
                  f"load {', '.join(f'{x:.1f}' for x in m['load_avg'])}, Python {m['python']}, torch {m['torch']}, "
                  f"backend `{m['backend']}`"),
                  f"- fix: `{m['fix']['command']}`: {m['fix']['files_changed']} files changed"
                  + (f", {m['fix']['seconds']} s" if m['fix'].get('seconds') else "")
                  + (f"; by hand: {m['fix']['manual_revert']}" if m['fix'].get('manual_revert') else ""), ""]
        iw = data.get("import_without_torch")
        if iw:
            if "modules" in iw:
                lines += [(f"Import without torch (`torch` blocked): {iw['importable_before']} of {iw['modules']} modules "
                          f"import before the fix, {iw['importable_after']} after; lost: {iw['lost'] or 'none'}; "
                          f"gained: {iw['gained'] or 'none'}."), ""]
            else:
                lines += ["Import without torch: the check crashed (see the JSON).", ""]
        lines += [("| model | dtype | mode | break sites | breaks (all records) | graphs | a | b | c | other | "
                  "eager orig=fixed | compiled | compiled orig vs eager (baseline) | log records: eager; compiled | "
                  "crashes |"),
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        tot = {v: {c: [0, 0] for c in (*CLASSES, "all")} for v in ("orig", "fixed")}
        verdicts = {"eager": [0, 0], "compiled": [0, 0], "outputs": [0, 0]}
        for name, row in data["models"].items():
            crashes = [f"{v}: {row[v]['crash'].splitlines()[0][:80]}" for v in ("orig", "fixed")
                       if (row.get(v) or {}).get("crash")]
            if row.get("skipped"):
                lines.append(f"| {name} | | | | | | | | | | | | | | skipped: {row['skipped'].splitlines()[0][:100]} |")
                continue
            if not any(_mode(row, v, md) for v in ("orig", "fixed") for md in ("eval", "train")):
                lines.append(f"| {name} | | | | | | | | | | | | | | {'; '.join(crashes)} |")
                continue
            for mode in ("eval", "train"):
                o, fx = _mode(row, "orig", mode), _mode(row, "fixed", mode)
                if not o or not fx:
                    continue
                c = row.get("compare", {}).get(mode, {})
                cr = list(crashes) + [f"{v}: {x.splitlines()[-1][:80]}" for v, r in (("orig", o), ("fixed", fx))
                                      for x in r["crash"]]
                cls = " | ".join(f"{o['classes'][k][0]}/{o['classes'][k][1]} -> {fx['classes'][k][0]}/{fx['classes'][k][1]}"
                                 for k in CLASSES)
                for v, r in (("orig", o), ("fixed", fx)):
                    for k in CLASSES:
                        tot[v][k][0] += r["classes"][k][0]
                        tot[v][k][1] += r["classes"][k][1]
                    tot[v]["all"][0] += r["sites"]
                    tot[v]["all"][1] += r["total"]
                rc = row.get("records", {}).get(mode)
                recs = "n/a" if not rc else (f"{'same' if rc['eager_equal'] else 'DIFFER'} ({rc['eager']}); "
                                             f"{rc['compiled_orig']} -> {rc['compiled_fixed']}")
                e, cc = c.get("eager_orig_vs_fixed"), _compiled(c, mode)
                for key, val in (("eager", e), ("compiled", cc)):
                    if val and val.get("equal") is not None:
                        verdicts[key][0] += bool(val["equal"])
                        verdicts[key][1] += 1
                        if key == "compiled":
                            verdicts["outputs"][0] += bool(val["equal"] or val.get("out_equal"))
                            verdicts["outputs"][1] += 1
                lines.append(f"| {name} | {row['orig'].get('dtype', '')} | {mode} | {o['sites']} -> {fx['sites']} | "
                             f"{o['total']} -> {fx['total']} | {o['graphs']} -> {fx['graphs']} | {cls} | {_v(e)} | "
                             f"{_v(cc)} | {_v(c.get('compiled_orig_vs_eager_orig'))} | {recs} | {'; '.join(cr) or ''} |")
        lines += ["", ("Class columns: sites/records before -> after. Compiled: eval, the fixed copy compiled vs the "
                  "original eager; train, compiled fixed vs compiled original (same seed). `close`: allclose "
                  "(rtol 1e-3, atol 1e-4), max abs difference in brackets."), "", "Totals (sites / all records):", "",
                  "| class | before | after | removed (sites) | removed (records) |", "|---|---|---|---|---|"]
        for k in (*CLASSES, "all"):
            b, af = tot["orig"][k], tot["fixed"][k]
            pct = [f"{100 * (b[i] - af[i]) / b[i]:.0f}%" if b[i] else "-" for i in (0, 1)]
            lines.append(f"| {CLASS_NAMES.get(k, 'all breaks')} ({k}) | {b[0]} / {b[1]} | {af[0]} / {af[1]} | "
                         f"{pct[0]} | {pct[1]} |")
        lines += ["", (f"Eager original = fixed: {verdicts['eager'][0]} of {verdicts['eager'][1]} model-modes bitwise; "
                  f"compiled: {verdicts['compiled'][0]} of {verdicts['compiled'][1]} bitwise, outputs and gradients "
                  f"({verdicts['outputs'][0]} of {verdicts['outputs'][1]} with bitwise outputs)."), ""]
        left = []
        for name, row in data["models"].items():
            for mode in ("eval", "train"):
                fx = _mode(row, "fixed", mode)
                if fx:
                    for d in fx["breaks"]:
                        left.append(f"| {name} | {mode} | `{d['file']}:{d['line']}` | {d['class']} | {d['count']} | "
                                    f"{(d['reason'] or '')[:60]} | `{d['text'][:70]}` |")
        if left:
            lines += ["Breaks left after the fix:", "", "| model | mode | site | class | records | reason | line |",
                      "|---|---|---|---|---|---|---|", *left, ""]
    (out / "report.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
