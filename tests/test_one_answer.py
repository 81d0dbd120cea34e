"""One answer per file (issue 22): a file's findings and fixes depend on its project, never on the
run's file list or the entry point.

tests/data/onepkg is a project (pyproject.toml) whose bases, helpers, guards and compiled roots are
spread over files: a base two files away with a method the subclass calls (layers/root.py), a
helper called from a forward in another file (helpers.clamp), a def compiled by a script
(scripts/train.py: torch.compile(step)), a helper called only from a file `exclude` keeps from
being linted (legacy.py), a guard wrapper (guards.py). Every entry point must give, file by file,
what the CLI gives on the whole project: the CLI on subsets and on single files (pre-commit),
stdin with --stdin-filename, `fixit lint` / `fixit fix --automatic` through Fixit's own CLI, the
language server over stdio, and verify's lint.
"""
from __future__ import annotations

import io
import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphmend_lint import parallel
from graphmend_lint.analysis import root
from graphmend_lint.cli import main
from graphmend_lint.rules import ALL_RULES
from graphmend_lint.settings import Discovery

PKG = Path(__file__).resolve().parent / "data" / "onepkg"
EXPECTED = {("src/onepkg/helpers.py", 9, "GM101"), ("src/onepkg/helpers.py", 15, "GM201"),
            ("src/onepkg/helpers.py", 20, "GM202"), ("src/onepkg/layers/root.py", 6, "GM201"),
            ("src/onepkg/model.py", 14, "GM201")}
CODE = {r.__name__.removesuffix("Rule"): r.CODE for r in ALL_RULES}
FIXIT_ROW = re.compile(r"(.+?)@(\d+):(\d+) (\w+): (.*?)( \(has autofix\))?$")


@pytest.fixture()
def proj(tmp_path, monkeypatch) -> Path:
    dst = tmp_path / "onepkg"
    shutil.copytree(PKG, dst, ignore=shutil.ignore_patterns(".graphmend_cache", "__pycache__"))
    monkeypatch.setenv("GRAPHMEND_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(dst)
    root.forget()
    return dst


def py_files(proj: Path) -> list[str]:
    return sorted(p.relative_to(proj).as_posix() for p in proj.rglob("*.py"))


def cli(proj: Path, capsys, *args: str) -> set[tuple]:
    """(path, line, column, code, message, fix) of `graphmend-lint check --output-format json ARGS`."""
    capsys.readouterr()
    assert main(["check", "--output-format", "json", "--exit-zero", *args]) == 0
    rows = set()
    for d in json.loads(capsys.readouterr().out or "[]"):
        name = d["filename"] if d["filename"] != "-" else args[args.index("--stdin-filename") + 1]
        rel = Path(name).resolve().relative_to(proj.resolve()).as_posix() if Path(name).is_absolute() else name
        rows.add((rel, d["location"]["row"], d["location"]["column"], d["code"], d["message"],
                  json.dumps(d["fix"], sort_keys=True)))
    return rows


def only(rows: set[tuple], files: list[str]) -> set[tuple]:
    return {r for r in rows if r[0] in files}


def test_the_whole_project_sees_across_files(proj, capsys):
    whole = cli(proj, capsys, ".")
    assert {(r[0], r[1], r[3]) for r in whole} == EXPECTED
    safety = {(r[0], r[1]): json.loads(r[5])["applicability"] for r in whole}
    # `clamp` hands back the caller's own tensor where nothing is infinite: its fix is unsafe
    assert safety.pop(("src/onepkg/helpers.py", 9)) == "unsafe"
    assert set(safety.values()) == {"safe"}


def test_each_file_alone_and_every_subset_give_the_whole_answer(proj, capsys):
    whole = cli(proj, capsys, "--no-cache", ".")
    files = py_files(proj)
    for f in files:  # pre-commit on one changed file; the cold and the warm cache
        assert cli(proj, capsys, f) == only(whole, [f]), f
        assert cli(proj, capsys, f) == only(whole, [f]), f
        assert cli(proj, capsys, "--no-cache", f) == only(whole, [f]), f
    rnd = random.Random(22)
    for _ in range(6):
        some = rnd.sample(files, rnd.randint(2, len(files) - 1))
        assert cli(proj, capsys, *some) == only(whole, some), some


@pytest.mark.parametrize("jobs", [1, 2])
def test_findings_do_not_change_when_files_join_or_leave_the_run(proj, jobs):
    files = [proj / f for f in py_files(proj)]

    def lint(paths, cache):
        outs = parallel.check_files(paths, Discovery().for_path(paths[0]), jobs=jobs, use_cache=cache)
        return {o.path: sorted((f.line, f.col, f.code, f.message) for f in o.findings) for o in outs}

    whole = lint(files, False)
    assert sum(map(len, whole.values())) == len(EXPECTED)
    rnd = random.Random(jobs)
    for i in range(8):
        some = rnd.sample(files, rnd.randint(1, len(files)))
        got = lint(some, i % 2 == 0)
        assert got == {p: whole[p] for p in some}, some


def test_stdin_filename_gives_the_files_answer(proj, capsys, monkeypatch):
    whole = cli(proj, capsys, ".")
    for f in sorted({r[0] for r in whole}):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((proj / f).read_bytes())))
        assert cli(proj, capsys, "--stdin-filename", f, "-") == only(whole, [f]), f


def fixit(proj: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fixit", "--rules", "graphmend_lint", *args], cwd=proj,
                          capture_output=True, text=True, timeout=600)


def fixit_rows(out: str) -> set[tuple]:
    rows = set()
    for line in out.splitlines():
        m = FIXIT_ROW.match(line)
        if m:
            rows.add((Path(m[1]).as_posix(), int(m[2]), int(m[3]) + 1, CODE[m[4]], m[5]))
    return rows


