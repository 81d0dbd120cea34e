import sys, json
pkg_root, mode = sys.argv[1], sys.argv[2]
sys.path.insert(0, pkg_root)
import numpy as np, torch, transformers as tf
assert tf.__file__.startswith(pkg_root), tf.__file__
torch.manual_seed(0)
cfg = tf.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
                        conv_dim=(32, 32), conv_stride=(4, 4), conv_kernel=(8, 8), num_feat_extract_layers=2,
                        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, layerdrop=0.0,
                        mask_time_prob=0.3, mask_time_length=2, hidden_dropout=0.1)
m = tf.Wav2Vec2Model(cfg)
m.load_state_dict(torch.load("/tmp/w2v_state.pt")) if mode != "save" else torch.save(m.state_dict(), "/tmp/w2v_state.pt")
m.train()
x = torch.randn(2, 1600, generator=torch.Generator().manual_seed(1))
run = torch.compile(m, backend="aot_eager") if mode == "compiled" else m
np.random.seed(0); torch.manual_seed(0)
out = run(input_values=x).last_hidden_state
out.sum().backward()
g = [p.grad for p in m.parameters() if p.grad is not None]
torch.save({"out": out.detach(), "grads": g}, f"/tmp/w2v_{mode}_{pkg_root.replace('/', '_')}.pt")
print(mode, pkg_root, out.shape)
