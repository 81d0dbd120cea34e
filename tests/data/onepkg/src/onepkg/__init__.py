from .layers.base import Block as Block
