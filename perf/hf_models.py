"""Tiny transformers 4.44.2 models (random weights, built from configs) with known graph-break sites.

Each factory returns (model, inputs_list).  inputs_list[0] is the common path, inputs_list[1] takes the
other side of the data-dependent branch (a NaN input makes `isnan(h).any()` true in the fp16 clamps; a
large position id selects the LongRoPE long factors; an out-of-range label makes the CTC check raise).
Cases in TRAIN are built in train mode (dropout 0, so outputs stay comparable) and measured forward +
backward; the others run forward under no_grad. Break sites are those of perf/coverage.py (the
predicted_vs_real_breaks results): several of the added cases are controls with no break, or breaks no
fix removes (MoE routing .tolist()/nonzero), so the suite also shows what the fixer leaves alone.
Imports of transformers happen inside the factories, so whichever `transformers` is first on sys.path
(installed, or a fixed copy) is used.
"""
import torch

# case name -> (factory name, modeling files the fixer must rewrite, relative to the transformers package)
HF_CASES = {
    "hf_bart": ("make_bart", ["models/bart/modeling_bart.py"]),
    "hf_marian": ("make_marian", ["models/marian/modeling_marian.py"]),
    "hf_pegasus": ("make_pegasus", ["models/pegasus/modeling_pegasus.py"]),
    "hf_blenderbot": ("make_blenderbot", ["models/blenderbot/modeling_blenderbot.py"]),
    "hf_whisper": ("make_whisper", ["models/whisper/modeling_whisper.py"]),
    "hf_t5": ("make_t5", ["models/t5/modeling_t5.py"]),
    "hf_phi3_longrope": ("make_phi3", ["models/phi3/modeling_phi3.py"]),
    "hf_wav2vec2_ctc": ("make_wav2vec2_ctc", ["models/wav2vec2/modeling_wav2vec2.py"]),
    # issue 25: more families, train and eval
    "hf_phi3_longrope_grow": ("make_phi3_grow", ["models/phi3/modeling_phi3.py"]),
    "hf_switch_moe": ("make_switch", ["models/switch_transformers/modeling_switch_transformers.py"]),
    "hf_llama_sdpa_train": ("make_llama_sdpa_train", ["modeling_attn_mask_utils.py", "models/llama/modeling_llama.py"]),
    "hf_wav2vec2_train": ("make_wav2vec2_train", ["models/wav2vec2/modeling_wav2vec2.py"]),
    "hf_gpt2_train": ("make_gpt2_train", ["models/gpt2/modeling_gpt2.py"]),
    "hf_bert_train": ("make_bert_train", ["models/bert/modeling_bert.py"]),
    "hf_deberta_v2_train": ("make_deberta_v2_train", ["models/deberta_v2/modeling_deberta_v2.py"]),
    "hf_mixtral_moe": ("make_mixtral", ["models/mixtral/modeling_mixtral.py"]),
    "hf_jetmoe": ("make_jetmoe", ["models/jetmoe/modeling_jetmoe.py"]),
    "hf_longformer": ("make_longformer", ["models/longformer/modeling_longformer.py"]),
}
# run by default; Marian, Pegasus and Blenderbot carry the same encoder clamp as Bart (perf/run.py --all-hf)
DEFAULT_HF = ["hf_bart", "hf_whisper", "hf_t5", "hf_phi3_longrope", "hf_wav2vec2_ctc", "hf_phi3_longrope_grow",
              "hf_switch_moe", "hf_llama_sdpa_train", "hf_wav2vec2_train", "hf_gpt2_train", "hf_bert_train",
              "hf_deberta_v2_train", "hf_mixtral_moe", "hf_jetmoe", "hf_longformer"]
