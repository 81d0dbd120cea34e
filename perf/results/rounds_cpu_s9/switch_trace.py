"""Where hf_switch_moe's extra Dynamo time goes (rounds_cpu_s9): Dynamo alone (backend="eager"),
first call, unfixed vs fixed copy, torch._dynamo.utils.compile_times().

    python perf/results/rounds_cpu_s9/switch_trace.py                  # the installed (unfixed) transformers
    python perf/results/rounds_cpu_s9/switch_trace.py WORK/fixed/pkgs  # a fixed copy (perf/run.py's work dir)
"""
import sys
import time
from pathlib import Path

if len(sys.argv) > 1:
    sys.path.insert(0, sys.argv[1])
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import torch  # noqa: E402
import transformers  # noqa: E402
from torch._dynamo.utils import compile_times, counters  # noqa: E402

from perf import hf_models  # noqa: E402

print("transformers from", transformers.__file__)
torch.manual_seed(0)
model, inputs = hf_models.make("hf_switch_moe")
compiled = torch.compile(model, backend="eager")
t = time.perf_counter()
with torch.no_grad():
    compiled(**inputs[0])
print(f"first call {time.perf_counter() - t:.2f} s, {dict(counters['stats'])}")
print(compile_times(repr="str", aggregate=True))
