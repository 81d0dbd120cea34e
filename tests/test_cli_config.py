"""The CLI and configuration the ruff way: selectors, discovery per file, --config, environment,
per-file-ignores, extend-exclude, .gitignore, stdin, --statistics, --diff, --show-fixes, --fix-only."""
from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from graphmend_lint import cli
from graphmend_lint.cli import main

MODEL = """import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        print("x", x.shape)
        return x
"""


def run(args, cwd: Path, capsys, stdin: str | None = None, monkeypatch=None):
    old = os.getcwd()
    os.chdir(cwd)
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    try:
        code = main(["check", "--no-cache", *args])
    except SystemExit as e:  # argparse errors
        code = e.code
    finally:
        os.chdir(old)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture()
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


@pytest.mark.parametrize("flag", ["--select", "--ignore", "--extend-select"])
@pytest.mark.parametrize("code", ["GM999", "XYZ", "GM1O1", "gm9999"])
def test_unknown_selector_on_the_command_line_exits_2_and_names_it(project, capsys, flag, code):
    rc, out, err = run([flag, f"GM2,{code}", "."], project, capsys)
    assert rc == 2
    assert f"`{code.upper()}`" in err and "unknown rule selector" in err
    assert "All checks passed" not in out


@pytest.mark.parametrize("key", ["select", "ignore", "per-file-ignores"])
def test_unknown_selector_in_the_config_exits_2(project, capsys, key):
    value = '{"*.py" = ["GM9999"]}' if key == "per-file-ignores" else '["GM9999"]'
    (project / "pyproject.toml").write_text(f"[tool.graphmend]\n{key} = {value}\n")
    rc, out, err = run(["."], project, capsys)
    assert rc == 2 and "`GM9999`" in err and "pyproject.toml" in err
    assert "All checks passed" not in out


def test_prefixes_are_selectors(project, capsys):
    assert run(["--select", "GM", "."], project, capsys)[0] == 1
    assert run(["--select", "GM2", "."], project, capsys)[0] == 1
    assert run(["--select", "GM9", "."], project, capsys)[0] == 0


def test_config_is_found_from_the_linted_file_not_the_cwd(project, capsys, tmp_path_factory):
    (project / "pyproject.toml").write_text('[tool.graphmend]\nignore = ["GM201"]\n')
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "pyproject.toml").write_text("[tool.graphmend]\n")
    assert run([str(project)], elsewhere, capsys)[0] == 0
    assert run([str(project / "model.py")], elsewhere, capsys)[0] == 0
    assert run([str(project)], Path("/"), capsys)[0] == 0


def test_nearest_config_wins_per_subproject(project, capsys):
    sub = project / "pkg"
    sub.mkdir()
    (sub / "model.py").write_text(MODEL)
    (sub / "pyproject.toml").write_text('[tool.graphmend]\nignore = ["GM201"]\n')
    rc, out, _ = run(["."], project, capsys)
    assert rc == 1 and "model.py:7:9" in out and "pkg" not in out


