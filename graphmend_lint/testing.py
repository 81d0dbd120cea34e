"""A pytest gate against graph breaks: `assert_no_graph_breaks(model, x, within=["mypkg"])`.

    from graphmend_lint.testing import assert_no_graph_breaks

    def test_model_compiles_in_one_graph():
        model = mypkg.Model().eval()
        assert_no_graph_breaks(model, torch.randn(2, 16), within=["mypkg"])

It compiles `fn_or_module` (`torch.compile(..., fullgraph=False)`, backend "eager" by default: the
real break count, which `fullgraph=True` would hide behind scalar capture), calls it, and records
Dynamo's `graph_breaks` and `recompiles` logs with the `verify` recorder (never `explain`'s counts).
Each break and each recompile is attributed to the innermost frame inside the packages named by
`within` (TabPFN's approach); breaks with no frame there are counted, never shown. On failure the
AssertionError names each break as `graphmend-lint verify` does (file:line, GB id, reason, our
finding) and shows our fix for that line as a diff.

torch is imported inside the functions only: this module (and the pytest plugin) imports without it.
"""
from __future__ import annotations

import fnmatch
import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["GateReport", "GraphBreakError", "assert_no_graph_breaks", "graph_break_report", "package_dirs"]


class GraphBreakError(AssertionError):
    """The gate failed: graph breaks (or recompiles) attributed to the watched packages."""

    def __init__(self, report: "GateReport") -> None:
        super().__init__(report.text())
        self.report = report


@dataclass
class GateReport:
    """What one gated call did. `sites` are verify's match.Site objects (path, line, brk, findings)."""
    within: list[str]
    roots: list[str]  # folders the display paths are relative to (each watched package's parent)
    sites: list = field(default_factory=list)  # breaks attributed inside `within`, not allowed
    allowed: list = field(default_factory=list)  # breaks inside `within` that `allow` matched
    recompiles: list = field(default_factory=list)  # recorder Events inside `within`
    outside: int = 0  # breaks with no frame inside `within` (counted, not shown)
    recompiles_outside: int = 0
    graphs: int = 0
    max_recompiles: int | None = 0
    fixes: dict = field(default_factory=dict)  # (path, line) -> diff hunk text of our fix
    settings: object = None

    @property
    def breaks(self) -> int:
        return len(self.sites)

    @property
    def failed(self) -> bool:
        too_many = self.max_recompiles is not None and len(self.recompiles) > self.max_recompiles
        return bool(self.sites) or too_many

    def show(self, path: str) -> str:
        real = os.path.realpath(path)
        for root in self.roots:
            if real.startswith(root + os.sep):
                return os.path.relpath(real, root)
        return os.path.basename(path)  # never reached for attributed sites

    def text(self) -> str:
        from .verify import report

        pk = ", ".join(self.within)
        n = len(self.sites)
        head = (f"{n} graph break{'s' if n != 1 else ''} in {pk}" if n else f"no graph break in {pk}")
        out = [f"{head} (Dynamo's graph_breaks log, {self.graphs} graph{'s' if self.graphs != 1 else ''}, "
               f"{len(self.recompiles)} recompile{'s' if len(self.recompiles) != 1 else ''} in {pk})"]
        shown: dict[str, str] = {}
        for site in self.sites:
            out += report.site_lines(site, self.settings, where=self.show)
            hunk = self.fixes.get((site.path, site.line))
            if hunk and hunk in shown:
                out.append(f"    fix: in the diff shown at {shown[hunk]}")
            elif hunk:
                shown[hunk] = f"{self.show(site.path)}:{site.line}"
                out.append("    fix (`graphmend-lint check --fix`):")
                out += [f"      {ln}" for ln in hunk.splitlines()]
        if self.recompiles:
            limit = "" if self.max_recompiles in (None, 0) else f" (allowed: {self.max_recompiles})"
            out += ["", f"Recompilations in {pk}: {len(self.recompiles)}{limit}"]
            out += [f"  {e.function} ({self.show(e.file)}:{e.line}): {e.reason}" for e in self.recompiles[:10]]
        if self.allowed:
            out += ["", "Allowed by `allow`: " + ", ".join(f"{self.show(s.path)}:{s.line}" for s in self.allowed)]
        if self.outside or self.recompiles_outside:
            out += ["", f"Outside {pk} (not counted): {self.outside} break(s), {self.recompiles_outside} recompile(s)"]
        return "\n".join(out)


def package_dirs(within) -> list[str]:
    """Real folders of the named packages (or modules, or folders), found without importing them."""
    dirs = []
    for name in within:
        if os.sep in name or "/" in name or os.path.isdir(name):
            dirs.append(os.path.realpath(name))
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise ValueError(f"within: no package or module named {name!r} (nor a folder)")
        if spec.submodule_search_locations:
            dirs += [os.path.realpath(d) for d in spec.submodule_search_locations]
        elif spec.origin:
            dirs.append(os.path.realpath(spec.origin))  # a single module file
    return dirs


