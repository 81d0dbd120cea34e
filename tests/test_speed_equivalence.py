"""The fast paths (workers, cache, pre-filter) change nothing: same findings as a serial,
uncached, unfiltered run and as Fixit; the cache invalidates on content, settings and code."""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from graphmend_lint import cache, prefilter, settings
from graphmend_lint.analysis import summary
from graphmend_lint.cli import main
from graphmend_lint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parents[1]
ORIGINALS = sorted(p for p in (ROOT / "tests/fixtures").rglob("*.py") if not p.name.endswith(".fixed.py"))
JSON = ["check", ".", "--output-format", "json", "--exit-zero"]
PRINTING = """\
import torch


class M(torch.nn.Module):
    def forward(self, x):
        print(x)
        return x
"""


def run(args: list[str], cwd: Path, capsys, monkeypatch) -> list[dict]:
    monkeypatch.chdir(cwd)
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def stored(folder: Path, kind: str) -> int:
    """Entries of `kind` written to the cache in `folder` (read by another connection)."""
    if not (folder / "v2" / "cache.db").exists():
        return 0
    db = sqlite3.connect(folder / "v2" / "cache.db")
    try:
        return db.execute("SELECT count(*) FROM entries WHERE key LIKE ?", (kind + "/%",)).fetchone()[0]
    finally:
        db.close()


@pytest.fixture()
def fixtures(tmp_path):
    work = tmp_path / "fx"
    for p in ORIGINALS:
        target = work / p.relative_to(ROOT / "tests/fixtures")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, target)
    (work / "pyproject.toml").write_text("[tool.graphmend]\n")
    return work


def test_workers_cache_and_prefilter_change_nothing(fixtures, capsys, monkeypatch):
    serial = run([*JSON, "--no-cache", "--no-prefilter", "-j", "1"], fixtures, capsys, monkeypatch)
    assert not (fixtures / ".graphmend_cache").exists()
    cold = run([*JSON, "-j", "2"], fixtures, capsys, monkeypatch)
    assert stored(fixtures / ".graphmend_cache", "res") == len(ORIGINALS)  # every clean file stored
    warm = run([*JSON, "-j", "2"], fixtures, capsys, monkeypatch)
    assert serial == cold == warm
    assert {d["code"][:3] for d in serial} >= {"GM1", "GM2", "GM3", "GM9"}
    for case in [p for p in ORIGINALS if p.name.startswith("invalid_")]:
        code = case.parent.name
        assert any(d["code"] == code and Path(d["filename"]).name == case.name for d in warm), case


@pytest.mark.slow
def test_fixit_finds_the_same_on_the_fixtures(fixtures, capsys, monkeypatch):
    fixit_name = {r.CODE: r.__name__.removesuffix("Rule") for r in ALL_RULES}  # JSON is ruff's: code, no name
    ours = {(Path(os.path.relpath(d["filename"], fixtures)).as_posix(), d["location"]["row"],
             d["location"]["column"] - 1, fixit_name[d["code"]], d["message"])
            for d in run([*JSON, "-j", "2"], fixtures, capsys, monkeypatch)}
    proc = subprocess.run([sys.executable, "-m", "fixit", "--rules", "graphmend_lint", "lint", "."],
                          cwd=fixtures, capture_output=True, text=True)
    assert "EXCEPTION" not in proc.stdout + proc.stderr
    theirs = set()
    for line in proc.stdout.splitlines():
        m = re.match(r"(.+?)@(\d+):(\d+) (\w+): (.*?)(?: \(has autofix\))?$", line)
        if m:
            theirs.add((Path(m[1]).as_posix(), int(m[2]), int(m[3]), m[4], m[5]))
    assert ours == theirs and len(ours) >= len([p for p in ORIGINALS if p.name.startswith("invalid_")])


