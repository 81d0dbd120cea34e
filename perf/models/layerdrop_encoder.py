"""Pre-LN encoder with BART-style LayerDrop in train mode (transformers: bart, whisper, marian, ...).

`layerdrop = 0.0`, the default of every config: unfixed, the tensor test inside the layer loop makes
Dynamo skip the whole forward (it runs in eager); fixed (GM104's LayerDrop fix), the test is decided
while tracing and the stack compiles to one graph. `layerdrop_encoder_p.py` is the same with 0.2.
"""
import torch
from torch import nn

D, LAYERS = 128, 6
LAYERDROP = 0.0


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, 2 * D)
        self.fc2 = nn.Linear(2 * D, D)

    def forward(self, x):
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


class Encoder(nn.Module):
    def __init__(self, layerdrop):
        super().__init__()
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.layerdrop = layerdrop

    def forward(self, hidden_states):
        for encoder_layer in self.layers:
            # add LayerDrop (see https://arxiv.org/abs/1909.11556 for description)
            to_drop = False
            if self.training:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:  # skip the layer
                    to_drop = True

            if not to_drop:
                hidden_states = encoder_layer(hidden_states)
        return hidden_states


def make(layerdrop=LAYERDROP):
    model = Encoder(layerdrop).train()  # LayerDrop draws only in training
    g = torch.Generator().manual_seed(1)
    x = torch.randn(16, 64, D, generator=g)
    return model, [(x,), (2 * x,)]
