"""Check (and fix) one file: read, lint, fix, write atomically. Never raises for bad input."""
from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from . import engine, files
from .settings import Settings


@dataclass
class FileOutcome:
    path: Path
    findings: list = field(default_factory=list)
    error: str | None = None
    fixed: int = 0
    diff: str = ""


def _describe(e: BaseException) -> str:
    if isinstance(e, cst.ParserSyntaxError):
        return f"syntax error at {e.raw_line}:{e.raw_column + 1}: {e.message.splitlines()[0]}"
    if isinstance(e, SyntaxError):
        return f"syntax error: {e.msg}"
    if isinstance(e, UnicodeDecodeError):
        return f"cannot decode file: {e.reason} at byte {e.start} (declare its encoding with a coding cookie)"
    if isinstance(e, LookupError):
        return f"unknown encoding: {e}"
    if isinstance(e, RecursionError):
        return "expression nested too deeply to analyse"
    if isinstance(e, IsADirectoryError):
        return "is a directory"
    if isinstance(e, FileNotFoundError):
        return "no such file (or a broken symbolic link)"
    if isinstance(e, PermissionError):
        return "permission denied"
    if isinstance(e, OSError):
        return f"cannot read: {e.strerror or e}"
    return f"internal error: {type(e).__name__}: {e}"


def _python_syntax_error(source: bytes) -> str | None:
    """Python's own wording for a syntax error (clearer than the CST parser's)."""
    try:
        ast.parse(source)
    except SyntaxError as e:
        return f"syntax error at {e.lineno}:{e.offset or 0}: {e.msg}"
    except Exception:
        return None
    return None


def read_source(path: Path) -> bytes:
    if path.is_symlink() and not path.exists():
        raise FileNotFoundError(str(path))
    if path.is_dir():
        raise IsADirectoryError(str(path))
    return path.read_bytes()


def check_file(path: Path, s: Settings, fix: bool = False, diff: bool = False) -> FileOutcome:
    out = FileOutcome(path)
    try:
        source = read_source(path)
        if b"\x00" in source:
            out.error = "file contains null bytes"
            return out
        result = engine.check(source, s, fix=fix or diff)
    except cst.ParserSyntaxError as e:
        out.error = _python_syntax_error(source) or _describe(e)
        return out
    except Exception as e:  # bad input never stops the run (RecursionError included)
        out.error = _describe(e)
        return out
    out.findings = result.findings
    out.fixed = result.fixed
    if result.fixed and result.source != source:
        if diff:
            old = source.decode("utf-8", errors="replace").splitlines(keepends=True)
            new = result.source.decode("utf-8", errors="replace").splitlines(keepends=True)
            out.diff = "".join(difflib.unified_diff(old, new, f"a/{path.as_posix()}", f"b/{path.as_posix()}"))
        else:
            try:
                files.atomic_write(path, result.source)
            except OSError as e:
                out.error = f"cannot write fixes: {e.strerror or e}"
    return out
