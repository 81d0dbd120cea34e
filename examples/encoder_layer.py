"""A small encoder layer with the graph breaks GraphMend removes.

Run `graphmend-lint check examples/` to see them, `--diff` to see the fixes.
"""
import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger(__name__)


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int = 32, vocab_size: int = 100):
        super().__init__()
        self.vocab_size = vocab_size
        self.attn_proj = nn.Linear(d_model, d_model)
        self.ffn = nn.Linear(d_model, d_model)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, hidden_states: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        print("encoder input", tuple(hidden_states.shape))
        if labels.max() >= self.vocab_size:
            raise ValueError(f"Label values must be < vocab_size: {self.vocab_size}")
        h = self.norm(hidden_states + self.attn_proj(hidden_states))
        if h.dtype == torch.float16 and (torch.isinf(h).any() or torch.isnan(h).any()):
            clamp_value = torch.finfo(h.dtype).max - 1000
            h = torch.clamp(h, min=-clamp_value, max=clamp_value)
        if h.abs().max() > 1e3:
            logger.warning("large activations in encoder layer")
        return self.ffn(h)


class Gate(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            y = x * 2.0
        else:
            y = x - 1.0
        warnings.warn("Gate is experimental")
        return y
