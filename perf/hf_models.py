"""Tiny transformers 4.44.2 models (random weights, built from configs) with known graph-break sites.

Each factory returns (model, inputs_list).  inputs_list[0] is the common path, inputs_list[1] takes the
other side of the data-dependent branch (a NaN input makes `isnan(h).any()` true in the fp16 clamps; a
large position id selects the LongRoPE long factors; an out-of-range label makes the CTC check raise).
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
}
# run by default; Marian, Pegasus and Blenderbot carry the same encoder clamp as Bart (perf/run.py --all-hf)
DEFAULT_HF = ["hf_bart", "hf_whisper", "hf_t5", "hf_phi3_longrope", "hf_wav2vec2_ctc"]
# indices of inputs_list that are expected to raise (validation guards)
EXPECT_RAISE = {"hf_wav2vec2_ctc": [1]}

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
    short_pos = torch.arange(8).unsqueeze(0).expand(2, -1)
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


def make(case):
    fn = globals()[HF_CASES[case][0]]
    return fn()
