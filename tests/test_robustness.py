"""Bad input never crashes the run, a fix never corrupts a file, linting never runs the code it reads."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import fuzzgen
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmend_lint import engine, files, runner
from graphmend_lint.cli import main
from graphmend_lint.settings import Settings

PRINT_MODULE = """import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        print("x", x.shape)
        return x
"""
GUARD = "if not torch.compiler.is_compiling():"


def run(args, cwd: Path, capsys):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        code = main(args)
    finally:
        os.chdir(old)
    out = capsys.readouterr()
    return code, out.out, out.err


def snapshot(folder: Path) -> dict:
    """Bytes, mode and mtime of every plain file (no FIFOs, no broken links, not the result cache)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and stat.S_ISREG(p.stat().st_mode) and ".graphmend_cache" not in p.parts:
            st = p.stat()
            out[p.relative_to(folder).as_posix()] = (p.read_bytes(), st.st_mode, st.st_mtime_ns)
    return out


# name -> (bytes, expected one-line problem); each must fail and stay untouched.
BAD = {
    "syntax.py": (b"def f(:\n    pass\n", "syntax error at 1:7: invalid syntax"),
    "nul.py": (b"import torch\nx = 1\x00\n", "file contains null bytes"),
    "utf16.py": (PRINT_MODULE.encode("utf-16"), "UTF-16 file: Python source must be UTF-8"),
    "latin1_no_cookie.py": ("s = 'caf\xe9'\n".encode("latin-1"),
                            "cannot decode as utf-8: byte 0xe9 at line 1 (declare the file's encoding"),
    "bad_cookie.py": (b"# -*- coding: nonsense -*-\nx = 1\n", "the coding cookie names an unknown encoding: nonsense"),
    "bom_and_latin1_cookie.py": (b"\xef\xbb\xbf# -*- coding: latin-1 -*-\nx = 1\n", "contradicts the UTF-8 byte order mark"),
    "tab_error.py": (b"if True:\n\tx = 1\n        y = 2\n", "syntax error at 3:"),
    "deep_parens.py": (b"x = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n", "too many nested parentheses"),
    "deep_unary.py": (b"x = " + b"-" * 30000 + b"1\n", "nested too deeply for Python's parser"),
    "deep_binop.py": (b"x = " + b"1 + " * 20000 + b"1\n", "nested too deeply"),
    "deep_attribute.py": (b"x = a" + b".b" * 1000 + b"\n", "expression nested too deeply to analyse (depth"),
    "deep_and.py": (b"x = " + b"a and " * 30000 + b"b\n", "expression nested too deeply to analyse (depth"),
    "deep_ifexp.py": (b"x = " + b"a if b else " * 1000 + b"c\n", "expression nested too deeply to analyse (depth"),
    "huge.py": (PRINT_MODULE.encode() + b"x = 1\n" * 1_800_000, "file too large to analyse (10.8 MB; the limit is 1.0 MB, set GRAPHMEND_MAX_FILE_BYTES"),
}


