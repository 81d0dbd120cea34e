"""The per-file context (analysis/filecontext.py): one per module, shared by the rules of a file,
handed in by the engine or made once per file under Fixit."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper

from graphmend_lint import engine
from graphmend_lint.analysis.external import FileFacts
from graphmend_lint.analysis.filecontext import FileContext
from graphmend_lint.rules import ALL_RULES
from graphmend_lint.settings import Settings

SOURCE = '''import torch
from ...utils import is_torchdynamo_compiling


class M(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            print(x)
        return helper(x)
'''


def _compiled(facts) -> set:
    return {facts.scope.qualname(f) for f in facts.scope.compiled}


def test_the_engine_hands_its_context_to_every_rule():
    module = cst.parse_module(SOURCE)
    ctx = FileContext(module, Settings(select=("GM101", "GM201")), source=SOURCE)
    findings = engine.lint(ctx)
    assert sorted(f.code for f in findings) == ["GM101", "GM201"]
    assert ctx.guard_helper == "is_torchdynamo_compiling" and ctx.generated is None
    assert set(ctx.facts.scope.module_classes) == {"M"} and _compiled(ctx.facts) == {"M.forward"}
    assert ctx.code() == SOURCE and ctx.code(module) is ctx.code()


def test_project_facts_reach_the_analysis():
    module = cst.parse_module(SOURCE + "\n\ndef other(x):\n    return x\n")
    alone = FileContext(module, Settings())
    indexed = FileContext(module, Settings(), FileFacts(compiled=frozenset({"other"}), guards=frozenset({"g"})))
    assert alone._facts is None  # not analysed yet
    assert _compiled(alone.facts) == {"M.forward"}
    assert _compiled(indexed.facts) == {"M.forward", "other"}
    assert indexed.facts.bindings.guards == {"g"} and alone.facts.bindings.guards == frozenset()


def test_fixit_makes_one_context_per_file_with_the_folder_settings(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend]\nselect = ["GM2"]\n')
    monkeypatch.chdir(tmp_path)
    instances = [r() for r in ALL_RULES]
    MetadataWrapper(cst.parse_module(SOURCE)).visit_batched(instances)
    contexts = {id(r.ctx) for r in instances}
    assert len(contexts) == 1
    assert instances[0].settings.select == ("GM2",)
    assert sorted(f.code for r in instances for f in r.findings) == ["GM201"]
    other = [r() for r in ALL_RULES]
    MetadataWrapper(cst.parse_module(SOURCE)).visit_batched(other)
    assert other[0].ctx is not instances[0].ctx  # nothing is kept between files
