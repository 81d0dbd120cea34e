"""Output formats: text (ruff's concise), full (with a code frame), json (ruff's shape), github, sarif.

Every format is `fn(rows, unsafe, errors=(), sources=None) -> str`: `rows` are (path, finding)
pairs, `errors` (path, message) pairs for files that could not be checked, `sources` the text of
files that are not on disk (standard input).
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from . import docs
from .findings import Safety

GB_ID = re.compile(r"\bGB\d{4}\b")


def _fix_state(f, unsafe: bool) -> str | None:
    if f.replacement is None:
        return None
    if f.safety is Safety.SAFE or (f.safety is Safety.UNSAFE and unsafe):
        return "applicable"
    return "hidden"


def _names() -> dict[str, str]:
    from .rules import ALL_RULES

    return {r.CODE: r.NAME for r in ALL_RULES}


def text(rows: list, unsafe: bool, errors=(), sources=None) -> str:
    out = []
    for path, f in rows:
        mark = "[*] " if _fix_state(f, unsafe) == "applicable" else ""
        out.append(f"{path}:{f.line}:{f.col + 1}: {f.code} {mark}{f.message}")
    return "\n".join(out)


def _lines(path, sources) -> list[str]:
    if sources and path in sources:
        data = sources[path]
    else:
        try:
            data = Path(path).read_bytes()
        except OSError:
            return []
    return data.decode("utf-8", errors="replace").splitlines()


def full(rows: list, unsafe: bool, errors=(), sources=None) -> str:
    """ruff's `full` format: the finding, then the source around it with the span underlined."""
    blocks, cache = [], {}
    for path, f in rows:
        if path not in cache:
            cache[path] = _lines(path, sources)
        lines = cache[path]
        mark = "[*] " if _fix_state(f, unsafe) == "applicable" else ""
        block = [f"{path}:{f.line}:{f.col + 1}: {f.code} {mark}{f.message}"]
        first, last = max(1, f.line - 2), min(len(lines), f.end_line + 2)
        if lines and f.line <= len(lines):
            width = len(str(last))
            block.append(f"{' ' * width} |")
            for n in range(first, last + 1):
                src = lines[n - 1].expandtabs(1)
                block.append(f"{n:>{width}} | {src}".rstrip())
                if f.line <= n <= f.end_line:
                    start = f.col if n == f.line else len(src) - len(src.lstrip())
                    end = f.end_col if n == f.end_line else len(src)
                    carets = "^" * max(1, end - start)
                    label = f" {f.code}" if n == f.end_line else ""
                    block.append(f"{' ' * width} | {' ' * start}{carets}{label}")
            block.append(f"{' ' * width} |")
        block.append(f"  = help: {docs.rule_url(f.code)}")
        block += [f"  = graph break {gb}: {docs.gb_url(gb)}" for gb in dict.fromkeys(GB_ID.findall(f.message))]
        blocks.append("\n".join(block))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def summary(rows: list, unsafe: bool, fixed: int, errors: bool = False, listed: bool = False) -> str:
    """ruff's closing lines; never "All checks passed!" when a file could not be checked.
    `listed`: the fixes were listed already (--show-fixes); what is left is still "remaining"."""
    parts = []
    n = len(rows)
    states = Counter(_fix_state(f, unsafe) for _, f in rows)
    if fixed and not listed:
        parts.append(f"Fixed {fixed} error{'s' if fixed != 1 else ''}.")
    if n == 0:
        if not fixed and not errors:
            parts.append("All checks passed!")
    else:
        line = f"Found {n} error{'s' if n != 1 else ''}."
        if fixed:
            line = f"Found {n} remaining error{'s' if n != 1 else ''}."
        parts.append(line)
        parts += _fixable(states)
    return "\n".join(p for p in parts if p)


def _fixable(states: Counter) -> list[str]:
    out = []
    if states["applicable"]:
        out.append(f"[*] {states['applicable']} fixable with the `--fix` option.")
    if states["hidden"]:
        out.append(f"{states['hidden']} hidden fix{'es' if states['hidden'] != 1 else ''} "
                   "can be enabled with the `--unsafe-fixes` option.")
    return out