def tab_indented(text: str) -> str:
    return re.sub(r"^( {4})+", lambda m: "\t" * (len(m.group(0)) // 4), text, flags=re.M)


# name -> bytes; each must be linted and fixed like PRINT_MODULE.
GOOD = {
    "plain.py": PRINT_MODULE.encode(),
    "bom.py": b"\xef\xbb\xbf" + PRINT_MODULE.encode(),
    "crlf.py": PRINT_MODULE.replace("\n", "\r\n").encode(),
    "mixed_endings.py": PRINT_MODULE.replace("\n", "\r\n", 3).encode(),
    "tabs.py": tab_indented(PRINT_MODULE).encode(),
    "latin1_cookie.py": ("# -*- coding: latin-1 -*-\n" + PRINT_MODULE.replace('"x"', '"caf\xe9"')).encode("latin-1"),
    "long_line.py": (PRINT_MODULE + "S = '" + "a" * 200_000 + "'\nL = [" + ", ".join(["1"] * 3000) + "]\n").encode(),
    "nested_190.py": PRINT_MODULE.replace("return x", "y = " + "[" * 190 + "x" + "]" * 190 + "\n        return x").encode(),
    "long_chain.py": PRINT_MODULE.replace("return x", "y = x" + " + x" * 150 + "\n        return x").encode(),
    "empty.py": b"",
}


@pytest.fixture()
def battery(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    for name, (data, _) in BAD.items():
        (tmp_path / name).write_bytes(data)
    for name, data in GOOD.items():
        (tmp_path / name).write_bytes(data)
    os.symlink("nowhere.py", tmp_path / "broken_link.py")
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "dir.py").mkdir()
    (tmp_path / "dir.py" / "inside.py").write_text(PRINT_MODULE)
    return tmp_path


EXTRA_BAD = {"broken_link.py": "broken symbolic link (to nowhere.py)", "fifo.py": "not a regular file"}


def error_lines(err: str) -> dict:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    parsed = dict(line[len("error: "):].split(": ", 1) for line in lines)
    assert len(parsed) == len(lines), "one line per failed file"
    return parsed


@pytest.mark.parametrize("mode", ["lint", "--fix", "--diff"])
def test_bad_input_battery(battery, capsys, mode):
    before = snapshot(battery)
    code, out, err = run(["check", "."] + ([] if mode == "lint" else [mode]), battery, capsys)
    assert code == 2
    errors = error_lines(err)
    expected = {**{n: p for n, (_, p) in BAD.items()}, **EXTRA_BAD}
    assert set(errors) == set(expected), err
    for name, problem in expected.items():
        assert problem in errors[name], (name, errors[name])
    after = snapshot(battery)
    for name in BAD:  # nothing is ever written to a file that failed
        assert after[name] == before[name], name
    fixable = [n for n in GOOD if n != "empty.py"] + ["dir.py/inside.py"]
    if mode == "--fix":
        for name in fixable:
            assert GUARD.encode() in after[name][0], name
            assert "M" in compile(after[name][0], name, "exec").co_names
        assert after["empty.py"] == before["empty.py"]
        assert not [p for p in battery.rglob("*.tmp")], "temporary files left behind"
    else:  # lint and --diff write nothing at all
        assert after == before
        for name in fixable:
            found = re.search(rf"^{re.escape(name)}:\d+:\d+: GM201 ", out, re.M) is not None
            assert found == (mode == "lint"), name
        if mode == "--diff":
            for name in fixable:
                assert f"+++ b/{name}" in out, name
            assert "caf\xe9" in out  # the latin-1 file is shown decoded with its own encoding


def test_size_limit_can_be_raised(tmp_path):
    code = [sys.executable, "-m", "graphmend_lint", "check", "big.py"]
    (tmp_path / "big.py").write_bytes(PRINT_MODULE.encode() + b"# padding\n" * 120_000)
    proc = subprocess.run(code, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2 and "file too large" in proc.stderr
    env = {**os.environ, "GRAPHMEND_MAX_FILE_BYTES": "2000000"}
    proc = subprocess.run(code, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "GM201" in proc.stdout, proc.stderr


def test_runner_reports_a_directory_named_like_a_file(tmp_path):
    (tmp_path / "x.py").mkdir()
    assert runner.check_file(tmp_path / "x.py", Settings()).error == "is a directory"


def test_directory_named_x_py_is_walked(tmp_path, capsys):
    (tmp_path / "x.py").mkdir()
    (tmp_path / "x.py" / "m.py").write_text(PRINT_MODULE)
    code, out, _ = run(["check", "x.py"], tmp_path, capsys)
    assert code == 1 and "GM201" in out


def test_unreadable_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "good.py").write_text(PRINT_MODULE)
    secret = tmp_path / "secret.py"
    secret.write_text(PRINT_MODULE)
    secret.chmod(0)
    try:
        with open(secret, "rb"):
            root_reads_anything = True
    except PermissionError:
        root_reads_anything = False
    if root_reads_anything:  # running as root (CI): make the OS refuse as it would for a user
        real_open = os.open

        def refusing_open(path, *args, **kwargs):
            if Path(path).name == "secret.py":
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(files.os, "open", refusing_open)
    code, out, err = run(["check", "--fix", "."], tmp_path, capsys)
    secret.chmod(0o644)
    assert code == 2
    assert error_lines(err) == {"secret.py": "cannot read: Permission denied"}
    assert GUARD in (tmp_path / "good.py").read_text()
    assert secret.read_text() == PRINT_MODULE


def fix_one(tmp_path, capsys, name: str, data: bytes) -> bytes:
    path = tmp_path / name
    path.write_bytes(data)
    code, out, err = run(["check", "--fix", name], tmp_path, capsys)
    assert code == 0, (out, err)
    return path.read_bytes()


def test_crlf_file_gets_crlf_fixes(tmp_path, capsys):
    guarded = tmp_path / "guard"
    guarded.mkdir()
    (guarded / "pyproject.toml").write_text('[tool.graphmend]\nlog-strategy = "guard"\n')
    fixed = fix_one(guarded, capsys, "m.py", GOOD["crlf.py"])
    assert fixed.count(b"\r\n") == fixed.count(b"\n") == PRINT_MODULE.count("\n") + 1
    assert (GUARD + "\r\n").encode() in fixed
    deferred = fix_one(tmp_path, capsys, "m.py", GOOD["crlf.py"])  # the helper too gets CRLF
    assert deferred.count(b"\r\n") == deferred.count(b"\n") > fixed.count(b"\n")
    assert b"def _graphmend_print(*args):\r\n" in deferred


def test_mixed_endings_are_kept_line_by_line(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend]\nlog-strategy = "guard"\n')
    fixed = fix_one(tmp_path, capsys, "m.py", GOOD["mixed_endings.py"])
    lines = fixed.splitlines(keepends=True)
    original = GOOD["mixed_endings.py"].splitlines(keepends=True)
    guard = next(i for i, line in enumerate(lines) if GUARD.encode() in line)
    assert lines[:guard] == original[:guard]
    assert lines[guard + 1:] == [b"    " + original[guard]] + original[guard + 1:]


def test_bom_is_kept(tmp_path, capsys):
    fixed = fix_one(tmp_path, capsys, "m.py", GOOD["bom.py"])
    assert fixed.startswith(b"\xef\xbb\xbfimport torch\n") and fixed.count(b"\xef\xbb\xbf") == 1


def test_latin1_with_cookie_is_fixed_in_latin1(tmp_path, capsys):
    fixed = fix_one(tmp_path, capsys, "m.py", GOOD["latin1_cookie.py"])
    assert fixed.startswith(b"# -*- coding: latin-1 -*-\n")
    assert b'print("caf\xe9", x.shape)' in fixed  # still one latin-1 byte, not UTF-8
    assert GUARD in fixed.decode("latin-1")


def test_tabs_stay_tabs(tmp_path, capsys):
    fixed = fix_one(tmp_path, capsys, "m.py", GOOD["tabs.py"])
    assert f"\t\t{GUARD}\n\t\t\tprint(".encode() in fixed
    compile(fixed, "m.py", "exec")


def test_permissions_are_kept_and_write_is_a_rename(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(PRINT_MODULE)
    path.chmod(0o751)
    inode = path.stat().st_ino
    fix_one(tmp_path, capsys, "m.py", path.read_bytes())
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert path.stat().st_ino != inode  # a new file renamed over the old one
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_read_only_file_is_not_replaced(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(PRINT_MODULE)
    path.chmod(0o444)
    code, _, err = run(["check", "--fix", "m.py"], tmp_path, capsys)
    assert code == 2
    assert error_lines(err) == {"m.py": "cannot write fixes: the file is read-only; not written"}
    assert path.read_text() == PRINT_MODULE and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_symlink_stays_a_link(tmp_path, capsys):
    (tmp_path / "real.py").write_text(PRINT_MODULE)
    (tmp_path / "link.py").symlink_to("real.py")
    code, _, err = run(["check", "--fix", "link.py"], tmp_path, capsys)
    assert code == 0, err
    assert (tmp_path / "link.py").is_symlink()
    assert GUARD in (tmp_path / "real.py").read_text()


def test_failed_rename_leaves_the_file_and_no_temporary(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(PRINT_MODULE)

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    code, _, err = run(["check", "--fix", "m.py"], tmp_path, capsys)
    assert code == 2
    assert error_lines(err) == {"m.py": "cannot write fixes: No space left on device"}
    assert path.read_text() == PRINT_MODULE
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_fix_that_does_not_compile_is_never_written(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(PRINT_MODULE)
    real_check = engine.check

    def corrupting_check(source, s, fix=False, **kw):
        result = real_check(source, s, fix=fix, **kw)
        result.source = result.source.replace(b"return x", b"return x +")
        return result

    monkeypatch.setattr(runner.load(), "check", corrupting_check)
    for flags in (["--fix"], ["--diff"]):
        code, out, err = run(["check", *flags, "m.py"], tmp_path, capsys)
        assert code == 2
        assert error_lines(err) == {
            "m.py": "a fix produced code that does not compile (invalid syntax, line 20); file left unchanged"}
        assert "+++" not in out
        assert path.read_text() == PRINT_MODULE


def test_file_changed_during_the_check_is_not_overwritten(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(PRINT_MODULE)
    real_check = engine.check

    def check_while_user_edits(source, s, fix=False, **kw):
        result = real_check(source, s, fix=fix, **kw)
        path.write_text(PRINT_MODULE + "# edited\n")
        return result

    monkeypatch.setattr(runner.load(), "check", check_while_user_edits)
    code, _, err = run(["check", "--fix", "m.py"], tmp_path, capsys)
    assert code == 2 and "the file changed while it was being checked" in err
    assert path.read_text() == PRINT_MODULE + "# edited\n"


def test_internal_error_in_one_file_does_not_stop_the_others(tmp_path, capsys, monkeypatch):
    (tmp_path / "a.py").write_text(PRINT_MODULE)
    (tmp_path / "b.py").write_text(PRINT_MODULE.replace("x.shape", "x.shape, 'boom'"))
    real_check = engine.check

    def flaky(source, s, fix=False, **kw):
        if b"boom" in source:
            raise KeyError("rule bug")
        return real_check(source, s, fix=fix, **kw)

    monkeypatch.setattr(runner.load(), "check", flaky)
    code, out, err = run(["check", "--fix", "."], tmp_path, capsys)
    assert code == 2
    assert error_lines(err) == {"b.py": "internal error: KeyError: 'rule bug'"}
    assert GUARD in (tmp_path / "a.py").read_text()


@pytest.mark.parametrize("data", [("\x0c" + PRINT_MODULE).encode(), PRINT_MODULE.replace("\n", "\r").encode()],
                         ids=["form-feed", "lone-cr"])
def test_file_libcst_cannot_keep_byte_for_byte_is_linted_but_never_rewritten(tmp_path, capsys, data):
    path = tmp_path / "m.py"
    path.write_bytes(data)
    code, out, _ = run(["check", "m.py"], tmp_path, capsys)
    assert code == 1 and "GM201" in out
    for flags in (["--fix"], ["--diff"]):
        code, out, err = run(["check", *flags, "m.py"], tmp_path, capsys)
        assert code == 2 and "fixes not applied: libcst would not keep the rest of this file" in err
        assert path.read_bytes() == data and "+++" not in out


def test_python_warnings_about_the_code_are_not_printed(tmp_path):
    (tmp_path / "m.py").write_text(PRINT_MODULE + 'PATTERN = "\\d+"\nSAME = PATTERN is "x"\n')
    proc = subprocess.run([sys.executable, "-W", "always", "-m", "graphmend_lint", "check", "--fix", "m.py"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert GUARD in (tmp_path / "m.py").read_text()


def test_fixing_twice_changes_nothing(battery, capsys):
    run(["check", "--fix", "."], battery, capsys)
    once = snapshot(battery)
    run(["check", "--fix", "."], battery, capsys)
    assert snapshot(battery) == once


MARKER_MODULE = """import pathlib
pathlib.Path({marker!r}).write_text("executed")
import torch
from torch import nn

if __name__ == "__main__":
    pathlib.Path({marker!r}).write_text("executed as main")


class M(nn.Module):
    def forward(self, x):
        print(x)
        return x
"""


def test_linting_never_runs_the_code(tmp_path, capsys):
    marker = tmp_path / "marker.txt"
    (tmp_path / "evil.py").write_text(MARKER_MODULE.format(marker=str(marker)))
    (tmp_path / "__init__.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('pkg')\n")
    for flags in ([], ["--diff"], ["--fix"]):
        run(["check", *flags, "."], tmp_path, capsys)
    proc = subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "--fix", "."], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert GUARD in (tmp_path / "evil.py").read_text()
    assert not marker.exists()
    assert "evil" not in sys.modules


PIECES = [b")", b"(", b":", b"\t", b"\x00", b"\xff", b"if ", b"\\", b"\n", b"\r", b"'", b'"""', b"    ",
          b"\x0c", b"lambda: ", b"[" * 300, b"-" * 5000, b"\xef\xbb\xbf", b"# -*- coding: latin-1 -*-\n"]
LINE_PIECES = [b"\n", b"# note \xc3\xa9\n", b"\r\n", b"\x0c\n", b"#\tx\r\n", b"\n\n\n"]  # usually still valid


@settings(max_examples=int(os.environ.get("GRAPHMEND_MUTATION_EXAMPLES", "40")), deadline=None, database=None,
          derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10**6), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 40),
                                                 st.sampled_from(PIECES + LINE_PIECES * 3)), min_size=1, max_size=4))
def test_mutated_programs_never_crash_nor_get_corrupted(tmp_path, seed, edits):
    """Damaged source (cut, spliced, bad bytes): an error or a result, never an exception or a hang,
    and a file is only ever rewritten with code that compiles."""
    data = bytearray(fuzzgen.generate(fuzzgen.RandomChooser(seed)).source.encode())
    for at, cut, piece in edits:
        at %= len(data) + 1
        if piece in LINE_PIECES:  # between two lines
            at, cut = data.rfind(b"\n", 0, at) + 1, 0
        data[at:at + cut] = piece
    path = tmp_path / f"m{seed}.py"
    path.write_bytes(bytes(data))
    out = runner.check_file(path, Settings(), fix=True)
    after = path.read_bytes()
    if out.error is not None:
        assert "\n" not in out.error and not out.error.startswith("internal error"), out.error
        assert after == bytes(data)
    elif after != bytes(data):
        compile(after, str(path), "exec")


def _exact_depth(tree) -> int:
    return runner._depth(tree)  # no source: every node walked


def _depth_zoo() -> list[bytes]:
    chains = [b"a" + b".b" * k for k in (180, 188, 191, 192, 195, 199, 200, 205)]
    chains += [b"[" * k + b"x" + b"]" * k for k in (150, 185, 195)]
    chains += [b"a and " * k + b"b" for k in (150, 190, 200, 210)]
    chains += [b"a if b else " * k + b"c" for k in (90, 98, 99, 100, 101, 105)]
    chains += [b"x" + b"[0]" * k for k in (190, 196, 199, 202)]
    chains += [b"f" + b"()" * k for k in (190, 197, 201)]
    out = []
    for expr in chains:
        for indent in (0, 2, 6):  # inside nested classes and defs
            head = b"".join(b"    " * i + b"class C%d:\n" % i for i in range(indent))
            out.append(head + b"    " * indent + b"y = " + expr + b"\n")
            out.append(head + b"    " * indent + b"y = g(\n" + b"    " * indent + b"  " + expr + b",\n)\n")
    deep = b"a" + b".b" * 205
    out.append(b"class C:\n    @" + deep + b"\n    def f(): pass\n")  # a decorator lies outside its def
    out.append(b"@" + deep + b"\nclass D: pass\n")
    return out


@pytest.mark.parametrize("source", _depth_zoo(), ids=lambda s: f"{len(s)}b")
def test_the_depth_check_answers_as_the_full_walk_where_it_matters(source):
    """runner._depth skips expressions too short to reach the limit: over the limit it says the
    same depth as a walk of every node, under it it says so too (the message names the depth)."""
    import ast

    tree = ast.parse(source)
    exact, fast = _exact_depth(tree), runner._depth(tree, source)
    assert (fast > runner.MAX_DEPTH) == (exact > runner.MAX_DEPTH)
    if exact > runner.MAX_DEPTH:
        assert fast == exact


def test_the_depth_zoo_lies_on_both_sides_of_the_limit():
    import ast

    depths = [_exact_depth(ast.parse(s)) for s in _depth_zoo()]
    assert sum(runner.MAX_DEPTH - 10 <= d <= runner.MAX_DEPTH for d in depths) >= 10
    assert sum(runner.MAX_DEPTH < d <= runner.MAX_DEPTH + 10 for d in depths) >= 10


def test_a_node_is_never_nested_deeper_than_its_length():
    """The bound runner._depth prunes by: the levels below a node (expression, statement, argument...)
    are at most its length in bytes (checked on this package, the tests' sources and a zoo of unusual
    forms, every node with a position; a decorated def or class is always walked: its decorators lie
    before its position)."""
    import ast
    import itertools

    zoo = b"""\
x = not not not not a; y = -(-(-x)); u = a ** b ** c; t = lambda: lambda: lambda: 0
s = f"{x!r:>{w}} {y=} {f'{z:{q}}'}"; p = {k: {j: [i for i in j if i] for j in k} for k in m}
n = a if b else c if d else e; m = (a := (b := 1)); k = [*a, *b], {**a, **{**b}}
h = a < b < c < d; g = x[1:2:3, ::, ...][a, b]; i = "a" "b" f"{d}" "e"; j = ((((x))))
def ff(a=lambda x=lambda y=0: y: x, *, b: "x" = f"{c}") -> f"{d}": return (yield)
async def af(): return await (await x)
match x:
    case {"k": [1, 2, *rest]} | Point(x=0) if (a := b): pass
"""
    root = Path(__file__).resolve().parents[1]
    sources = [zoo] + [p.read_bytes() for p in [*root.joinpath("graphmend_lint").rglob("*.py"), *Path(__file__).parent.glob("*.py")]]
    checked = 0
    for source in sources:
        if b"\r" in source:
            continue
        starts = [0, *itertools.accumulate(len(line) + 1 for line in source.split(b"\n"))]
        for node in ast.walk(ast.parse(source)):
            if getattr(node, "end_lineno", None) is not None and not getattr(node, "decorator_list", None):
                span = starts[node.end_lineno - 1] + node.end_col_offset - starts[node.lineno - 1] - node.col_offset
                assert _exact_depth(node) - 1 <= span, ast.unparse(node)
                checked += 1
    assert checked > 100_000
