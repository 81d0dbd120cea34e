"""Token classification head with label validation before the loss."""
import torch
import torch.nn.functional as F
from torch import nn

D, VOCAB = 128, 64
EXPECT_RAISE = [1]


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.vocab_size = VOCAB
        self.body = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D), nn.LayerNorm(D))
        self.proj = nn.Linear(D, VOCAB)

    def forward(self, hidden, labels):
        if labels.max() >= self.vocab_size:
            raise ValueError("Label values must be < vocab_size")
        if (labels < 0).all():
            raise ValueError("all labels are masked")
        logits = self.proj(self.body(hidden))
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return loss, logits


def make():
    model = Head().eval()
    g = torch.Generator().manual_seed(1)
    hidden = torch.randn(16, 64, D, generator=g)
    labels = torch.randint(0, VOCAB, (16, 64), generator=g)
    bad = labels.clone()
    bad[3, 7] = VOCAB + 5
    return model, [(hidden, labels), (hidden, bad)]