# indices of inputs_list that are expected to raise (validation guards)
EXPECT_RAISE = {"hf_wav2vec2_ctc": [1]}
# measured forward + backward in train mode
TRAIN = {"hf_llama_sdpa_train", "hf_wav2vec2_train", "hf_gpt2_train", "hf_bert_train", "hf_deberta_v2_train"}
# run.py --dynamic mark: {input name: dim} for torch._dynamo.mark_dynamic (default: dim 1 of 2-d+ tensors)
DYNAMIC_DIMS = {"hf_phi3_longrope": {"input_ids": 1, "position_ids": 1},
                "hf_phi3_longrope_grow": {"input_ids": 1, "position_ids": 1}}

_SEQ = 16


def _seq2seq(model_cls, config_cls, dtype=torch.float16, **extra):
    cfg = config_cls(
        vocab_size=128, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
        pad_token_id=1, decoder_start_token_id=2, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        **extra,
    )
    model = model_cls(cfg).to(dtype).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 128, (2, _SEQ), generator=g)
    dec = torch.randint(3, 128, (2, 8), generator=g)
    emb = model.get_input_embeddings()(ids).detach()
    bad = emb.clone()
    bad[0, 3, 5] = float("nan")  # NaN reaches every encoder layer: the clamp branch is taken
    return model, [
        {"inputs_embeds": emb, "decoder_input_ids": dec},
        {"inputs_embeds": bad, "decoder_input_ids": dec},
    ]


def make_bart():
    from transformers import BartConfig, BartModel
    return _seq2seq(BartModel, BartConfig)


def make_marian():
    from transformers import MarianConfig, MarianModel
    return _seq2seq(MarianModel, MarianConfig)


def make_pegasus():
    from transformers import PegasusConfig, PegasusModel
    return _seq2seq(PegasusModel, PegasusConfig)


def make_blenderbot():
    from transformers import BlenderbotConfig, BlenderbotModel
    return _seq2seq(BlenderbotModel, BlenderbotConfig)


def make_whisper():
    from transformers import WhisperConfig, WhisperModel
    cfg = WhisperConfig(
        vocab_size=128, num_mel_bins=16, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_source_positions=16, max_target_positions=32, pad_token_id=1, decoder_start_token_id=2,
        bos_token_id=2, eos_token_id=3,
    )
    model = WhisperModel(cfg).to(torch.float16).eval()
    g = torch.Generator().manual_seed(1)
    feats = torch.randn(2, 16, 32, generator=g).to(torch.float16)
    dec = torch.randint(4, 128, (2, 8), generator=g)
    bad = feats.clone()
    bad[0, 3, 5] = float("nan")
    return model, [
        {"input_features": feats, "decoder_input_ids": dec},
        {"input_features": bad, "decoder_input_ids": dec},
    ]


def make_t5():
    from transformers import T5Config, T5Model
    cfg = T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                   num_heads=4, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
    model = T5Model(cfg).to(torch.float16).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 128, (2, _SEQ), generator=g)
    dec = torch.randint(1, 128, (2, 8), generator=g)
    emb = model.get_input_embeddings()(ids).detach()
    big = emb.clone()
    big[0, 3, :] = 60000.0  # overflows to inf inside the layer: the clamp value changes
    return model, [
        {"inputs_embeds": emb, "decoder_input_ids": dec},
        {"inputs_embeds": big, "decoder_input_ids": dec},
    ]


def make_phi3():
    from transformers import Phi3Config, Phi3ForCausalLM
    cfg = Phi3Config(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, max_position_embeddings=64, original_max_position_embeddings=16,
        rope_scaling={"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0, 2.5, 3.0, 4.0]},
        pad_token_id=0, bos_token_id=1, eos_token_id=2, attn_implementation="eager",
    )
    model = Phi3ForCausalLM(cfg).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 128, (2, 8), generator=g)
    # contiguous, as both inputs must be: an expand()ed tensor (stride 0) against a contiguous one made Dynamo
    # recompile on the flip for the stride alone (the recompile the issue-25 run blamed on the fix)
    short_pos = torch.arange(8).unsqueeze(0).repeat(2, 1)
    long_pos = short_pos + 20  # max position 27 >= original_max_position_embeddings (16): long factors
    return model, [
        {"input_ids": ids, "position_ids": short_pos, "use_cache": False},
        {"input_ids": ids, "position_ids": long_pos, "use_cache": False},
    ]


