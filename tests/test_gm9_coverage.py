"""perf/coverage.py maps real Dynamo breaks to source lines and to our findings."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from fixture_io import FIXTURES
from harness import load

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from perf import coverage  # noqa: E402


def test_fixture_break_maps_to_its_finding():
    case = FIXTURES / "GM901" / "invalid_item_scale.py"
    model, inputs = load(case, "gm9_cov_item").make()
    res = coverage.analyse("item", model, inputs)
    line = next(i for i, text in enumerate(case.read_text().splitlines(), 1) if ".item()" in text)
    assert [(b["line"], b["gb"], b["codes"]) for b in res["breaks"]] == [(line, "GB0124", ["GM901"])]
    assert os.path.realpath(res["breaks"][0]["file"]) == os.path.realpath(case)
    assert (res["recall"], res["precision"]) == (1.0, 1.0)


@pytest.mark.slow
def test_bart_clamp_break_is_mapped_to_its_line():
    pytest.importorskip("transformers")
    from perf import hf_models

    model, inputs = hf_models.make("hf_bart")
    res = coverage.analyse("hf_bart", model, inputs)
    import transformers.models.bart.modeling_bart as mb

    src = Path(mb.__file__).read_text().splitlines()
    clamp = [b for b in res["breaks"] if b["file"].endswith("modeling_bart.py") and b["gb"] == "GB0170"]
    assert clamp, res["breaks"]
    for b in clamp:  # "Data-dependent branching" on the fp16 overflow check of the encoder layer
        head = "\n".join(src[b["line"] - 1:b["line"] + 2])
        assert head.lstrip().startswith("if hidden_states.dtype == torch.float16") and "torch.isinf" in head
    assert res["breaks_seen"] >= 1 and 0 <= res["breaks_predicted"] <= res["breaks_seen"]