def test_fixit_lint_agrees_with_the_cli_on_any_file_list(proj, capsys):
    whole = {r[:5] for r in cli(proj, capsys, ".")}
    linted = [f for f in py_files(proj) if f != "src/onepkg/legacy.py"]  # `exclude`: Fixit lints it, it has none
    assert fixit_rows(fixit(proj, "lint", *linted).stdout) == whole
    for f in sorted({r[0] for r in whole}):
        assert fixit_rows(fixit(proj, "lint", f).stdout) == only(whole, [f]), f


def test_fixit_fix_applies_what_the_cli_applies(proj, tmp_path, capsys):
    """helpers.py imports torch, so Fixit (which cannot add imports) offers each fix the CLI offers."""
    other = tmp_path / "other"
    shutil.copytree(proj, other)
    helpers = "src/onepkg/helpers.py"
    fixit(proj, "fix", "--automatic", helpers)  # alone: its callers are in other files
    assert main(["check", "--fix", "--exit-zero", "--quiet", str(other / helpers)]) == 0
    fixed = (proj / helpers).read_text()
    assert fixed != (PKG / helpers).read_text()
    assert "if not torch.compiler.is_compiling():\n        print(\"step\", x.shape)" in fixed
    assert "logger.warning(\"legacy\")" in fixed and "print(\"never compiled\")\n" in fixed
    assert fixed == (other / helpers).read_text()


def _frame(msg: dict) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _messages(out: bytes) -> list[dict]:
    msgs = []
    while out:
        head, _, rest = out.partition(b"\r\n\r\n")
        n = int(re.search(rb"Content-Length: (\d+)", head)[1])
        msgs.append(json.loads(rest[:n]))
        out = rest[n:]
    return msgs


def test_language_server_over_stdio_agrees(proj, capsys):
    pytest.importorskip("pygls")
    whole = cli(proj, capsys, ".")
    files = py_files(proj)
    stream = _frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"processId": None, "rootUri": proj.as_uri(), "capabilities": {}}})
    stream += _frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    for f in files:
        stream += _frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": (proj / f).as_uri(), "languageId": "python", "version": 1, "text": (proj / f).read_text()}}})
    stream += _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    stream += _frame({"jsonrpc": "2.0", "method": "exit"})
    proc = subprocess.run([sys.executable, "-m", "graphmend_lint", "server"], input=stream, cwd=proj,
                          capture_output=True, timeout=600)
    got = set()
    published = set()
    for m in _messages(proc.stdout):
        if m.get("method") == "textDocument/publishDiagnostics":
            path = Path(m["params"]["uri"].removeprefix("file://")).relative_to(proj).as_posix()
            published.add(path)
            got |= {(path, d["range"]["start"]["line"] + 1, d["range"]["start"]["character"] + 1, d["code"],
                     d["message"]) for d in m["params"]["diagnostics"]}
    assert published == set(files), proc.stderr.decode()[-2000:]
    assert got == {r[:5] for r in whole}


def test_verify_lints_with_the_project_index(proj, capsys):
    from graphmend_lint.verify import run

    whole = cli(proj, capsys, ".")
    paths = [str(proj / f) for f in sorted({r[0] for r in whole})]
    findings, errors = run.lint(paths, Discovery().for_path(Path(paths[0])))
    assert not errors
    got = {(Path(p).relative_to(proj).as_posix(), f.line, f.col + 1, f.code, f.message)
           for p, fs in findings.items() for f in fs}
    assert got == {r[:5] for r in whole}


def test_project_discovery(tmp_path):
    (tmp_path / "repo" / "src" / "pkg" / "sub").mkdir(parents=True)
    for f in ("src/pkg/__init__.py", "src/pkg/sub/__init__.py", "src/pkg/sub/m.py"):
        (tmp_path / "repo" / f).write_text("")
    (tmp_path / "repo" / "setup.cfg").write_text("")
    root.forget()
    assert root.find_project(tmp_path / "repo/src/pkg/sub/m.py").root == tmp_path / "repo"
    site = tmp_path / "repo/.venv/lib/python3.11/site-packages/lib/x"
    site.mkdir(parents=True)
    (site.parent / "__init__.py").write_text("")
    (site / "__init__.py").write_text("")
    assert root.find_project(site / "y.py").root == site.parent  # installed: the top of the __init__ chain
    (tmp_path / "loose").mkdir()
    p = root.find_project(tmp_path / "loose" / "s.py")
    assert (p.root, p.recursive) == (tmp_path / "loose", False)
    assert root.project_files(root.find_project(tmp_path / "repo/src/pkg/sub/m.py")) == [
        tmp_path / "repo" / f for f in ("src/pkg/__init__.py", "src/pkg/sub/__init__.py", "src/pkg/sub/m.py")]


def test_src_setting_names_the_project(tmp_path):
    from graphmend_lint.settings import from_table

    s = from_table({"src": ["lib", "tools"]}, root=tmp_path)
    p = root.find_project(tmp_path / "lib" / "a.py", s)
    assert p.root == tmp_path and p.folders == (tmp_path / "lib", tmp_path / "tools")


def test_files_with_other_per_file_settings_get_the_same_facts(proj, capsys):
    """per-file-ignores split the CLI's run into groups of settings: each group's files still get
    their project's facts (the index is built once and kept for the next group)."""
    text = (proj / "pyproject.toml").read_text()
    (proj / "pyproject.toml").write_text(text + 'per-file-ignores = { "src/onepkg/model.py" = ["GM9"] }\n')
    assert {(r[0], r[1], r[3]) for r in cli(proj, capsys, "--no-cache", ".")} == EXPECTED