def make_wav2vec2_ctc():
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC
    cfg = Wav2Vec2Config(
        vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        conv_dim=(32, 32), conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2, do_stable_layer_norm=False, feat_extract_norm="group",
        mask_time_prob=0.0, pad_token_id=0, ctc_zero_infinity=True,
        hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0,
        layerdrop=0.0, final_dropout=0.0,
    )
    model = Wav2Vec2ForCTC(cfg).eval()
    g = torch.Generator().manual_seed(1)
    wav = torch.randn(2, 1600, generator=g)
    labels = torch.randint(1, 32, (2, 6), generator=g)
    bad = labels.clone()
    bad[0, 0] = 40  # >= vocab_size: the validation guard raises
    return model, [{"input_values": wav, "labels": labels}, {"input_values": wav, "labels": bad}]


def make_phi3_grow():
    """Phi-3 LongRoPE as a user meets it in generation: the flip input is longer (24 tokens, past
    original_max_position_embeddings=16: long factors), so the flip is a new shape as well as the other
    branch; run with --dynamic auto (dynamic=None: automatic dynamic shapes recompile) or --dynamic mark."""
    model, inputs = make_phi3()
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(3, 128, (2, 24), generator=g)
    pos = torch.arange(24).unsqueeze(0).repeat(2, 1)
    return model, [inputs[0], {"input_ids": ids, "position_ids": pos, "use_cache": False}]


def make_switch():
    """SwitchTransformers (fp16, top-1 MoE): the T5-style `if fp16 and isinf(h).any(): clamp` layers (GM101)
    plus the router's breaks; inputs[1] overflows to inf after the first self-attention, so the clamp runs."""
    from transformers import SwitchTransformersConfig, SwitchTransformersModel
    cfg = SwitchTransformersConfig(
        vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
        num_experts=4, encoder_sparse_step=1, decoder_sparse_step=1, dropout_rate=0.0)
    model = SwitchTransformersModel(cfg).to(torch.float16).eval()
    with torch.no_grad():  # attention output ~1e2 (the RMS norm bounds its input): 65000 + it overflows to inf
        model.encoder.block[0].layer[0].SelfAttention.o.weight.mul_(2e4)
    g = torch.Generator().manual_seed(1)
    ids, dec = torch.randint(3, 128, (2, 8), generator=g), torch.randint(3, 128, (2, 4), generator=g)
    emb = model.get_input_embeddings()(ids).detach()
    big = emb.clone()
    big[0, 3, :] = 65000.0  # the first encoder layer's `isinf(h).any()` clamp runs (checked by line tracing)
    return model, [{"inputs_embeds": emb, "decoder_input_ids": dec, "use_cache": False},
                   {"inputs_embeds": big, "decoder_input_ids": dec, "use_cache": False}]


def _decoder_cfg(config_name, **extra):
    import transformers
    return getattr(transformers, config_name)(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0, **extra)