def statistics(rows: list, unsafe: bool) -> str:
    """Counts per rule, most frequent first (ties by code), then the total."""
    counts = Counter(f.code for _, f in rows)
    fixable = Counter(f.code for _, f in rows if _fix_state(f, unsafe) == "applicable")
    names = _names()
    width = len(str(max(counts.values(), default=0)))
    lines = [f"{n:>{width}}\t{c}\t{'[*]' if fixable[c] else '[ ]'} {names.get(c, '')}"
             for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    total = len(rows)
    lines.append(f"Found {total} error{'s' if total != 1 else ''}.")
    lines += _fixable(Counter(_fix_state(f, unsafe) for _, f in rows))
    return "\n".join(lines)


def _edit(e: dict) -> dict:
    return {"content": e["content"], "location": e["location"], "end_location": e["end_location"]}


def as_json(rows: list, unsafe: bool, errors=(), sources=None) -> str:
    """ruff's JSON: one object per finding; `fix.edits` are the fix as text (1-based rows/columns)."""
    items = []
    for path, f in rows:
        fix = None
        if f.replacement is not None:
            fix = {
                "applicability": "safe" if f.safety is Safety.SAFE else "unsafe",
                "message": f"Rewrite for torch.compile ({f.code}); eager code stays as it is",
                "edits": [_edit(e) for e in (f.edits or [])],
            }
        items.append({
            "cell": None,
            "code": f.code,
            "end_location": {"column": f.end_col + 1, "row": f.end_line},
            "filename": os.path.abspath(path) if str(path) != "-" else "-",
            "fix": fix,
            "location": {"column": f.col + 1, "row": f.line},
            "message": f.message,
            "noqa_row": f.line,
            "url": docs.rule_url(f.code),
        })
    return json.dumps(items, indent=2)


def _escape_gh(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_gh_property(s: str) -> str:
    return _escape_gh(s).replace(":", "%3A").replace(",", "%2C")


def github(rows: list, unsafe: bool, errors=(), sources=None) -> str:
    return "\n".join(
        f"::error title=graphmend-lint ({f.code}),file={_escape_gh_property(str(path))},line={f.line},"
        f"col={f.col + 1},endLine={f.end_line},endColumn={f.end_col + 1}::{_escape_gh(f'{f.code} {f.message}')}"
        for path, f in rows
    )


SRCROOT = "%SRCROOT%"


def _artifact(path) -> dict:
    """A percent-encoded URI: relative to the current folder (uriBaseId %SRCROOT%) when inside it."""
    absolute = Path(os.path.abspath(path))
    try:
        rel = absolute.relative_to(Path.cwd().resolve())
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(rel.as_posix()), "uriBaseId": SRCROOT}


def sarif(rows: list, unsafe: bool, errors=(), sources=None) -> str:
    """SARIF 2.1.0 (checked against the OASIS schema in tests/data/)."""
    from . import __version__
    from .rules import ALL_RULES as rules

    index = {r.CODE: i for i, r in enumerate(rules)}
    descriptors = [{
        "id": r.CODE,
        "name": r.NAME,
        "shortDescription": {"text": docs.summary(r)},
        "fullDescription": {"text": docs.what_it_does(r)},
        "helpUri": docs.rule_url(r.CODE),
        "help": {"text": f"{docs.summary(r)} See {docs.rule_url(r.CODE)}", "markdown": docs.render(r)},
        "defaultConfiguration": {"level": "error"},
        "properties": {"fix": r.FIX},
    } for r in rules]
    results = []
    for path, f in rows:
        result = {
            "ruleId": f.code,
            "level": "error",
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(path),
                "region": {"startLine": f.line, "startColumn": f.col + 1, "endLine": f.end_line,
                           "endColumn": f.end_col + 1},
            }}],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        results.append(result)
    notifications = [{
        "level": "error",
        "message": {"text": f"{path}: {message}"},
        "locations": [{"physicalLocation": {"artifactLocation": _artifact(path)}}],
    } for path, message in errors]
    run = {
        "tool": {"driver": {"name": "graphmend-lint", "version": __version__, "semanticVersion": __version__,
                            "informationUri": docs.REPO_URL, "rules": descriptors}},
        "originalUriBaseIds": {SRCROOT: {"uri": Path.cwd().resolve().as_uri() + "/"}},
        "invocations": [{"executionSuccessful": not errors, "toolExecutionNotifications": notifications}],
        "results": results,
    }
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2)


FORMATS = {"text": text, "full": full, "json": as_json, "github": github, "sarif": sarif}
