"""The ruff-style CLI as users meet it: exit codes, formats, suppression, fixes, bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphmend_lint.cli import main

PRINT_MODULE = """import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        print("x", x.shape)
        return x
"""


def run(args, cwd: Path, capsys):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        code = main(args)
    finally:
        os.chdir(old)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture()
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    (tmp_path / "model.py").write_text(PRINT_MODULE)
    (tmp_path / "clean.py").write_text("import torch\n\ndef f(x):\n    return x\n")
    return tmp_path


def test_findings_exit_1_and_ruff_format(project, capsys):
    code, out, _ = run(["check", "."], project, capsys)
    assert code == 1
    assert "model.py:7:9: GM201 [*] `print()` in compiled code" in out
    assert "Found 1 error." in out


def test_clean_exit_0(project, capsys):
    code, out, _ = run(["check", "clean.py"], project, capsys)
    assert code == 0 and "All checks passed!" in out


def test_exit_zero(project, capsys):
    assert run(["check", "--exit-zero", "."], project, capsys)[0] == 0


def test_fix_writes_and_relints_clean(project, capsys):
    code, out, _ = run(["check", "--fix", "."], project, capsys)
    assert code == 0, out
    text = (project / "model.py").read_text()
    assert "if not torch.compiler.is_compiling():\n            print(" in text
    compile(text, "model.py", "exec")
    assert run(["check", "."], project, capsys)[0] == 0


def test_diff_never_writes(project, capsys):
    code, out, _ = run(["check", "--diff", "."], project, capsys)
    assert code == 1
    assert "+        if not torch.compiler.is_compiling():" in out
    assert (project / "model.py").read_text() == PRINT_MODULE


def test_select_and_ignore(project, capsys):
    assert run(["check", "--ignore", "GM2", "."], project, capsys)[0] == 0
    assert run(["check", "--select", "GM1", "."], project, capsys)[0] == 0
    assert run(["check", "--select", "GM201", "."], project, capsys)[0] == 1


def test_config_ignore_and_exclude(project, capsys):
    (project / "pyproject.toml").write_text('[tool.graphmend]\nexclude = ["model.py"]\n')
    assert run(["check", "."], project, capsys)[0] == 0
    (project / "pyproject.toml").write_text('[tool.graphmend]\nignore = ["GM201"]\n')
    assert run(["check", "."], project, capsys)[0] == 0


def test_bad_config_is_an_error(project, capsys):
    (project / "pyproject.toml").write_text('[tool.graphmend]\nselct = ["GM1"]\n')
    code, _, err = run(["check", "."], project, capsys)
    assert code == 2 and "unknown option" in err


@pytest.mark.parametrize("comment", ["# noqa: GM201", "# noqa", "# lint-ignore: PrintInCompiledCode"])
def test_suppression(project, capsys, comment):
    (project / "model.py").write_text(PRINT_MODULE.replace('x.shape)', f'x.shape)  {comment}'))
    assert run(["check", "."], project, capsys)[0] == 0


def test_noqa_other_code_does_not_suppress(project, capsys):
    (project / "model.py").write_text(PRINT_MODULE.replace('x.shape)', 'x.shape)  # noqa: GM101'))
    assert run(["check", "."], project, capsys)[0] == 1


def test_json_output(project, capsys):
    code, out, _ = run(["check", "--output-format", "json", "."], project, capsys)
    data = json.loads(out)
    assert code == 1 and data[0]["code"] == "GM201"
    assert data[0]["location"] == {"row": 7, "column": 9}
    assert data[0]["fix"]["applicability"] == "safe"


def test_github_and_sarif_output(project, capsys):
    _, out, _ = run(["check", "--output-format", "github", "."], project, capsys)
    assert out.startswith("::error title=graphmend-lint (GM201),file=model.py,line=7,col=9")
    _, out, _ = run(["check", "--output-format", "sarif", "."], project, capsys)
    sarif = json.loads(out)
    assert sarif["runs"][0]["results"][0]["ruleId"] == "GM201"


def test_statistics(project, capsys):
    _, out, _ = run(["check", "--statistics", "."], project, capsys)
    lines = out.splitlines()
    assert lines[0].split() == ["1", "GM201", "[*]", "print-in-compiled-code"]
    assert lines[1] == "Found 1 error."


def test_syntax_error_among_good_files(project, capsys):
    bad = project / "broken.py"
    bad.write_text("def f(:\n    pass\n")
    before = bad.read_bytes()
    code, out, err = run(["check", "--fix", "."], project, capsys)
    assert code == 2
    assert "error: broken.py: syntax error at 1:" in err
    assert bad.read_bytes() == before
    assert "if not torch.compiler.is_compiling()" in (project / "model.py").read_text()


def test_missing_path(project, capsys):
    code, _, err = run(["check", "nope.py"], project, capsys)
    assert code == 2 and "nope.py: no such file" in err


def test_rule_docs_command(capsys):
    assert main(["rule", "GM201"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# GM201: print-in-compiled-code") and "## Fix safety" in out
    assert main(["rule", "GM999x"]) == 2


@pytest.mark.parametrize("name", ["GM201", "gm201", "print-in-compiled-code", "PrintInCompiledCode",
                                  "PrintInCompiledCodeRule"])
def test_rule_command_takes_a_code_a_name_or_the_fixit_name(capsys, name):
    assert main(["rule", name]) == 0
    assert capsys.readouterr().out.startswith("# GM201: print-in-compiled-code")


@pytest.mark.parametrize("name", ["TensorSliceBound", "tensor-as-size", "TensorAsSize"])
def test_rule_command_takes_former_names(capsys, name):
    assert main(["rule", name]) == 0
    assert capsys.readouterr().out.startswith("# GM906: tensor-as-size")


TIME_MODULE = """import time
from torch import nn


