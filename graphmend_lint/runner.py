"""Check (and fix) one file: read, lint, fix, write atomically. Never raises for bad input.

Bad input is refused before libcst sees it: libcst's native parser crashes the process on deeply
nested expressions and is slow on huge files, so size and nesting are checked with Python's own
parser first (which never runs the code). The analysis runs in a thread with a large stack.
libcst and the rules (engine) load on the first file that is linted (`load`), so a run whose
files all come from the cache imports neither.
"""
from __future__ import annotations

import ast
import difflib
import io
import itertools
import os
import sys
import threading
import tokenize
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from . import files, gcpause, prefilter
from .settings import Settings

# Larger files are refused: libcst needs minutes and gigabytes for them (1.4 MB: 80 s, 0.8 GB).
MAX_BYTES = int(os.environ.get("GRAPHMEND_MAX_FILE_BYTES", 1 << 20))
MAX_DEPTH = 200  # deepest AST nesting analysed (Python itself stops at 200 nested brackets)
STACK_BYTES = 256 << 20  # stack of the analysis thread
RECURSION_LIMIT = 20_000  # enough for MAX_DEPTH in libcst's recursive visitors


def load():
    """The engine (libcst, the rules); parallel.py loads it before it forks the workers."""
    from . import engine

    return engine


class BadInput(Exception):
    """A file that cannot be analysed; the message says why."""


@dataclass
class FileOutcome:
    path: Path
    findings: list = field(default_factory=list)
    error: str | None = None
    fixed: int = 0
    diff: str = ""
    fixed_codes: dict = field(default_factory=dict)  # code -> fixes applied
    fixed_source: bytes | None = None  # check_source(write=False): the fixed code


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _describe(e: BaseException) -> str:
    if isinstance(e, (BadInput, files.ReadError)):
        return str(e)
    import libcst as cst

    if isinstance(e, cst.ParserSyntaxError):
        return f"syntax error at {e.raw_line}:{e.raw_column + 1}: {e.message}"
    if isinstance(e, SyntaxError):
        where = f" at {e.lineno}:{e.offset or 0}" if e.lineno else ""
        return f"syntax error{where}: {e.msg}"
    if isinstance(e, RecursionError):
        return "expression nested too deeply to analyse"
    if isinstance(e, MemoryError):
        return "out of memory while analysing the file"
    if isinstance(e, OSError):
        return f"cannot read: {e.strerror or e}"
    return f"internal error: {type(e).__name__}: {e}"


def encoding_of(source: bytes) -> str:
    """The encoding Python would use: BOM, then coding cookie, else UTF-8."""
    try:
        return tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    except SyntaxError as e:
        if "unknown encoding" in e.msg:
            raise BadInput(f"the coding cookie names an {e.msg}") from None
        if "encoding problem" in e.msg:
            raise BadInput("the coding cookie contradicts the UTF-8 byte order mark") from None
        return "utf-8"  # the first lines are not UTF-8: decoding says where


def _decode(source: bytes, encoding: str) -> str:
    try:
        return source.decode(encoding)
    except UnicodeDecodeError as e:
        line = source.count(b"\n", 0, e.start) + 1
        hint = " (declare the file's encoding with a coding cookie)" if encoding.startswith("utf-8") else ""
        raise BadInput(f"cannot decode as {encoding}: byte 0x{source[e.start]:02x} at line {line}{hint}") from None


_LEAVES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)  # nodes without children
SPAN_SLACK = 8  # a node's nesting below it is at most its length in bytes (+ this, to spare)