def test_pyproject_without_our_table_is_skipped(project, capsys):
    sub = project / "pkg"
    sub.mkdir()
    (sub / "model.py").write_text(MODEL)
    (sub / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    (project / "pyproject.toml").write_text('[tool.graphmend]\nignore = ["GM201"]\n')
    assert run(["pkg"], project, capsys)[0] == 0


def test_config_file_missing_is_an_error(project, capsys):
    rc, out, err = run(["--config", "missing.toml", "."], project, capsys)
    assert rc == 2 and "missing.toml" in err and "no such configuration file" in err
    assert "All checks passed" not in out


def test_config_file_replaces_discovery(project, capsys, tmp_path_factory):
    other = tmp_path_factory.mktemp("cfg") / "pyproject.toml"
    other.write_text('[tool.graphmend]\nignore = ["GM2"]\n')
    assert run(["--config", str(other), "."], project, capsys)[0] == 0


@pytest.mark.parametrize("override, message", [
    ("selct = ['GM1']", "unknown option"),
    ("compiled-scope = 'everywhere'", "compiled-scope must be one of"),
    ("unsafe-fixes = 3", "unsafe-fixes must be true or false"),
    ("select = ['GM9999']", "`GM9999`"),
    ("select = [GM2", "neither a file nor a TOML"),
])
def test_config_override_is_validated(project, capsys, override, message):
    rc, out, err = run(["--config", override, "."], project, capsys)
    assert rc == 2 and message in err, err
    assert "All checks passed" not in out


def test_config_override_applies(project, capsys):
    assert run(["--config", "ignore = ['GM201']", "."], project, capsys)[0] == 0
    assert run(["--config", "compiled-scope = 'all'", "."], project, capsys)[0] == 1


@pytest.mark.parametrize("var, value", [("GRAPHMEND_COMPILED_SCOPE", "everything"),
                                        ("GRAPHMEND_LOG_STRATEGY", "later"), ("GRAPHMEND_UNSAFE_FIXES", "maybe")])
def test_bad_environment_override_is_an_error(project, capsys, monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    rc, _, err = run(["."], project, capsys)
    assert rc == 2 and var in err and repr(value) in err


def test_good_environment_override_applies(project, capsys, monkeypatch):
    (project / "helper.py").write_text("def f(x):\n    print(x)\n")
    assert run(["helper.py"], project, capsys)[0] == 0
    monkeypatch.setenv("GRAPHMEND_COMPILED_SCOPE", "all")
    assert run(["helper.py"], project, capsys)[0] == 1


def test_per_file_ignores(project, capsys):
    (project / "tests").mkdir()
    (project / "tests" / "test_m.py").write_text(MODEL)
    (project / "pyproject.toml").write_text('[tool.graphmend]\nper-file-ignores = {"tests/*" = ["GM201"]}\n')
    rc, out, _ = run(["."], project, capsys)
    assert rc == 1 and "model.py:7:9" in out and "test_m.py" not in out
    (project / "pyproject.toml").write_text('[tool.graphmend]\nper-file-ignores = {"model.py" = ["GM2"]}\n')
    rc, out, _ = run(["."], project, capsys)
    assert "tests/test_m.py:7:9" in out and "\nmodel.py" not in out and not out.startswith("model.py")


def test_per_file_ignores_are_not_fixed(project, capsys):
    (project / "pyproject.toml").write_text('[tool.graphmend]\nper-file-ignores = {"model.py" = ["GM201"]}\n')
    assert run(["--fix", "."], project, capsys)[0] == 0
    assert (project / "model.py").read_text() == MODEL


def test_extend_exclude(project, capsys):
    (project / "gen").mkdir()
    (project / "gen" / "m.py").write_text(MODEL)
    (project / "pyproject.toml").write_text('[tool.graphmend]\nextend-exclude = ["gen", "model.py"]\n')
    assert run(["."], project, capsys)[0] == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="git not available")
def test_respect_gitignore(project, capsys):
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "build2").mkdir()
    (project / "build2" / "m.py").write_text(MODEL)
    (project / "keep.py").write_text(MODEL)
    (project / ".gitignore").write_text("build2/\n*.py\n!keep.py\n")
    rc, out, _ = run(["."], project, capsys)
    assert rc == 1 and out.startswith("keep.py:7:9") and "build2" not in out and "model.py" not in out
    assert run(["model.py"], project, capsys)[0] == 1  # named on the command line: checked
    (project / "pyproject.toml").write_text("[tool.graphmend]\nrespect-gitignore = false\n")
    rc, out, _ = run(["."], project, capsys)
    assert "build2/m.py" in out and "model.py" in out


def test_stdin_lint(project, capsys, monkeypatch):
    rc, out, _ = run(["--stdin-filename", "model.py", "-"], project, capsys, MODEL, monkeypatch)
    assert rc == 1 and out.startswith("model.py:7:9: GM201")
    (project / "pyproject.toml").write_text('[tool.graphmend]\nper-file-ignores = {"model.py" = ["GM201"]}\n')
    assert run(["--stdin-filename", "model.py", "-"], project, capsys, MODEL, monkeypatch)[0] == 0
    assert run(["-"], project, capsys, MODEL, monkeypatch)[0] == 1  # no name: no per-file-ignores


def test_stdin_fix_writes_the_fixed_code_to_stdout(project, capsys, monkeypatch):
    rc, out, err = run(["--fix", "--stdin-filename", "model.py", "-"], project, capsys, MODEL, monkeypatch)
    assert rc == 0, err
    assert "        if not torch.compiler.is_compiling():\n            print(" in out
    compile(out, "model.py", "exec")
    assert (project / "model.py").read_text() == MODEL  # nothing written