class M(nn.Module):
    def forward(self, x):
        t = time.perf_counter()
        return x * t
"""


@pytest.mark.parametrize("comment", ["# lint-ignore: TimeCallInCompiledCode", "# lint-ignore: TimeCall",
                                     "# lint-ignore: TimeCallRule", "# lint-fixme: TimeCall"])
def test_former_fixit_name_still_suppresses(project, capsys, comment):
    (project / "model.py").write_text(TIME_MODULE.replace("perf_counter()", f"perf_counter()  {comment}"))
    assert run(["check", "--select", "GM908", "."], project, capsys)[0] == 0


def test_another_rules_former_name_does_not_suppress(project, capsys):
    (project / "model.py").write_text(TIME_MODULE.replace("perf_counter()", "perf_counter()  # lint-ignore: DataPtr"))
    assert run(["check", "--select", "GM908", "."], project, capsys)[0] == 1


def test_console_script_runs(project):
    proc = subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "model.py"], cwd=project,
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "GM201" in proc.stdout


def test_force_exclude_applies_to_named_files(project, capsys):
    (project / "pyproject.toml").write_text('[tool.graphmend]\nexclude = ["model.py"]\n')
    assert run(["check", "model.py"], project, capsys)[0] == 1
    assert run(["check", "--force-exclude", "model.py"], project, capsys)[0] == 0


def test_closed_output_pipe_is_not_a_crash(project):
    """`graphmend-lint check . | head`: the reader leaves; no traceback, the findings exit code."""
    proc = subprocess.Popen([sys.executable, "-m", "graphmend_lint", "check", "--no-cache", str(project)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=project)
    proc.stdout.close()  # nobody reads: the first write fails with EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_run_from_the_cache_loads_neither_libcst_nor_the_rules(tmp_path, fmt):
    """Warm runs (pre-commit, the PR gate) print the cached findings without importing libcst,
    Fixit or the rules; the output is the cold run's, byte for byte (SARIF lists the rules: it loads
    them). The cold run lints in this process (`-j 1`: workers would load them instead), so the probe
    is seen to see them."""
    (tmp_path / "m.py").write_text(PRINT_MODULE)
    (tmp_path / "clean.py").write_text("x = 1\n")
    probe = ("import sys\nfrom graphmend_lint.cli import main\ncode = main(['check', '--output-format', "
             f"'{fmt}', '.', *sys.argv[1:]])\nprint(code, sorted(m for m in ('libcst', 'fixit', 'graphmend_lint.rules') "
             "if m in sys.modules), file=sys.stderr)\n")
    env = {**os.environ, "GRAPHMEND_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(Path(__file__).parents[1])}
    cold, warm = (subprocess.run([sys.executable, "-c", probe, *jobs], cwd=tmp_path, env=env, capture_output=True,
                                 text=True) for jobs in (["-j", "1"], []))
    assert "GM201" in cold.stdout and warm.stdout == cold.stdout
    assert cold.stderr.strip() == "1 ['fixit', 'graphmend_lint.rules', 'libcst']", cold.stderr
    expected = "['fixit', 'graphmend_lint.rules', 'libcst']" if fmt == "sarif" else "[]"
    assert warm.stderr.strip() == f"1 {expected}", warm.stderr


def test_rule_codes_read_off_module_names_are_the_rules_codes():
    from graphmend_lint import cli
    from graphmend_lint.rules import ALL_RULES

    assert cli._rule_codes() == tuple(sorted(r.CODE for r in ALL_RULES)) and len(ALL_RULES) > 20
