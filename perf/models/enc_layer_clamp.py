"""Pre-LN transformer encoder stack in float16 with the BART-family overflow clamp after each layer."""
import torch
import torch.nn.functional as F
from torch import nn

D, HEADS, FFN, LAYERS = 64, 4, 128, 4


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, FFN)
        self.fc2 = nn.Linear(FFN, D)

    def forward(self, hidden_states):
        b, s, _ = hidden_states.shape
        q, k, v = self.qkv(self.ln1(hidden_states)).view(b, s, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, D)
        hidden_states = hidden_states + self.out(attn)
        hidden_states = hidden_states + self.fc2(F.gelu(self.fc1(self.ln2(hidden_states))))
        if hidden_states.dtype == torch.float16 and (
            torch.isinf(hidden_states).any() or torch.isnan(hidden_states).any()
        ):
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        return hidden_states


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer() for _ in range(LAYERS))
        self.norm = nn.LayerNorm(D)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def make():
    model = Encoder().to(torch.float16).eval()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8, 32, D, generator=g).to(torch.float16)
    big = x.clone()
    big[0, 0, 0] = float("inf")  # an overflow upstream (fp16 max is 65504): the clamp branch is taken
    return model, [(x,), (big,)]