def test_cache_follows_the_content(tmp_path, capsys, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    m = tmp_path / "m.py"
    m.write_text(PRINTING)
    assert [d["code"] for d in run(JSON, tmp_path, capsys, monkeypatch)] == ["GM201"]
    m.write_text(PRINTING.replace("print(x)", "y = x"))
    assert run(JSON, tmp_path, capsys, monkeypatch) == []
    m.write_text(PRINTING.replace("print(x)", "print(x)\n        print(x)"))
    assert [d["code"] for d in run(JSON, tmp_path, capsys, monkeypatch)] == ["GM201", "GM201"]
    assert stored(tmp_path / ".graphmend_cache", "res") == 3
    m.write_text(PRINTING)  # back to the first content: served from the cache, same answer
    assert [d["code"] for d in run(JSON, tmp_path, capsys, monkeypatch)] == ["GM201"]
    assert stored(tmp_path / ".graphmend_cache", "res") == 3


def test_cache_follows_the_settings(tmp_path, capsys, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    (tmp_path / "m.py").write_text(PRINTING)
    assert [d["code"] for d in run(JSON, tmp_path, capsys, monkeypatch)] == ["GM201"]
    assert run([*JSON, "--select", "GM9"], tmp_path, capsys, monkeypatch) == []
    assert run([*JSON, "--ignore", "GM2"], tmp_path, capsys, monkeypatch) == []
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend]\nignore = ["GM201"]\n')
    assert run(JSON, tmp_path, capsys, monkeypatch) == []
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    assert [d["code"] for d in run(JSON, tmp_path, capsys, monkeypatch)] == ["GM201"]
    base = settings.Settings()
    keys = {cache.Cache(tmp_path, s).key(b"x") for s in (
        base, settings.Settings(unsafe_fixes=True), settings.Settings(compiled_scope="all"),
        settings.Settings(select=("GM1",)), settings.Settings(log_strategy="guard"))}
    assert len(keys) == 5
    assert cache.Cache(tmp_path, base).key(b"x") == cache.Cache(tmp_path / "other", base).key(b"x")


def test_cache_follows_the_code(tmp_path, monkeypatch):
    before = cache.Cache(tmp_path, settings.Settings()).key(b"x")
    monkeypatch.setattr(cache, "_tool_fingerprint", lambda: b"another version of the rules")
    assert cache.Cache(tmp_path, settings.Settings()).key(b"x") != before


def test_cache_follows_the_installed_libcst_and_fixit(tmp_path, monkeypatch):
    """A reinstall of libcst or fixit (any version) writes their files anew: new keys."""
    pkg = tmp_path / "gm_installed_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = cache._installed("gm_installed_probe")
    assert first.startswith(str(pkg / "__init__.py"))
    os.utime(pkg / "__init__.py", ns=(1, 1))
    assert cache._installed("gm_installed_probe") != first
    assert cache._installed("no_such_package_here") == "?"
    assert "libcst/__init__.py" in cache._installed("libcst").replace(os.sep, "/")
    before = cache._tool_fingerprint()
    monkeypatch.setattr(cache, "_installed", lambda name: "reinstalled" if name == "fixit" else "same")
    assert cache._tool_fingerprint() != before


def test_fix_is_applied_even_when_the_findings_are_cached(tmp_path, capsys, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    m = tmp_path / "m.py"
    m.write_text(PRINTING)
    run(JSON, tmp_path, capsys, monkeypatch)  # warm the cache
    monkeypatch.chdir(tmp_path)
    main(["check", ".", "--fix", "-q"])
    capsys.readouterr()
    assert "is_compiling()" in m.read_text()
    assert run(JSON, tmp_path, capsys, monkeypatch) == []


def test_concurrent_writers_leave_whole_entries(tmp_path):
    """Threads of one process and processes of their own write the same entries: each reads whole."""
    c = cache.Cache(tmp_path, settings.Settings())
    key = c.key(PRINTING.encode())
    from graphmend_lint.rules import base

    finding = base.Finding("GM201", "PrintInCompiledCode", 6, 8, 6, 16, "m", base.Safety.SAFE)

    def write():
        for _ in range(20):
            c.put(key, [finding] * 50)
            c.flush()

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    code = ("import sys, pickle; from graphmend_lint import cache; c = pickle.loads(sys.stdin.buffer.read())\n"
            "for i in range(200): c.put_json('idx', 'ab' * 32, {'i': i, 'pad': 'x' * 5000}); c.flush()")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, cwd=ROOT) for _ in range(3)]
    import pickle

    for proc in procs:
        proc.communicate(pickle.dumps(c))
    assert [proc.returncode for proc in procs] == [0, 0, 0]
    got = c.get(key)
    assert got is not None and len(got) == 50 and got[0].line == 6 and got[0].safety is base.Safety.SAFE
    other = cache.Cache(tmp_path, settings.Settings())
    assert other.get_json("idx", "ab" * 32) == {"i": 199, "pad": "x" * 5000}
    assert {p.name for p in tmp_path.rglob("*") if p.is_file()} <= {".gitignore", "cache.db", "cache.db-wal", "cache.db-shm"}


