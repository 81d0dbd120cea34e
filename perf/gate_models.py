"""The pytest gate (graphmend_lint.testing) on two tiny transformers 4.44.2 models, random weights:
BART (fp16) and Phi-3 LongRoPE, each in eval and train mode, inputs from perf/hf_models.py (the
second input set through `also`, so recompiles show). The README's figures (Pytest gate) came from:

    python perf/gate_models.py                                  # installed transformers: before
    cp -r "$(python -c 'import transformers, os; print(os.path.dirname(transformers.__file__))')" /tmp/tf/
    graphmend-lint check --fix --no-cache /tmp/tf/transformers/models/bart/modeling_bart.py \
        /tmp/tf/transformers/models/phi3/modeling_phi3.py
    PYTHONPATH=/tmp/tf python perf/gate_models.py              # the fixed copy: after
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(HERE))

import transformers  # noqa: E402

import hf_models  # noqa: E402
from graphmend_lint.testing import graph_break_report  # noqa: E402


def main() -> int:
    print("transformers from", transformers.__file__)
    for case, maker in [("bart", hf_models.make_bart), ("phi3", hf_models.make_phi3)]:
        for mode in ("eval", "train"):
            model, inputs = maker()
            model.train(mode == "train")
            t = time.time()
            rep = graph_break_report(model, kwargs=inputs[0], also=[inputs[1]], within=["transformers"])
            print(f"=== {case} {mode}: {rep.breaks} breaks in transformers, {rep.graphs} graphs, "
                  f"{len(rep.recompiles)} recompiles, {rep.outside} outside ({time.time() - t:.1f}s)")
            print(rep.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
