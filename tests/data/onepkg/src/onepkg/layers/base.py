from .root import Root


class Block(Root):
    pass