def test_writes_wait_in_memory_until_flushed_then_one_file_holds_them(tmp_path):
    c = cache.Cache(tmp_path, settings.Settings())
    c.put_json("idx", "ab" * 32, {"x": [1, 2]})
    assert c.get_json("idx", "ab" * 32) == {"x": [1, 2]}  # this process sees its own writes
    assert stored(tmp_path, "idx") == 0
    c.flush()
    assert stored(tmp_path, "idx") == 1
    for i in range(cache._Store.FLUSH_AT):  # many waiting: written without being asked
        c.put_json("res", f"{i:064x}", [])
    assert stored(tmp_path, "res") == cache._Store.FLUSH_AT
    assert (tmp_path / ".gitignore").read_text().endswith("*\n")


def _child_writes(c) -> None:
    c.put_json("idx", "cd" * 32, 2)
    cache.flush_all()  # a forked worker ends with os._exit: workers.py flushes before it


def test_a_fork_takes_no_connection_along(tmp_path):
    """SQLite's connections and locks must not cross a fork: they are closed before one (and open
    again when next used); the child opens its own."""
    import multiprocessing

    c = cache.Cache(tmp_path, settings.Settings())
    c.put_json("idx", "ab" * 32, 1)
    c.flush()
    store = cache._store(c.dir)
    assert c.get_json("idx", "ab" * 32) == 1 and store.db is not None
    child = multiprocessing.get_context("fork").Process(target=_child_writes, args=(c,))
    child.start()
    child.join()
    assert child.exitcode == 0 and store.db is None
    assert c.get_json("idx", "cd" * 32) == 2 and c.get_json("idx", "ab" * 32) == 1


def test_a_cleared_or_broken_cache_is_made_again(tmp_path):
    import shutil

    c = cache.Cache(tmp_path / "c", settings.Settings())
    c.put_json("idx", "ab" * 32, 1)
    c.flush()
    shutil.rmtree(tmp_path / "c")  # the user clears it while a process holds it open
    c.put_json("idx", "cd" * 32, 2)
    c.flush()
    assert stored(tmp_path / "c", "idx") == 1
    bad = tmp_path / "bad"
    (bad / "v2").mkdir(parents=True)
    (bad / "v2" / "cache.db").write_bytes(b"not a database" * 100)
    b = cache.Cache(bad, settings.Settings())
    b.put_json("idx", "ab" * 32, 3)
    b.flush()
    assert b.get_json("idx", "ab" * 32) == 3 and stored(bad, "idx") == 1


def test_a_cache_that_cannot_be_written_is_only_slower(tmp_path):
    (tmp_path / "file").write_text("")
    c = cache.Cache(tmp_path / "file", settings.Settings())  # its folder cannot be made
    c.put_json("idx", "ab" * 32, 1)
    c.flush()
    assert c.get_json("idx", "ab" * 32) is None


def test_prefilter_keeps_every_rule_example_and_fixture():
    for rule in ALL_RULES:
        for case in rule.INVALID:
            assert prefilter.may_have_findings(textwrap.dedent(case.code).encode(), "reachable"), rule.CODE
    for p in ORIGINALS:
        if p.name.startswith("invalid_"):
            assert prefilter.may_have_findings(p.read_bytes(), "reachable"), p


