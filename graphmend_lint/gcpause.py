"""The cyclic garbage collector, paused while one file is parsed and analysed.

`ast.parse`, libcst's parse and the rules' analysis make many objects and almost no cycles, so the
collector's passes only walk the growing trees: measured on transformers 5.24.0 (every 6th kept file,
one process, two runs each), libcst's parse took 14.1-14.5 -> 8.2-9.5 CPU-s and the rules 13.8-14.1 ->
9.9-11.2 with it paused. It is
paused for one file at a time: the cycles made meanwhile (tracebacks of caught errors) are collected
once it runs again.
"""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
