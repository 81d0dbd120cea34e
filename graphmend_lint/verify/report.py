"""What `graphmend-lint verify` prints: text for people, one JSON object for tools."""
from __future__ import annotations

import difflib
import json
import os

from .. import engine
from ..settings import Settings
from .fixcopy import FixedRun
from .match import Site, fix_kind
from .recorder import gb_url
from .run import Verdict

TAIL_LINES = 25


def show(path: str) -> str:
    """A path relative to the working directory, else from its site-packages, else absolute."""
    rel = os.path.relpath(path)
    if not rel.startswith(".."):
        return rel
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def _n(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def tail(text: str, n: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-n:])


def _fixable(site: Site, s: Settings) -> bool:
    return bool(site.findings) and engine.applicable(site.findings[0], s)


def counts(v: Verdict, s: Settings) -> dict:
    return {"runtime_breaks": len(v.sites), "matched": sum(bool(x.findings) for x in v.sites),
            "fixable": sum(_fixable(x, s) for x in v.sites), "graphs": v.run.graphs,
            "recompiles": len(v.run.recompiles), "frame_skips": len(v.run.skips)}


def _where(e) -> str:
    return f"{e.function} ({show(e.file)}:{e.line})"


def _fix_label(f, s: Settings) -> str:
    kind = fix_kind(f)
    if kind == "unsafe" and not s.unsafe_fixes:
        return "unsafe fix, with --unsafe-fixes"
    return {"safe": "safe fix", "unsafe": "unsafe fix", "none": "no fix"}[kind]


def site_lines(site: Site, s: Settings, where=show) -> list[str]:
    """One runtime break site joined with our findings on its statement (also the pytest gate's)."""
    b = site.brk
    gbs = ", ".join(g for g in [b.gb, *b.also] if g) or "no GB id"
    skip = "; the frame then ran in eager" if b.frame_skip else ""
    out = [f"{where(site.path)}:{site.line}: {gbs} {b.reason} (hit {site.count}x while compiling{skip})"]
    if b.gb:
        out.append(f"    {gb_url(b.gb)}")
    if site.findings:
        for f in site.findings:
            out.append(f"    -> {f.code} [{_fix_label(f, s)}] {f.message}")
    else:
        out.append("    -> not found statically")
    return out


def as_text(v: Verdict, s: Settings, fixed: FixedRun | None, after: Verdict | None) -> str:
    out = [f"Runtime graph breaks: {_n(len(v.sites), 'site')} (Dynamo's graph_breaks log)"]
    for site in v.sites:
        out += site_lines(site, s)
    if v.run.skips:
        out += ["", "Frame skips (Dynamo ran these functions in eager):"]
        out += [f"  {_where(e)}: {e.reason}" + (f" at {show(e.at_file)}:{e.at_line}" if e.at_line else "")
                for e in v.run.skips]
    if v.run.recompiles:
        out += ["", f"Recompilations: {len(v.run.recompiles)}"]
        out += [f"  {_where(e)}: {e.reason}" for e in v.run.recompiles[:10]]
        out += [f"  ... and {len(v.run.recompiles) - 10} more"] if len(v.run.recompiles) > 10 else []
    unhit = v.unhit()
    if unhit:
        out += ["", "Findings in files that ran, on no runtime break (not exercised, or wrong):"]
        out += [f"  {show(p)}:{f.line}:{f.col + 1}: {f.code} [{_fix_label(f, s)}] {f.message}" for p, f in unhit]
    out += [f"  lint error: {e}" for e in v.lint_errors]
    c = counts(v, s)
    out += ["", f"Summary: {_n(c['runtime_breaks'], 'runtime break site')}, {c['matched']} matched by a finding "
                f"({c['fixable']} fixable), {c['runtime_breaks'] - c['matched']} not found statically; "
                f"{_n(len(unhit), 'finding')} on no break; {_n(c['graphs'], 'graph')}, "
                f"{_n(c['recompiles'], 'recompile')}, {_n(c['frame_skips'], 'frame skip')}."]
    if fixed is not None:
        out += ["", *_compare_text(v, s, fixed, after)]
    return "\n".join(out)


