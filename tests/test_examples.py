"""The README's main job: lint and fix the shipped examples."""
from __future__ import annotations

import shutil
from pathlib import Path

from graphmend_lint import engine
from graphmend_lint.cli import main
from graphmend_lint.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_examples_have_findings_and_fix_cleanly(tmp_path, capsys):
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    assert main(["check", str(work)]) == 1
    main(["check", "--fix", str(work)])
    capsys.readouterr()
    for path in work.glob("*.py"):
        source = path.read_bytes()
        compile(source, str(path), "exec")
        remaining = engine.check(source, Settings()).findings
        assert not [f for f in remaining if engine.applicable(f, Settings())], path
