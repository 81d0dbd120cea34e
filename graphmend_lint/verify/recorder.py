"""Record what Dynamo logs while code runs: graph breaks, frame skips, recompilations, graphs.

The one recorder of the product (`graphmend-lint verify`, perf/coverage.py, tests/fuzzcheck.py). It
reads Dynamo's `graph_breaks` and `recompiles` log artifacts (what `TORCH_LOGS=graph_breaks,recompiles`
prints), not `explain`, which misses a break before the first traced op and frames Dynamo skips.
torch is imported only when recording starts: this module is safe to import without torch.

    with Recorder() as rec:
        compiled(x)
    rec.sites()  # distinct break sites, with how often each was logged
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

BREAK_RE = re.compile(r"Graph break (?:\(.*?\) )?in user code at (?P<file>.+):(?P<line>\d+)")
GB_RE = re.compile(r"/gb/gb(\d{4})\.html")
GB_URL = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb{}.html"
FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?', re.MULTILINE)
SKIPPED_RE = re.compile(r"frame skipped: (?P<func>\S+) \((?P<file>.+) line (?P<line>\d+)\)")
RECOMPILE_RE = re.compile(r"Recompiling function (?P<func>\S+) in (?P<file>.+):(?P<line>\d+)")
LIMIT_RE = re.compile(r"hit config\.(?P<limit>\w+) .*?function: '(?P<func>[^']+)' \((?P<file>.+):(?P<line>\d+)\)",
                      re.DOTALL)
TRACING_RE = re.compile(r"torchdynamo start tracing (?P<func>\S+) (?P<file>.+):(?P<line>\d+)")
# a break after which a frame, or the rest of it, runs in eager (any torch._dynamo record saying so)
EAGER_FALLBACK = ("skipping the rest of the function", "skipping the function and falling back to eager",
                  "skipping the frame and falling back to eager")


def gb_url(gb: str | None) -> str | None:
    return GB_URL.format(gb[2:]) if gb else None


@dataclass
class Break:
    file: str
    line: int
    gb: str | None  # "GB0124"
    reason: str  # the registry's Gb_type, else the first line of the reason
    count: int = 1  # records logged for this site (each trace that reached it)
    stack: list[tuple[str, int]] = field(default_factory=list)  # user frames, outermost first
    also: list[str] = field(default_factory=list)  # other GB ids logged at the same line (one site)
    frame_skip: bool = False  # Dynamo gave up on the frame (or its rest) here: it runs in eager
    codes: list[str] = field(default_factory=list)  # our findings on that line (filled in by callers)

    def frames(self) -> list[tuple[str, int]]:
        """Every user frame, innermost first (the break's own line first)."""
        return [(self.file, self.line), *reversed(self.stack)]


@dataclass
class Event:
    """A frame skip, a recompilation or a traced frame: the function and where it starts."""
    function: str
    file: str
    line: int
    reason: str = ""
    at_file: str = ""  # for a frame skip: the break that made Dynamo give up on the frame
    at_line: int = 0


@cache
def _registry() -> dict[str, str]:
    import torch._dynamo

    path = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {k: (v[0] if isinstance(v, list) else v).get("Gb_type", "") for k, v in data.items()}


def parse_break(msg: str, registry: dict[str, str]) -> Break | None:
    m = BREAK_RE.search(msg)
    if m is None:
        return None
    gb = GB_RE.search(msg)
    gb_id = f"GB{gb.group(1)}" if gb else None
    body = [ln.strip() for ln in msg.splitlines()[1:] if ln.strip()]
    body = [ln for ln in body if not ln.startswith(("Graph Break Reason", "Encountered graph break"))]
    reason = registry.get(gb_id or "", "") or (body[0] if body else "")
    tail = msg.split("User code traceback:", 1)
    stack = [(f.group("file"), int(f.group("line"))) for f in FRAME_RE.finditer(tail[1])] if len(tail) > 1 else []
    skip = any(s in msg.lower() for s in EAGER_FALLBACK)
    return Break(m.group("file"), int(m.group("line")), gb_id, reason, stack=stack, frame_skip=skip)


class Recorder(logging.Handler):
    """Collect Dynamo's log records while active. `traced=True` also notes each frame Dynamo starts
    tracing (Dynamo's INFO log); `console_level` keeps torch's own console handlers quiet meanwhile."""

    def __init__(self, traced: bool = False, console_level: int = logging.WARNING) -> None:
        super().__init__(logging.DEBUG)
        self.traced_on, self.console_level = traced, console_level
        self.breaks: list[Break] = []  # one per record, in order
        self.skips: list[Event] = []
        self.recompiles: list[Event] = []
        self.traced: list[Event] = []
        self.fallbacks = 0  # records saying a frame (or its rest) falls back to eager
        self.graphs = 0  # graphs Dynamo compiled while active
        self._registry: dict[str, str] = {}
        self._quiet: list = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # a record we cannot format is not ours to fail on
            return
        low = msg.lower()
        self.fallbacks += any(m in low for m in EAGER_FALLBACK)
        if (b := parse_break(msg, self._registry)) is not None:
            self.breaks.append(b)
            if (s := SKIPPED_RE.search(msg)) is not None:  # "frame skipped: f (file line 3)"
                self.skips.append(Event(s["func"], s["file"], int(s["line"]), b.reason, b.file, b.line))
            elif b.frame_skip:  # the function holding the break: the innermost frame of the traceback
                inner = [f for f in FRAME_RE.finditer(msg) if f["file"] == b.file and f["func"]]
                name = inner[-1]["func"] if inner else "?"
                self.skips.append(Event(name, b.file, b.line, b.reason, b.file, b.line))
        elif (m := RECOMPILE_RE.search(msg)) is not None:
            why = " ".join(" ".join(msg.splitlines()[2:3]).split("  #")[0].split()).lstrip("- ")
            self.recompiles.append(Event(m["func"], m["file"], int(m["line"]), why))
        elif (m := LIMIT_RE.search(msg)) is not None:
            self.skips.append(Event(m["func"], m["file"], int(m["line"]), f"hit config.{m['limit']}"))
        elif self.traced_on and (m := TRACING_RE.search(msg)) is not None:
            self.traced.append(Event(m["func"], m["file"], int(m["line"])))

    def start(self) -> Recorder:
        import torch
        from torch._dynamo.utils import counters

        self._registry = _registry()
        self._graphs0 = counters["stats"]["unique_graphs"]
        torch._logging.set_logs(graph_breaks=True, recompiles=True,
                                **({"dynamo": logging.INFO} if self.traced_on else {}))
        names = [n for n in list(logging.root.manager.loggerDict) if n.startswith("torch")]
        self._quiet = [(h, h.level) for n in names for h in logging.getLogger(n).handlers if h is not self]
        for h, _ in self._quiet:
            h.setLevel(max(h.level, self.console_level))  # we collect the artifacts ourselves
        logging.getLogger("torch._dynamo").addHandler(self)
        return self

    def stop(self) -> None:
        import torch
        from torch._dynamo.utils import counters

        logging.getLogger("torch._dynamo").removeHandler(self)
        torch._logging.set_logs()
        for h, level in self._quiet:
            h.setLevel(level)
        self.graphs = counters["stats"]["unique_graphs"] - self._graphs0

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def sites(self) -> list[Break]:
        """Distinct break sites (one per line: recompiles and repeated layers log it again)."""
        sites: dict[tuple[str, int], Break] = {}
        for b in self.breaks:
            first = sites.get((b.file, b.line))
            if first is None:
                sites[(b.file, b.line)] = Break(**{**asdict(b), "count": 1})
                continue
            first.count += 1
            first.frame_skip |= b.frame_skip
            if b.gb and first.gb is None:
                first.gb, first.reason = b.gb, b.reason
            elif b.gb and b.gb != first.gb and b.gb not in first.also:
                first.also.append(b.gb)
            if not first.stack:
                first.stack = b.stack
        return list(sites.values())

    def to_json(self) -> dict:
        skips = list({(e.function, e.file, e.line, e.at_line): e for e in self.skips}.values())
        return {"breaks": [asdict(b) for b in self.sites()], "skips": [asdict(e) for e in skips],
                "recompiles": [asdict(e) for e in self.recompiles], "traced": [asdict(e) for e in self.traced],
                "graphs": self.graphs, "fallbacks": self.fallbacks}


def breaks_from_json(data: dict) -> list[Break]:
    return [Break(**{**b, "stack": [tuple(f) for f in b["stack"]]}) for b in data["breaks"]]


def events_from_json(data: dict, key: str) -> list[Event]:
    return [Event(**e) for e in data[key]]
