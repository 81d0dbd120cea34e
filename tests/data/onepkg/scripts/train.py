import torch

from onepkg.helpers import step

fast_step = torch.compile(step)
