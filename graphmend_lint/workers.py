"""A run's forked worker processes, each on its own pipe, so that a file goes to the worker that
already parsed it.

Forked at the first map of two or more items, whose items they inherit (parallel.py's first pass:
no project index yet to copy), and kept: later maps send their items. `warm_up(sources)` has each
worker load the engine (libcst, the rules) and then parse its share of the lint's skeletons with
libcst while this process builds the index (the second core is idle then); between two of those
parses a worker takes any task sent to it, so the index's reads ahead never wait long. A lint item
goes to the worker holding its parsed tree when that worker is free, else to any free worker
(which parses it again). A worker runs one task at a time and answers each; this process sends a
worker a task only when it has none, and reads every answer: no pipe fills up both ways.
Largest items first, results in order; an exception in a worker is raised here. `close()` ends them.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
from multiprocessing.connection import wait

CHUNK = 4  # items per task (1 where items have a worker of their own)
WARM_BYTES = 4 << 20  # skeletons parsed ahead, at most (the trees stay in memory until linted)
_job: tuple | None = None  # (function, items): set before the fork, read by the workers


def _size(item) -> int:
    path = item[0] if isinstance(item, tuple) else item
    try:
        return os.stat(path).st_size
    except (OSError, TypeError, ValueError):
        return 0


def _run(msg: tuple) -> list:
    kind, fn, part = msg
    if kind == "job":  # indices into the items inherited at the fork
        assert _job is not None
        fn, items = _job
        return [(i, fn(items[i])) for i in part]
    return [(i, fn(item)) for i, item in part]


def _preparse(source: bytes) -> None:
    from . import cstparse, gcpause, runner

    def parse():
        if sys.platform.startswith("linux"):  # this thread only (a Linux thread's own niceness): the
            try:                              # index's process keeps its core, the parse takes what is idle
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
            except OSError:
                pass
        return cstparse.parse_module(source)

    with gcpause.paused():
        try:
            cstparse.ready(source, runner._in_big_thread(parse))
        except Exception:  # the lint parses it again and says why
            pass


def _serve(conn) -> None:
    """A worker: answer each task; between tasks, parse the skeletons it was given. Ctrl-C is the
    parent's to handle (it ends the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    todo: list[bytes] = []
    while True:
        if todo and not conn.poll():
            _preparse(todo.pop(0))
            if not todo:
                conn.send(("warm", None))
            continue
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg[0] == "close":  # what its tasks stored waits in memory (cache.py): written now
            from . import cache

            cache.flush_all()
            return
        if msg[0] == "warm":
            from . import runner

            try:
                runner.load()
            except Exception:  # the lint loads it again and raises there
                pass
            todo = list(msg[1])
            if not todo:
                conn.send(("warm", None))
            continue
        if msg[0] == "items" and msg[3] and todo:  # the lint has begun: what is left is parsed as it comes
            todo = []
            conn.send(("warm", None))
        try:
            got = ("ok", _run(msg[:3]))
        except BaseException as e:  # handed to the parent
            got = ("error", _portable(e))
        conn.send(got)


def _portable(e: BaseException) -> BaseException:
    import pickle

    try:
        pickle.dumps(e)
        return e
    except Exception:
        return RuntimeError("".join(traceback.format_exception_only(type(e), e)).strip())