def make_llama_sdpa_train():
    """Llama, SDPA attention, train mode: `(is_training or not is_tracing) and torch.all(mask == 1)` in
    modeling_attn_mask_utils (GM101); inputs[1] is left-padded, so the mask is kept."""
    from transformers import LlamaForCausalLM
    cfg = _decoder_cfg("LlamaConfig", attention_dropout=0.0)
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg).train()
    ids = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    pad = torch.ones_like(ids)
    pad[1, :2] = 0
    return model, [{"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids, "use_cache": False},
                   {"input_ids": ids, "attention_mask": pad, "labels": ids, "use_cache": False}]


def make_wav2vec2_train():
    """Wav2Vec2 in train mode with LayerDrop 0.5: `skip_the_layer = self.training and (torch.rand([]) <
    layerdrop)` (GM104); which layers run is random (seeded the same for eager and compiled)."""
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    cfg = Wav2Vec2Config(
        vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=4, layerdrop=0.5, mask_time_prob=0.0,
        hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0)
    model = Wav2Vec2Model(cfg).train()
    g = torch.Generator().manual_seed(1)
    return model, [(torch.randn(2, 800, generator=g),), (torch.randn(2, 800, generator=g),)]


def make_gpt2_train():
    """GPT-2 LM training step (control: no break expected); inputs[1] adds a padded attention mask."""
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64, resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(cfg).train()
    ids = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :2] = 0
    return model, [{"input_ids": ids, "labels": ids, "use_cache": False},
                   {"input_ids": ids, "attention_mask": mask, "labels": ids, "use_cache": False}]


def make_bert_train():
    """BERT encoder training step (control); inputs[0] right-padded mask, inputs[1] no mask."""
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, max_position_embeddings=64, pad_token_id=0, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    model = BertModel(cfg).train()
    ids = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    return model, [{"input_ids": ids, "attention_mask": mask}, {"input_ids": ids}]


def make_deberta_v2_train():
    """DeBERTa-v2 sequence classification training step with labels (the loss picks a branch on
    num_labels/dtype; relative-position helpers); inputs[1] has a padded mask."""
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification
    cfg = DebertaV2Config(
        vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=64, num_labels=3, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        pooler_dropout=0.0)
    model = DebertaV2ForSequenceClassification(cfg).train()
    ids = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    return model, [{"input_ids": ids, "labels": torch.tensor([0, 2])},
                   {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([1, 1])}]


def _moe(model_cls, config_name, **extra):
    import transformers
    cfg = _decoder_cfg(config_name, **extra)
    cfg._attn_implementation = "eager"
    model = getattr(transformers, model_cls)(cfg).eval()
    g = torch.Generator().manual_seed(1)
    ids, ids2 = torch.randint(3, 128, (2, 8), generator=g), torch.randint(3, 128, (2, 8), generator=g)
    return model, [{"input_ids": ids, "use_cache": False}, {"input_ids": ids2, "use_cache": False}]


def make_mixtral():
    """Mixtral (top-2 of 4 experts): the expert loop's `torch.where(expert_mask[i])` (a dynamic-shape break
    no fix removes); inputs[1] routes other tokens."""
    return _moe("MixtralForCausalLM", "MixtralConfig", num_local_experts=4, num_experts_per_tok=2)


def make_jetmoe():
    """JetMoE: `expert_size.tolist()` in the MoE dispatch (GM902); inputs[1] routes other tokens."""
    from transformers import JetMoeConfig, JetMoeForCausalLM
    cfg = JetMoeConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_key_value_heads=2, kv_channels=8,
                       intermediate_size=64, num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=64)
    model = JetMoeForCausalLM(cfg).eval()
    g = torch.Generator().manual_seed(1)
    ids, ids2 = torch.randint(3, 128, (2, 8), generator=g), torch.randint(3, 128, (2, 8), generator=g)
    return model, [{"input_ids": ids, "use_cache": False}, {"input_ids": ids2, "use_cache": False}]


def make_longformer():
    """Longformer: local sliding-window attention, then global attention on the first token (the
    `is_global_attn = is_index_global_attn.flatten().any().item()` path)."""
    from transformers import LongformerConfig, LongformerModel
    cfg = LongformerConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        attention_window=[4, 4], max_position_embeddings=80, pad_token_id=1, sep_token_id=2,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = LongformerModel(cfg).eval()
    ids = torch.randint(3, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    glob = torch.zeros_like(ids)
    glob[:, 0] = 1
    return model, [{"input_ids": ids}, {"input_ids": ids, "global_attention_mask": glob}]


def make(case):
    fn = globals()[HF_CASES[case][0]]
    return fn()
