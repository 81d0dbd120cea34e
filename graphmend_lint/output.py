"""Output formats: text (ruff style), json, github annotations, sarif."""
from __future__ import annotations

import json
from collections import Counter

from . import rules as rules_pkg

Safety = rules_pkg.base.Safety


def _fix_state(f, unsafe: bool) -> str | None:
    if f.replacement is None:
        return None
    if f.safety is Safety.SAFE or (f.safety is Safety.UNSAFE and unsafe):
        return "applicable"
    return "hidden"


def text(rows: list, unsafe: bool) -> str:
    out = []
    for path, f in rows:
        mark = "[*] " if _fix_state(f, unsafe) == "applicable" else ""
        out.append(f"{path}:{f.line}:{f.col + 1}: {f.code} {mark}{f.message}")
    return "\n".join(out)


def summary(rows: list, unsafe: bool, fixed: int) -> str:
    parts = []
    n = len(rows)
    states = Counter(_fix_state(f, unsafe) for _, f in rows)
    if fixed:
        parts.append(f"Fixed {fixed} error{'s' if fixed != 1 else ''}.")
    if n == 0:
        parts.append("All checks passed!" if not fixed else "")
    else:
        line = f"Found {n} error{'s' if n != 1 else ''}."
        if fixed:
            line = f"Found {n} remaining error{'s' if n != 1 else ''}."
        parts.append(line)
        if states["applicable"]:
            parts.append(f"[*] {states['applicable']} fixable with the `--fix` option.")
        if states["hidden"]:
            parts.append(f"{states['hidden']} hidden fix{'es' if states['hidden'] != 1 else ''} "
                         "can be enabled with the `--unsafe-fixes` option.")
    return "\n".join(p for p in parts if p)


def statistics(rows: list, unsafe: bool) -> str:
    counts = Counter(f.code for _, f in rows)
    fixable = {f.code for _, f in rows if _fix_state(f, unsafe) == "applicable"}
    names = {r.CODE: r.NAME for r in rules_pkg.ALL_RULES}
    return "\n".join(
        f"{counts[c]:>5}\t{c}\t{'[*]' if c in fixable else '[ ]'} {names.get(c, '')}" for c in sorted(counts)
    )


def as_json(rows: list, unsafe: bool) -> str:
    items = []
    for path, f in rows:
        items.append({
            "code": f.code,
            "name": f.rule,
            "message": f.message,
            "filename": str(path),
            "location": {"row": f.line, "column": f.col + 1},
            "end_location": {"row": f.end_line, "column": f.end_col + 1},
            "fix": None if f.replacement is None else {
                "applicability": f.safety.value,
                "applicable": _fix_state(f, unsafe) == "applicable",
            },
        })
    return json.dumps(items, indent=2)


def _escape_gh(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github(rows: list, unsafe: bool) -> str:
    return "\n".join(
        f"::error title=graphmend-lint ({f.code}),file={path},line={f.line},col={f.col + 1},"
        f"endLine={f.end_line},endColumn={f.end_col + 1}::{_escape_gh(f'{f.code} {f.message}')}"
        for path, f in rows
    )


def sarif(rows: list, unsafe: bool) -> str:
    from . import __version__

    rules = [{"id": r.CODE, "name": r.NAME, "shortDescription": {"text": r.MESSAGE if hasattr(r, "MESSAGE") else r.NAME},
              "helpUri": f"rules/{r.CODE}.md"} for r in rules_pkg.ALL_RULES]
    results = [{
        "ruleId": f.code,
        "level": "error",
        "message": {"text": f.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": path.as_posix() if hasattr(path, "as_posix") else str(path)},
            "region": {"startLine": f.line, "startColumn": f.col + 1, "endLine": f.end_line,
                       "endColumn": f.end_col + 1},
        }}],
    } for path, f in rows]
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "graphmend-lint", "version": __version__, "rules": rules}},
                  "results": results}],
    }
    return json.dumps(doc, indent=2)


FORMATS = {"text": text, "json": as_json, "github": github, "sarif": sarif}
