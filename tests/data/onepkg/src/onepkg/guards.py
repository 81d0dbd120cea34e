import torch


def compiling():
    return torch.compiler.is_compiling()