def _inside(path: str, dirs: list[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == d or real.startswith(d + os.sep) for d in dirs)


def _default_within(fn_or_module) -> list[str]:
    cls = fn_or_module if isinstance(fn_or_module, type) else type(fn_or_module)
    module = getattr(fn_or_module, "__module__", None)
    if module is None or module == "torch.nn.modules.module" or not isinstance(module, str):
        module = cls.__module__
    if module in (None, "__main__", "builtins"):
        raise ValueError("within: name the packages to gate (within=['mypkg'])")
    return [module.split(".")[0]]


def _allowed(site, allow, show) -> bool:
    """`allow` entries: a GB id ("GB0124"), a rule code or prefix of our finding there ("GM901", "GM9"),
    or an fnmatch pattern of "path:line" or "path" as the report shows them ("mypkg/model.py:12",
    "mypkg/legacy/*")."""
    where, codes = show(site.path), [f.code for f in site.findings]
    gbs = [g for g in [site.brk.gb, *site.brk.also] if g]
    for a in allow:
        if a in gbs or (re.fullmatch(r"GM\d*", a) and any(c.startswith(a) for c in codes)):
            return True
        if fnmatch.fnmatch(f"{where}:{site.line}", a) or fnmatch.fnmatch(where, a):
            return True
    return False


def _settings_for(path: str):
    from dataclasses import replace

    from . import settings

    return replace(settings.env_overrides(settings.load(Path(path).parent)), can_add_imports=True)


def _fix_hunks(path: str, lines: list[int], s) -> dict[int, str]:
    """Our fix of `path` as diff hunks, the one holding each line of `lines`."""
    from . import runner

    source = Path(path).read_bytes()
    out = runner.check_source(Path(path), source, s, fix=True, diff=True, write=False)
    hunks: dict[int, str] = {}
    current: list[str] = []
    start = count = 0
    for ln in [*out.diff.splitlines(), "@@ -0,0 +0,0 @@"]:
        m = re.match(r"@@ -(\d+)(?:,(\d+))? ", ln)
        if m:
            for line in lines:
                if current and start <= line < start + max(count, 1):
                    hunks[line] = "\n".join(current)
            current, start, count = [ln], int(m[1]), int(m[2] or 1)
        elif current:
            current.append(ln)
    return hunks


def graph_break_report(fn_or_module, *inputs, within=None, allow=(), kwargs=None, also=(), backend="eager",
                       max_recompiles: int | None = 0, reset: bool = True, show_fixes: bool = True) -> GateReport:
    """Compile and call `fn_or_module(*inputs, **kwargs)`, then with each tuple of inputs in `also`;
    what broke and recompiled, attributed to `within`."""
    import torch
    import torch._dynamo

    from .verify import match
    from .verify.recorder import Recorder

    within = list([within] if isinstance(within, str) else within or _default_within(fn_or_module))
    dirs = package_dirs(within)
    roots = sorted({os.path.dirname(d) for d in dirs}, key=len, reverse=True)
    if reset:
        torch._dynamo.reset()  # a fresh cache: breaks of this call, not of an earlier test's
    compiled = torch.compile(fn_or_module, backend=backend, fullgraph=False)
    with Recorder() as rec:
        for args in [inputs, *also]:  # `also`: tuples of inputs, or dicts of keyword inputs
            if isinstance(args, dict):
                compiled(*inputs, **{**(kwargs or {}), **args})
            else:
                compiled(*args, **(kwargs or {}))
    breaks = rec.sites()
    # lint the watched files the breaks ran through, and join as verify does
    paths = sorted({os.path.realpath(f) for b in breaks for f, _ in b.frames() if _inside(f, dirs)})
    from . import runner

    findings, by_file = {}, {}
    for p in paths:
        s = by_file[p] = _settings_for(p)
        res = runner.check_file(Path(p), s)
        findings[p] = [] if res.error else res.findings
    rep = GateReport(within, roots, max_recompiles=max_recompiles)
    rep.graphs = rec.graphs
    rep.settings = _settings_for(paths[0]) if paths else _settings_for(os.getcwd())
    for site in match.sites(breaks, findings):
        if not _inside(site.path, dirs):
            rep.outside += 1
        elif allow and _allowed(site, list(allow), rep.show):
            rep.allowed.append(site)
        else:
            rep.sites.append(site)
    for e in rec.recompiles:
        if _inside(e.file, dirs):
            rep.recompiles.append(e)
        else:
            rep.recompiles_outside += 1
    if show_fixes:
        wanted: dict[str, list[int]] = {}
        for site in rep.sites:
            if site.findings and site.findings[0].replacement is not None:
                wanted.setdefault(site.path, []).append(site.line)
        for p, lines in wanted.items():
            for line, hunk in _fix_hunks(p, lines, by_file[p]).items():
                rep.fixes[(p, line)] = hunk
    return rep


def assert_no_graph_breaks(fn_or_module, *inputs, within=None, allow=(), **options) -> GateReport:
    """Fail (AssertionError) when compiling and calling `fn_or_module(*inputs)` breaks the graph in
    `within` (package names, module names or folders; default: the package `fn_or_module` comes
    from). `allow`: GB ids, rule codes or "path:line" patterns of breaks to accept. Options:
    `kwargs` (keyword inputs), `also` (more calls: tuples of inputs or dicts of keyword inputs;
    recompiles show there),
    `backend` ("eager"),
    `max_recompiles` (0; None ignores them), `reset` (True: `torch._dynamo.reset()` first).
    Returns the report when it passes."""
    rep = graph_break_report(fn_or_module, *inputs, within=within, allow=allow, **options)
    if rep.failed:
        raise GraphBreakError(rep)
    return rep