def _compare_text(v: Verdict, s: Settings, fixed: FixedRun, after: Verdict | None) -> list[str]:
    kind = "safe and unsafe" if s.unsafe_fixes else "safe"
    n = sum(fixed.fixed.values())
    out = [f"With {kind} fixes: {n} applied in {len(fixed.fixed)} file{'s' if len(fixed.fixed) != 1 else ''} of a "
           f"temporary copy of {show(fixed.root) if show(fixed.root) != '.' else fixed.root} "
           "(your files are unchanged)"]
    out += ["  (a large folder: only its Python files were copied)"] if fixed.py_only else []
    out += [f"  fixed: {show(p)} ({k})" for p, k in fixed.fixed.items()]
    out += [f"  also copied and fixed: installed package {show(o)}" for o, _ in fixed.moves[1:]]
    out += [f"  not fixed (outside the copied folder{'' if fixed.moves[1:] else '; see --fix-packages'}): {show(p)}"
            for p in fixed.outside]
    out += [f"  error: {e}" for e in fixed.errors]
    out += [f"  warning: imported from your folder, not the fixed copy: {show(p)}" for p in fixed.unfixed_imports]
    if after is None:
        return out
    b, a = counts(v, s), counts(after, s)
    out.append(f"  {'':16}before  after")
    out += [f"  {k.replace('_', ' '):16}{b[k]:>6} {a[k]:>6}" for k in ("runtime_breaks", "graphs", "recompiles", "frame_skips")]
    same = v.run.stdout == fixed.run.stdout
    out.append(f"  stdout: {'same' if same else 'differs'}; exit status: {v.run.status} -> {fixed.run.status}"
               f" ({'same' if v.run.status == fixed.run.status else 'DIFFERS'})")
    if not same:
        diff = list(difflib.unified_diff(v.run.stdout.splitlines(), fixed.run.stdout.splitlines(),
                                         "before", "after", lineterm="", n=0))
        out += [f"    {ln}" for ln in diff[2:14]] + (["    ..."] if len(diff) > 14 else [])
        if any(f.code.startswith("GM2") and engine.applicable(f, s) for p in fixed.fixed for f in v.findings[p]):
            out.append("    (expected where a print/logging call was guarded: it then runs in eager only)")
    for site in after.sites:
        where = fixed.original(site.path)
        out.append(f"  still breaks: {show(where)}:{site.line} (in the fixed copy): {site.brk.gb or ''} {site.brk.reason}")
    return out


def as_json(v: Verdict, s: Settings, fixed: FixedRun | None, after: Verdict | None, error: str | None) -> str:
    def brk(site: Site) -> dict:
        f = site.findings[0] if site.findings else None
        b = site.brk
        return {"path": show(site.path), "line": site.line, "gb": b.gb, "url": gb_url(b.gb), "reason": b.reason,
                "count": site.count, "finding": f.code if f else None, "fix": fix_kind(f) if f else None,
                "findings": [x.code for x in site.findings], "frame_skip": b.frame_skip}

    def event(e) -> dict:
        return {"function": e.function, "path": show(e.file), "line": e.line, "reason": e.reason}

    c = counts(v, s)
    obj = {
        "breaks": [brk(x) for x in v.sites],
        "summary": {**c, "unhit_findings": len(v.unhit())},
        "frame_skips": [event(e) for e in v.run.skips],
        "recompiles": [event(e) for e in v.run.recompiles],
        "unhit_findings": [{"path": show(p), "line": f.line, "code": f.code, "fix": fix_kind(f)} for p, f in v.unhit()],
        "status": v.run.status,
        "error": error,
    }
    if fixed is not None and after is not None:
        a = counts(after, s)
        obj["after_fix"] = {"runtime_breaks": a["runtime_breaks"], "graphs": a["graphs"],
                            "recompiles": a["recompiles"], "frame_skips": a["frame_skips"],
                            "same_stdout": v.run.stdout == fixed.run.stdout,
                            "same_status": v.run.status == fixed.run.status, "status": fixed.run.status,
                            "fixes_applied": sum(fixed.fixed.values()),
                            "files_fixed": [show(p) for p in fixed.fixed], "not_fixed": [show(p) for p in fixed.outside],
                            "still_breaks": [f"{show(fixed.original(x.path))}:{x.line}" for x in after.sites],
                            "unfixed_imports": [show(p) for p in fixed.unfixed_imports]}
    return json.dumps(obj, indent=2)
