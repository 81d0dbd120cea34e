"""Output formats: ruff's JSON shape with fix edits, SARIF valid against the OASIS 2.1.0 schema,
the `full` format with a code frame, links to the rule pages and to PyTorch's graph-break pages."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import pytest

from graphmend_lint import docs, output
from graphmend_lint import rules as rules_pkg
from graphmend_lint.cli import main

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
# every format the schema names (uri, uri-reference, date-time ...); uri needs rfc3986-validator
CHECKER = jsonschema.FormatChecker()


def schema_errors(doc: dict) -> list[str]:
    assert {"uri", "uri-reference"} <= set(CHECKER.checkers), "install rfc3986-validator (the [test] extra)"
    return [e.message for e in jsonschema.Draft4Validator(SCHEMA, format_checker=CHECKER).iter_errors(doc)]


def validate(doc: dict) -> None:
    assert schema_errors(doc) == []
MODEL = """import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        print("x", x.shape)
        n = x.sum().item()
        return x * n
"""


def run(args, cwd: Path, capsys):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        code = main(["check", "--no-cache", *args])
    finally:
        os.chdir(old)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture()
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    folder = tmp_path / "my models"  # a space: URIs must be percent-encoded
    folder.mkdir()
    (folder / "model.py").write_text(MODEL)
    return tmp_path


def apply_edits(source: str, edits: list[dict]) -> str:
    lines = source.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: (e["location"]["row"], e["location"]["column"]), reverse=True):
        assert e["location"]["column"] == 1 and e["end_location"]["column"] == 1
        lines[e["location"]["row"] - 1:e["end_location"]["row"] - 1] = [e["content"]]
    return "".join(lines)


def test_json_is_shaped_like_ruffs(project, capsys):
    code, out, _ = run(["--output-format", "json", "."], project, capsys)
    data = json.loads(out)
    assert code == 1 and [d["code"] for d in data] == ["GM201", "GM901"]
    keys = {"cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url"}
    assert all(set(d) == keys for d in data)
    gm201, gm901 = data
    assert gm201["filename"] == str((project / "my models" / "model.py").resolve())
    assert gm201["location"] == {"row": 7, "column": 9} and gm201["end_location"] == {"row": 7, "column": 28}
    assert gm201["noqa_row"] == 7
    assert gm201["url"] == "https://github.com/graphmend/graphmend-lint/blob/main/rules/GM201.md"
    assert gm201["fix"]["applicability"] == "safe" and gm201["fix"]["message"]
    fixed = apply_edits(MODEL, gm201["fix"]["edits"])
    assert "        if not torch.compiler.is_compiling():\n            print(\"x\", x.shape)\n" in fixed
    compile(fixed, "m.py", "exec")
    assert gm901["fix"] is None


def test_json_edits_equal_the_fix(project, capsys):
    """Applying a finding's edits gives what `--fix` writes (an added import included)."""
    src = MODEL.replace("import torch\nfrom torch import nn\n", "from torch import nn\n")
    path = project / "my models" / "model.py"
    path.write_text(src)
    _, out, _ = run(["--output-format", "json", "--select", "GM201", "."], project, capsys)
    edits = json.loads(out)[0]["fix"]["edits"]
    assert run(["--fix", "--select", "GM201", "."], project, capsys)[0] == 0
    assert apply_edits(src, edits) == path.read_text()


def test_json_unsafe_applicability(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    (tmp_path / "m.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        if x.sum() > 0:\n            x = x + 1\n        return x\n")
    _, out, _ = run(["--output-format", "json", "."], tmp_path, capsys)
    fixes = [d["fix"] for d in json.loads(out) if d["fix"]]
    assert fixes and all(f["applicability"] in ("safe", "unsafe") for f in fixes)


def test_sarif_validates_against_the_oasis_schema(project, capsys):
    (project / "broken.py").write_text("def f(:\n")
    code, out, _ = run(["--output-format", "sarif", "."], project, capsys)
    assert code == 2
    doc = json.loads(out)
    validate(doc)
    run_ = doc["runs"][0]
    uri = run_["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "my%20models/model.py"
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"].startswith("file:///")
    rules = run_["tool"]["driver"]["rules"]
    for result in run_["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    for rule in rules:
        assert rule["helpUri"].startswith("https://") and rule["helpUri"].endswith(f"rules/{rule['id']}.md")
        assert not re.search(r"\{\w*\}", rule["shortDescription"]["text"]), rule["id"]
    notes = run_["invocations"][0]["toolExecutionNotifications"]
    assert run_["invocations"][0]["executionSuccessful"] is False
    assert len(notes) == 1 and "syntax error" in notes[0]["message"]["text"]
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"


def test_sarif_uri_outside_the_current_folder_is_an_absolute_file_uri(project, capsys, tmp_path_factory):
    cwd = tmp_path_factory.mktemp("elsewhere")
    _, out, _ = run(["--output-format", "sarif", str(project)], cwd, capsys)
    doc = json.loads(out)
    validate(doc)
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("file:///") and uri.endswith("/my%20models/model.py")


def test_the_schema_check_catches_what_the_issue_found():
    """Control: an unencoded space and a relative helpUri fail the same check."""
    doc = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x", "rules": [
        {"id": "GM201", "helpUri": "rules/GM201.md"}]}}, "results": [{"message": {"text": "m"}, "locations": [
            {"physicalLocation": {"artifactLocation": {"uri": "my models/a.py"}}}]}]}]}
    assert sorted(schema_errors(doc)) == ["'my models/a.py' is not a 'uri-reference'",
                                          "'rules/GM201.md' is not a 'uri'"]


def test_no_rule_summary_has_a_placeholder():
    for rule in rules_pkg.ALL_RULES:
        assert not re.search(r"\{\w*\}", docs.summary(rule)), rule.CODE
        assert docs.summary(rule).endswith(".")


def test_full_format_shows_the_source_and_links(project, capsys):
    _, out, _ = run(["--output-format", "full", "."], project, capsys)
    assert "my models/model.py:7:9: GM201 [*]" in out
    assert "7 |         print(\"x\", x.shape)\n  |         ^^^^^^^^^^^^^^^^^^^ GM201" in out
    assert "= help: https://github.com/graphmend/graphmend-lint/blob/main/rules/GM201.md" in out
    assert "= graph break GB0124: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html" in out
    assert "Found 2 errors." in out


def test_rule_pages_link_graph_break_ids():
    page = docs.render(rules_pkg.by_code("GM901"))
    assert "[GB0124](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html)" in page


def test_github_annotation_escapes_the_file_property():
    class F:
        code, message, line, col, end_line, end_col = "GM201", "m", 1, 0, 1, 1

    text = output.github([(Path("a,b:c.py"), F())], False)
    assert "file=a%2Cb%3Ac.py," in text