def test_prefilter_skips_only_files_without_compiled_code():
    skip = [b"def f(x):\n    print(x)\n", b"import torch\nclass A:\n    def forward(self, x):\n        print(x)\n",
            b"x = 'forward torch'\n",
            b"import re, torch\nPAT = re.compile('x')\n",  # not torch's compile
            b'import torch\ndef f():\n    """Use with `torch.compile`."""\n',  # named only in a string
            b"import torch\nfrom x import compile\ncompile(f)\n"]
    keep = [PRINTING.encode(), b"import torch\n@torch.compile\ndef f(x):\n    print(x)\n",
            b"import torch as t\ng = t.compile(f)\n", b"from torch._dynamo import optimize\n",
            b"import torch._dynamo as d\n@d.optimize('eager')\ndef f(x):\n    print(x)\n",
            b"from torch import *\n@compile\ndef f(x):\n    print(x)\n",
            b"class A(B):\n    if X:\n        def forward(self, x):\n            print(x)\n"]
    assert [prefilter.may_have_findings(s, "reachable") for s in skip] == [False] * len(skip)
    assert all(prefilter.may_have_findings(s, "reachable") for s in keep)
    assert all(prefilter.may_have_findings(s, "all") for s in skip)


def test_a_warm_run_of_many_files_reads_one_entry(fixtures, capsys, monkeypatch):
    """A lint-only run of RUN_MIN files or more stores its findings together; the next run with the
    same contents and facts reads that one entry and prints what the per-file entries give. A
    changed file (or changed facts) changes the run's key: its files are looked up one by one."""
    from graphmend_lint import parallel

    assert len(ORIGINALS) >= parallel.RUN_MIN
    cold = run(JSON, fixtures, capsys, monkeypatch)
    reads = []
    monkeypatch.setattr(cache.Cache, "get", lambda self, key: reads.append(key))  # per-file entries: none
    assert run(JSON, fixtures, capsys, monkeypatch) == cold and reads == []
    monkeypatch.undo()
    first = next(p for p in sorted(fixtures.rglob("*.py")) if "print(" not in p.read_text())
    first.write_text(first.read_text() + "\n\nclass Extra(torch.nn.Module):\n    def forward(self, x):\n"
                                         "        print(x)\n        return x\n")
    got = run(JSON, fixtures, capsys, monkeypatch)
    added = [d for d in got if d not in cold]
    assert [(Path(d["filename"]).name, d["code"]) for d in added] == [(first.name, "GM201")]
    assert len(got) == len(cold) + 1