def _depth(tree: ast.AST, source: bytes | None = None, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of `tree` (as ast.iter_child_nodes counts it), without a generator per node.

    With `source` (UTF-8 text without CR, that `tree` was parsed from): a node whose length in bytes
    cannot take the depth past `limit` is not walked (the levels below a node never outnumber its
    bytes), so the answer is exact only when it is over `limit`, and no more is asked of it
    (tests/test_robustness.py checks the bound and the answers)."""
    starts = None
    if source is not None and b"\r" not in source:
        starts = [0, *itertools.accumulate(len(line) + 1 for line in source.split(b"\n"))]
    best, stack = 0, [(tree, 1)]
    pop, push, node_type, leaves = stack.pop, stack.append, ast.AST, _LEAVES
    room = limit - SPAN_SLACK
    while stack:
        node, d = pop()
        if d > best:
            best = d
        d += len(node.values) - 1 if node.__class__ is ast.BoolOp else 1  # libcst nests `a and b and c`
        for name in node._fields:
            value = getattr(node, name, None)
            for child in value if value.__class__ is list else (value,):
                if isinstance(child, leaves):
                    best = max(best, d)
                elif isinstance(child, node_type):
                    end = getattr(child, "end_lineno", None) if starts is not None else None
                    if end is not None and not getattr(child, "decorator_list", None):  # decorators lie before it
                        span = starts[end - 1] + child.end_col_offset - starts[child.lineno - 1] - child.col_offset
                        if span + d <= room:
                            best = max(best, d)  # too short to reach the limit
                            continue
                    push((child, d))
    return best


def _parse(source: bytes) -> ast.Module:
    """Python's AST of `source`, its own warnings (invalid escapes etc.) not ours to report."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def validate(source: bytes) -> ast.Module:
    """Raise BadInput/SyntaxError for a source that must not reach libcst; return Python's AST."""
    if source.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise BadInput("UTF-16 file: Python source must be UTF-8 or an ASCII-compatible encoding")
    if b"\x00" in source:
        raise BadInput("file contains null bytes")
    if len(source) > MAX_BYTES:
        raise BadInput(files.too_large(len(source), MAX_BYTES))
    encoding = encoding_of(source)
    _decode(source, encoding)
    try:
        tree = _parse(source)
    except (MemoryError, RecursionError):
        raise BadInput("expression nested too deeply for Python's parser") from None
    depth = _depth(tree, source if encoding.startswith("utf-8") else None)
    if depth > MAX_DEPTH:
        raise BadInput(f"expression nested too deeply to analyse (depth {depth}; the limit is {MAX_DEPTH})")
    return tree


def checks_out(source: bytes, path: Path) -> None:
    """Raise SyntaxError unless `source` (as bytes, with its encoding) compiles."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(source, str(path), "exec", dont_inherit=True)


def _in_big_thread(fn, *args):
    """Run fn(*args) on a thread with a large stack and a high recursion limit; re-raise its error."""
    box: dict = {}

    def target() -> None:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, RECURSION_LIMIT))
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # handed to the caller
            box["error"] = e
        finally:
            sys.setrecursionlimit(old)

    old_size = threading.stack_size(STACK_BYTES)
    try:
        thread = threading.Thread(target=target, name="graphmend-check", daemon=True)  # Ctrl-C exits
        thread.start()
    finally:
        threading.stack_size(old_size)
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _diff(path: Path, before: bytes, after: bytes) -> str:
    encoding = encoding_of(before)
    old = before.decode(encoding).splitlines(keepends=True)
    new = after.decode(encoding).splitlines(keepends=True)
    return "".join(difflib.unified_diff(old, new, f"a/{path.as_posix()}", f"b/{path.as_posix()}"))


def _fix_error(source: bytes, path: Path, e: SyntaxError) -> str:
    try:
        checks_out(source, path)
    except SyntaxError as original:
        return _describe(original)  # the file itself never compiled
    return f"a fix produced code that does not compile ({e.msg}, line {e.lineno}); file left unchanged"


def _check(source: bytes, tree: ast.Module | None, s: Settings, fix: bool, ext=None, ready: tuple | None = None):
    """engine.check; lint-only runs parse the skeleton (skeleton.py), or the whole file if it fails.
    `ready`: (skeleton, cut def names, assumed, quiet defs) made before the project index answered: it is this
    skeleton unless the index says otherwise (skeleton.stale); `tree` (None then) is parsed only if so.
    A skeleton of NOTHING (no def a rule may report in) is a file without findings, never parsed.

    With `fix_edits` (JSON, the server) the fixes' edits are computed on the skeleton too, and
    the whole file is parsed again only when one of them is not shown to hold on the whole file
    (engine._Holds). The skeleton gives the same findings, fix availability included, and the
    same edits: tests/test_speed_skeleton.py."""
    import libcst as cst

    from . import engine, skeleton

    quiet: dict = {}  # defs no rule may report in (skeleton.lean), of the skeleton and so of the file
    if not fix and s.skeleton:
        try:
            keep = set(ext.compiled | ext.wrapped) if ext is not None else set()  # "f", "Cls.m"
            if ready is None or skeleton.stale(ready, keep, ext):
                ready = skeleton.lean(source, tree if tree is not None else _parse(source), s.compiled_scope, keep, ext)
            lean, quiet = ready[0], ready[3]
        except Exception:  # the skeleton is an optimisation: never a reason to fail
            lean = source
        if lean == skeleton.NOTHING and source:
            return engine.Result([], source, 0)
        if lean != source:
            try:
                got = engine.check(lean, s, ext=ext, whole=source if s.fix_edits else None, quiet=quiet)
                return engine.Result(got.findings, source, 0)
            except (cst.ParserSyntaxError, engine.NotOnWhole):
                pass
    return engine.check(source, s, fix, ext=ext, quiet=quiet)


def check_file(path: Path, s: Settings, fix: bool = False, diff: bool = False, ext=None,
               lean: tuple | None = None) -> FileOutcome:
    """`ext`: the file's facts from the project index (analysis/external.FileFacts), if any.
    `lean`: (bytes, skeleton, cut def names, what the gate assumed, quiet defs) from the run's first pass
    (parallel.Early): those bytes were validated there, kept by the pre-filter, and skeletonised."""
    try:
        source = files.read_source(path, MAX_BYTES)
    except Exception as e:  # bad input never stops the run
        return FileOutcome(path, error=_one_line(_describe(e)))
    return check_source(path, source, s, fix, diff, ext=ext, lean=lean)


def check_source(path: Path, source: bytes, s: Settings, fix: bool = False, diff: bool = False,
                 write: bool = True, ext=None, lean: tuple | None = None) -> FileOutcome:
    """Check `source` as the content of `path`; with `fix` (and `write`), write the fixed code there.
    With `write=False`, `fixed_source` holds the fixed code instead (stdin mode). `lean`: as in
    `check_file`; used only for these bytes, in a lint-only run."""
    import libcst as cst

    engine = load()
    out = FileOutcome(path)
    ready = lean[1:] if lean is not None and lean[0] == source and not (fix or diff) else None
    tree = None
    if ready is None:
        try:
            tree = validate(source)
        except Exception as e:  # bad input never stops the run
            out.error = _one_line(_describe(e))
            return out
    try:
        if ready is not None or not s.prefilter or prefilter.may_have_findings(source, s.compiled_scope, tree, ext):
            with gcpause.paused():
                result = _in_big_thread(_check, source, tree, s, fix or diff, ext, ready)
        else:  # no compiled code: no rule can report (see prefilter.py)
            result = engine.Result([], source, 0)
        changed = result.fixed > 0 and result.source != source
        if changed:
            checks_out(result.source, path)  # a fix never leaves code that does not compile
            if cst.parse_module(source).bytes != source:
                raise BadInput("fixes not applied: libcst would not keep the rest of this file byte for byte "
                               "(form feeds or lone CR line endings)")
    except SyntaxError as e:
        out.error = _one_line(_fix_error(source, path, e))
        return out
    except Exception as e:
        out.error = _one_line(_describe(e))
        return out
    out.findings, out.fixed, out.fixed_codes = result.findings, result.fixed, dict(result.fixed_codes)
    if changed and not write:
        out.fixed_source = result.source
    if changed and diff:
        out.diff = _diff(path, source, result.source)
    elif changed and write:
        try:
            files.write_if_unchanged(path, source, result.source)
        except OSError as e:
            out.error, out.fixed = _one_line(f"cannot write fixes: {e.strerror or e}"), 0
    return out