def test_stdin_fix_of_unparsable_code_echoes_it(project, capsys, monkeypatch):
    rc, out, err = run(["--fix", "--stdin-filename", "x.py", "-"], project, capsys, "def f(:\n", monkeypatch)
    assert rc == 2 and out == "def f(:\n" and "syntax error" in err


def test_stdin_through_the_console_script(project):
    proc = subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "--fix", "--stdin-filename",
                           "model.py", "-"], cwd=project, input=MODEL, capture_output=True, text=True)
    assert proc.returncode == 0 and "if not torch.compiler.is_compiling():" in proc.stdout


def test_statistics_sorted_by_count_with_a_total(project, capsys):
    two = MODEL.replace('        return x', '        print("y")\n        import warnings\n'
                        '        warnings.warn("w")\n        print("z")\n        return x')
    (project / "model.py").write_text(two)
    rc, out, _ = run(["--statistics", "."], project, capsys)
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["3", "GM201"] and lines[1].split()[:2] == ["1", "GM203"]
    assert lines[2] == "Found 4 errors."


def test_diff_prints_the_would_fix_line(project, capsys):
    rc, out, err = run(["--diff", "."], project, capsys)
    assert rc == 1 and "+        if not torch.compiler.is_compiling():" in out
    assert "Would fix 1 error." in err
    assert (project / "model.py").read_text() == MODEL


def test_missing_path_prints_no_all_checks_passed(project, capsys):
    rc, out, err = run(["nope.py"], project, capsys)
    assert rc == 2 and "nope.py: no such file or directory" in err
    assert "All checks passed" not in out + err


def test_show_fixes(project, capsys):
    rc, out, _ = run(["--fix", "--show-fixes", "."], project, capsys)
    assert rc == 0 and "Fixed 1 error:" in out and "1 × GM201 (print-in-compiled-code)" in out


def test_fix_only_reports_nothing_and_exits_0(project, capsys):
    (project / "model.py").write_text(MODEL.replace("        return x", "        return x.item()"))
    rc, out, _ = run(["--fix-only", "."], project, capsys)
    assert rc == 0 and out.strip() == "Fixed 1 error."
    assert "is_compiling" in (project / "model.py").read_text()
    assert run(["."], project, capsys)[0] == 1  # the .item() finding (no fix) remains


def test_every_flag_has_help_text():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        for action in p._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help text"


def test_fix_keeps_mode_and_owner(project, capsys):
    path = project / "model.py"
    os.chmod(path, 0o640)
    before = os.stat(path)
    assert run(["--fix", "."], project, capsys)[0] == 0
    after = os.stat(path)
    assert "is_compiling" in path.read_text()
    assert stat.S_IMODE(after.st_mode) == 0o640
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)


def test_fix_through_a_hard_link_replaces_the_name_only(project, capsys):
    """Documented in the README: the file is replaced by a new one, so a hard link elsewhere keeps
    the old content (as with ruff and black)."""
    link = project / "other_name.txt"
    os.link(project / "model.py", link)
    assert run(["--fix", "model.py"], project, capsys)[0] == 0
    assert "is_compiling" in (project / "model.py").read_text()
    assert link.read_text() == MODEL


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file away")
def test_fix_keeps_another_users_owner(project, capsys):
    path = project / "model.py"
    os.chown(path, 1234, 5678)
    assert run(["--fix", "."], project, capsys)[0] == 0
    st = os.stat(path)
    assert "is_compiling" in path.read_text() and (st.st_uid, st.st_gid) == (1234, 5678)


def test_line_length_of_a_file_outside_any_graphmend_project(tmp_path_factory, capsys):
    """No [tool.graphmend] anywhere: the fix is still wrapped at the file's own [tool.ruff] line-length."""
    proj = tmp_path_factory.mktemp("plain")
    (proj / "pyproject.toml").write_text("[tool.ruff]\nline-length = 60\n")
    long = MODEL.replace('print("x", x.shape)', 'print("a rather long message about the input", x.shape, x.dtype)')
    (proj / "m.py").write_text(long)
    assert run(["--fix", str(proj / "m.py")], tmp_path_factory.mktemp("cwd"), capsys)[0] == 0
    text = (proj / "m.py").read_text()
    # at the default 88 the guarded print (76 characters) would stay on one line
    assert ('            print(\n                "a rather long message about the input",\n'
            '                x.shape,\n                x.dtype,\n            )\n') in text


