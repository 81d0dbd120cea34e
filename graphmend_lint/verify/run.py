"""The parent side of `graphmend-lint verify`: run the child, lint the files that ran, join the two."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .. import parallel, runner
from ..settings import Settings
from . import match
from .recorder import Break, Event, breaks_from_json, events_from_json

HERE = Path(__file__).resolve().parent
# Loads child.py and recorder.py by path: the user's process imports neither graphmend_lint nor libcst.
BOOT = """import importlib.util, sys
def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
_rec = _load("_graphmend_verify_recorder", {rec!r})
_child = _load("_graphmend_verify_child", {child!r})
del _load
sys.exit(_child.main(sys.argv[1:], _rec.Recorder))
"""


@dataclass
class Target:
    """What to run: a script path or a module name, and its arguments."""
    script: str | None
    module: str | None
    args: list[str]

    def argv(self) -> list[str]:
        return ["-m", self.module, *self.args] if self.module else [self.script, *self.args]


@dataclass
class Run:
    """One child run: what Dynamo logged, and what the script printed and returned."""
    status: int
    stdout: str
    stderr: str
    error: str | None = None  # the child could not record (no torch)
    breaks: list[Break] = field(default_factory=list)
    skips: list[Event] = field(default_factory=list)
    recompiles: list[Event] = field(default_factory=list)
    traced: list[Event] = field(default_factory=list)
    graphs: int = 0
    loaded: list[str] = field(default_factory=list)  # module files under the watched folders


def run_child(target: Target, cwd: str | None = None, watch: tuple[str, ...] = (), env: dict | None = None) -> Run:
    boot = BOOT.format(rec=str(HERE / "recorder.py"), child=str(HERE / "child.py"))
    with tempfile.TemporaryDirectory(prefix="graphmend-verify-") as tmp:
        out = os.path.join(tmp, "record.json")
        cmd = [sys.executable, "-c", boot, out, *[a for d in watch for a in ("--watch", d)], *target.argv()]
        environ = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=environ)
        try:
            data = json.loads(Path(out).read_text())
        except (OSError, ValueError):  # the child died before writing (killed, os._exit)
            data = {"error": f"the script ended (exit status {proc.returncode}) before the recorder could "
                             f"report (os._exit, or killed); its stderr ends with:\n{proc.stderr[-2000:].rstrip()}"}
    run = Run(proc.returncode, proc.stdout, proc.stderr, data.get("error"))
    if "breaks" in data:
        run.breaks = breaks_from_json(data)
        run.skips, run.recompiles = events_from_json(data, "skips"), events_from_json(data, "recompiles")
        run.traced, run.graphs, run.loaded = events_from_json(data, "traced"), data["graphs"], data["loaded"]
    return run


def ran_files(run: Run, files: match.Files) -> list[str]:
    """Files Dynamo traced or broke in (every user frame of a break), as real paths."""
    paths = {f for b in run.breaks for f, _ in b.frames()} | {e.file for e in [*run.traced, *run.skips]}
    return sorted({os.path.realpath(p) for p in paths if files.wanted(p)})


def lint(paths: list[str], s: Settings) -> tuple[dict[str, list], list[str]]:
    """Findings per file, and the files that could not be linted (with why)."""
    findings, errors = {}, []
    for p in paths:
        res = runner.check_file(Path(p), s, ext=parallel.facts_of(Path(p), s))  # its project's index, as the CLI
        if res.error:
            errors.append(f"{p}: {res.error}")
        else:
            findings[p] = res.findings
    return findings, errors


@dataclass
class Verdict:
    """A run joined with our findings."""
    run: Run
    sites: list[match.Site]
    findings: dict[str, list]
    lint_errors: list[str]

    def unhit(self) -> list[tuple[str, object]]:
        """Findings on no runtime break site, in files that ran."""
        hit = {id(f) for s in self.sites for f in s.findings}
        return [(p, f) for p, fs in sorted(self.findings.items()) for f in fs if id(f) not in hit]


def verdict(run: Run, s: Settings) -> Verdict:
    findings, errors = lint(ran_files(run, match.Files()), s)
    return Verdict(run, match.sites(run.breaks, findings), findings, errors)