class Workers:
    def __init__(self, jobs: int, lint: bool = False) -> None:
        self.jobs = jobs
        self.lint = lint
        self.procs: list = []  # (process, connection)
        self.busy: list[bool] = []  # a task sent, not answered
        self.warming: list[bool] = []  # warm_up sent, its parses not all done
        self.home: dict = {}  # key (a path) -> the worker that parsed its skeleton
        self.warm = False

    @property
    def size(self) -> int:
        return len(self.procs)

    @property
    def forked(self) -> bool:
        return bool(self.procs)

    def fits(self, n: int) -> bool:
        """Whether the workers forked are as many as a map of `n` items would fork."""
        return self.forked and self.size >= min(self.jobs, n)

    def _fork(self, n: int) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        for _ in range(n):
            ours, theirs = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(theirs,), daemon=True)
            p.start()
            theirs.close()
            self.procs.append((p, ours))
            self.busy.append(False)
            self.warming.append(False)

    def warm_up(self, sources: list[tuple[object, bytes]] = ()) -> None:
        """Each worker loads the engine, then parses its share of `sources` ((key, skeleton) pairs,
        largest first, dealt to balance their bytes); `map(..., key=)` sends each item there."""
        if not self.lint or not self.forked or self.warm:
            return
        self.warm = True
        shares: list[list[bytes]] = [[] for _ in self.procs]
        loads = [0] * self.size
        for key, source in sorted(sources, key=lambda ks: -len(ks[1])):
            if sum(loads) + len(source) > WARM_BYTES:
                continue
            k = loads.index(min(loads))
            shares[k].append(source)
            loads[k] += len(source)
            self.home[key] = k
        for k, (_, conn) in enumerate(self.procs):  # none is busy: a map returns once every task is answered
            conn.send(("warm", shares[k]))
            self.warming[k] = True

    def map(self, fn, items: list, key=None) -> list:
        """fn over items; `key(item)`: the key `warm_up` dealt, to send the item where it was parsed."""
        if self.jobs <= 1 or (len(items) < 2 and not self.forked):
            return [fn(x) for x in items]
        order = sorted(range(len(items)), key=lambda i: -_size(items[i]))
        inherited = False
        if not self.forked:
            import multiprocessing

            if "fork" not in multiprocessing.get_all_start_methods():
                return [fn(x) for x in items]
            global _job
            _job = (fn, items)
            try:
                self._fork(min(self.jobs, len(items)))
            finally:
                _job = None
            inherited = True
        homes = {} if key is None else {i: self.home.get(key(items[i])) for i in order}
        own: list[list[int]] = [[i for i in order if homes.get(i) == k] for k in range(self.size)]
        rest = [i for i in order if homes.get(i) is None]
        chunk = 1 if any(own) else CHUNK
        out: list = [None] * len(items)
        left = len(items)
        try:
            while left:
                for k, (_, conn) in enumerate(self.procs):
                    if self.busy[k]:
                        continue
                    part = self._take(k, own, rest, chunk)
                    if part:
                        conn.send(("job", None, part, False) if inherited else
                                  ("items", fn, [(i, items[i]) for i in part], key is not None))
                        self.busy[k] = True
                for conn in wait([c for k, (_, c) in enumerate(self.procs) if self.busy[k] or self.warming[k]]):
                    k = next(j for j, (_, c) in enumerate(self.procs) if c is conn)
                    try:
                        kind, got = conn.recv()
                    except (EOFError, OSError):
                        raise RuntimeError(f"a worker process ended unexpectedly (exit code {self.procs[k][0].exitcode})") from None
                    if kind == "warm":
                        self.warming[k] = False
                        continue
                    self.busy[k] = False
                    if kind == "error":
                        raise got
                    for i, r in got:
                        out[i] = r
                        left -= 1
        except BaseException:
            self.close()
            raise
        return out

    @staticmethod
    def _take(k: int, own: list[list[int]], rest: list[int], chunk: int) -> list[int]:
        """The next items for worker k: its own, else any not dealt, else another's (the longest queue)."""
        for queue in (own[k], rest, max(own, key=len)):
            if queue:
                part = queue[:chunk]
                del queue[:chunk]
                return part
        return []

    def close(self) -> None:
        """End the workers: each writes what it cached and exits (a busy one, after an error here, is
        stopped)."""
        for k, (p, conn) in enumerate(self.procs):
            try:
                if not self.busy[k]:
                    conn.send(("close",))
            except OSError:
                pass
        for k, (p, conn) in enumerate(self.procs):
            if not self.busy[k]:
                p.join(timeout=30)
            try:
                conn.close()
            except OSError:
                pass
            if p.is_alive():
                p.terminate()
        for p, _ in self.procs:
            p.join()
        self.procs, self.busy, self.warming, self.home = [], [], [], {}

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