def test_an_unchanged_run_reads_no_file(fixtures, capsys, monkeypatch):
    """stamps.py: a lint-only run of RUN_MIN files or more records each file's stamp; the next run
    of the same files, none changed, reads none and prints the same. A write that keeps the size
    and sets the modification time back is still seen (its change time moved), and so is a new
    file of the project that the run does not lint (an excluded helper)."""
    from graphmend_lint import files, parallel, stamps

    assert len(ORIGINALS) >= parallel.RUN_MIN  # a run this size records stamps
    monkeypatch.setattr(stamps, "SLACK_NS", 0)  # the fixture's files were written just now
    (fixtures / "pyproject.toml").write_text('[tool.graphmend]\nexclude = ["extra"]\n')
    probe = fixtures / "zz_probe.py"
    probe.write_text(PRINTING)
    cold = run(JSON, fixtures, capsys, monkeypatch)
    assert any(Path(d["filename"]).name == probe.name for d in cold)
    reads: list[Path] = []
    real_read = files.read_source
    monkeypatch.setattr(files, "read_source", lambda p, *a: reads.append(p) or real_read(p, *a))
    assert run(JSON, fixtures, capsys, monkeypatch) == cold and reads == []

    st = probe.stat()
    probe.write_text(PRINTING.replace("print(x)", "abs_x(x)"))  # same size
    os.utime(probe, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert probe.stat().st_size == st.st_size and probe.stat().st_mtime_ns == st.st_mtime_ns
    edited = run(JSON, fixtures, capsys, monkeypatch)
    assert reads and not any(Path(d["filename"]).name == probe.name for d in edited)
    reads.clear()
    assert run(JSON, fixtures, capsys, monkeypatch) == edited and reads == []

    (fixtures / "extra").mkdir()
    (fixtures / "extra" / "helper.py").write_text("def helper(x):\n    return x\n")
    assert run(JSON, fixtures, capsys, monkeypatch) == edited and reads  # read again: a new project file


def test_stamps_are_kept_only_for_files_older_than_the_run(tmp_path):
    """A file changed within SLACK_NS of the run's start may change again within one tick of a
    coarse clock: no record then. A changed installed file the index read refuses the record."""
    from graphmend_lint import stamps

    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    assert stamps.record([f], stamps.Depends(), stamps.now()) is None  # written just now
    later = stamps.now() + 10 * stamps.SLACK_NS
    got = stamps.record([f], stamps.Depends(external={str(f)}), later)
    assert got is not None and set(got["files"]) == {str(f)}
    assert stamps.unchanged(got) and stamps.same_files(got, {str(f)})
    assert not stamps.same_files(got, {str(f), str(tmp_path / "b.py")})
    assert stamps.record([f], stamps.Depends(ok=False), later) is None
    lib = tmp_path / "lib.py"
    lib.write_text("y = 2\n")
    got = stamps.record([f], stamps.Depends(external={str(lib)}), later)
    lib.write_text("y = 3\n")
    assert not stamps.unchanged(got)


def test_a_run_hashes_each_source_once(fixtures, capsys, monkeypatch):
    """The project index's content digest of a file also makes its cache keys: a cold run (its
    first pass, lint and store) and a warm run each hash each source's bytes once (they hashed
    them twice), and print the same findings."""
    import hashlib

    from graphmend_lint import parallel

    hashed: list[bytes] = []
    real = hashlib.sha256

    def counting(data=b"", *args, **kwargs):
        hashed.append(bytes(data))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(parallel.hashlib, "sha256", counting)
    monkeypatch.setattr(cache.hashlib, "sha256", counting)
    sources = [p.read_bytes() for p in sorted(fixtures.rglob("*.py")) if p.stat().st_size > 100]
    assert len(sources) >= parallel.RUN_MIN
    runs = []
    for _ in ("cold", "warm"):
        hashed.clear()
        runs.append(run([*JSON, "--jobs", "1"], fixtures, capsys, monkeypatch))  # workers in this process
        times = [sum(src in data for data in hashed) for src in sources]
        assert times == [1] * len(sources), times
    assert runs[0] == runs[1]


def test_the_walk_of_marked_lines_reaches_the_same_nodes_in_order():
    """prefilter.walk_lines leaves out the statements on no marked line (their decorators count):
    the imports it reaches, and the names `compile`/`optimize`, are ast.walk's, in its order."""
    sources = [p.read_bytes() for p in sorted((ROOT / "graphmend_lint").rglob("*.py"))]
    sources += [p.read_bytes() for p in ORIGINALS]
    sources.append(b"import torch\n\n@torch.compile(\n    mode='x')\n@other\nclass A:\n    import os\n"
                   b"    def f(self):\n        from torch import compile as c\n        return c\n")
    checked = 0
    for source in sources:
        tree = ast.parse(source)
        is_import = (ast.Import, ast.ImportFrom)
        want = [n for n in ast.walk(tree) if isinstance(n, is_import)]
        got = [n for n in prefilter.walk_lines(tree, summary.marked_lines(source, [b"import"])) if isinstance(n, is_import)]
        assert got == want
        words = {"compile", "optimize"}

        def named(n):
            return isinstance(n, ast.Name) and n.id in words or isinstance(n, ast.Attribute) and n.attr in words

        lines = summary.marked_lines(source, [w.encode() for w in words])
        assert [n for n in prefilter.walk_lines(tree, lines) if named(n)] == [n for n in ast.walk(tree) if named(n)]
        checked += bool(want)
    assert checked > 50