def test_settings_of_a_linked_file_come_from_its_real_folder(tmp_path):
    """A file's settings are those of its folder; a link to a file is followed first (as before the
    per-folder memo): the link in a folder without config takes the target project's settings."""
    from graphmend_lint import settings as settings_mod

    proj, other = tmp_path / "proj", tmp_path / "other"
    proj.mkdir(), other.mkdir()
    (proj / "pyproject.toml").write_text('[tool.graphmend]\nselect = ["GM2"]\n')
    (proj / "m.py").write_text("x = 1\n")
    (other / "link.py").symlink_to(proj / "m.py")
    (other / "plain.py").write_text("x = 1\n")
    d = settings_mod.Discovery(cwd=tmp_path)
    assert d.for_path(proj / "m.py").select == ("GM2",)
    assert d.for_path(other / "link.py").select == ("GM2",)
    assert d.for_path(other / "plain.py").select != ("GM2",)
    assert d.for_path(proj).select == ("GM2",) and d.for_path(other).select != ("GM2",)


@pytest.mark.skipif(shutil.which("git") is None, reason="git not available")
def test_gitignore_agrees_with_git(tmp_path):
    """Nested .gitignore files (a deeper `!` re-includes), .git/info/exclude, folders without a
    .gitignore below ones with it: files.GitIgnore says what `git check-ignore` says, path by path."""
    from graphmend_lint.files import GitIgnore

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("secret_*.py\n")
    (tmp_path / ".gitignore").write_text("*.gen.py\nout/\nsub/deep/skip.py\n")
    (tmp_path / "sub" / "deep" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / ".gitignore").write_text("!keep.gen.py\nlocal.py\n")
    (tmp_path / "out").mkdir()
    names = ["a.py", "a.gen.py", "secret_x.py", "out", "out/m.py", "sub/keep.gen.py", "sub/other.gen.py",
             "sub/local.py", "sub/deep/local.py", "sub/deep/skip.py", "sub/deep/deeper/keep.gen.py",
             "sub/deep/deeper/x.gen.py", "sub/deep/deeper/ok.py"]
    for n in names:
        if "." in n:
            (tmp_path / n).write_text("")
    git = subprocess.run(["git", "check-ignore", *names], cwd=tmp_path, capture_output=True, text=True)
    expected = set(git.stdout.split())
    ours = GitIgnore()
    got = {n for n in names if ours.ignored(tmp_path / n, (tmp_path / n).is_dir())}
    assert got == expected and {"a.gen.py", "sub/keep.gen.py"} & got == {"a.gen.py"}
    assert ours.active(tmp_path / "sub" / "deep") and not GitIgnore().active(tmp_path.parent)


def test_exclude_resolves_paths_as_pathlib(tmp_path):
    """`exclude` matches the real path relative to the config's folder: the walk's folder-by-folder
    resolution gives what Path.resolve() gives, for links to files and folders inside and outside."""
    import fnmatch

    from graphmend_lint.files import _excluded, RealPaths

    root = tmp_path / "proj"
    (root / "gen").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "gen" / "a.py").write_text("")
    (root / "src" / "b.py").write_text("")
    (tmp_path / "outside.py").write_text("")
    (root / "src" / "to_gen.py").symlink_to(root / "gen" / "a.py")
    (root / "src" / "out.py").symlink_to(tmp_path / "outside.py")
    (root / "linked").symlink_to(root / "gen", target_is_directory=True)
    paths = [root / "gen" / "a.py", root / "src" / "b.py", root / "src" / "to_gen.py", root / "src" / "out.py",
             root / "linked" / "a.py", root / "src" / ".." / "gen" / "a.py", root / "src" / "."]
    real = RealPaths()
    for pattern in ("gen", "src/*.py", "outside.py", "linked"):
        for p in paths:
            try:  # what _excluded did before the walk resolved folder by folder
                text = p.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                text = p.as_posix()
            expected = any(fnmatch.fnmatch(text, pat) or fnmatch.fnmatch(text, pat + "/*")
                           or fnmatch.fnmatch(p.name, pat) for pat in (pattern,))
            assert _excluded(p, root, (pattern,), real) == expected, (pattern, p)
    assert _excluded(root / "linked" / "a.py", root, ("gen",), real)  # the link's target is under gen/
