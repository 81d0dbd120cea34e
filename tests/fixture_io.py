"""Compute the expected files of a golden fixture (shared by tests/regen.py and the tests)."""
from __future__ import annotations

import difflib
from pathlib import Path

from graphmend_lint import engine
from graphmend_lint.settings import Settings

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GENERATED_SUFFIXES = (".findings.txt", ".fixed.py", ".patch", ".unsafe.fixed.py", ".unsafe.patch")


def fixture_cases() -> list[Path]:
    return sorted(
        p for p in FIXTURES.glob("GM*/*.py")
        if p.name.startswith(("valid_", "invalid_")) and not p.name.endswith(GENERATED_SUFFIXES)
    )


def findings_text(source: bytes) -> str:
    result = engine.check(source, Settings(unsafe_fixes=True))
    return "".join(f"{f.line}:{f.col} {f.code} fix={f.safety.value} {f.message}\n" for f in result.findings)


def _patch(name: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"))


def expected_outputs(case: Path) -> dict[str, str]:
    source = case.read_bytes()
    text = source.decode("utf-8")
    out = {f"{case.stem}.findings.txt": findings_text(source)}
    safe = engine.check(source, Settings(), fix=True).source.decode("utf-8")
    unsafe = engine.check(source, Settings(unsafe_fixes=True), fix=True).source.decode("utf-8")
    if safe != text:
        out[f"{case.stem}.fixed.py"] = safe
        out[f"{case.stem}.patch"] = _patch(case.name, text, safe)
    if unsafe != safe:
        out[f"{case.stem}.unsafe.fixed.py"] = unsafe
        out[f"{case.stem}.unsafe.patch"] = _patch(case.name, text, unsafe)
    return out


def grad_off_fix(case: Path) -> bool:
    """The safe fix's compiled form waits for gradients off (inference); with them on the `if` runs."""
    findings = case.with_name(case.stem + ".findings.txt")
    return findings.exists() and "with gradients on, the `if` runs as before" in findings.read_text(encoding="utf-8")
