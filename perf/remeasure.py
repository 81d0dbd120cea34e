"""Re-measure the suite on CPU in one command (issue 25): the figures for README and perf/results.

    python perf/remeasure.py --out perf/results/remeasure_cpu_inductor      # a quiet machine, 2+ idle cores
    python perf/remeasure.py --dry --out /tmp/remeasure-dry                 # the plan on CPU, eager, 1 round

Steps (each a perf/run.py run, inductor on CPU, in its own folder under --out; --out/README.md lists them):
1. issue_cases_r5: the issue's cases and mixed_block, 5 rounds, 30 steady calls: medians with noise bands
   tight enough to call a 5% difference; profiles of the steady calls (profiles/);
2. phi3_dynamic_mark / phi3_dynamic_auto: the Phi-3 flip (same-length and longer input) with
   mark_dynamic vs dynamic=None, 5 rounds;
3. suite_r3: every default case (7 local + 15 transformers) with --unsafe, 3 rounds.
Run it on a machine nobody else is using: the report prints the load average it saw.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from perf import cuda_pass  # noqa: E402

ISSUE_CASES = "enc_layer_clamp,hf_bart,hf_whisper,hf_phi3_longrope,hf_wav2vec2_ctc,mixed_block"
PLAN = [
    ("issue_cases_r5", ["--rounds", "5", "--steady", "30", "--profile"], ISSUE_CASES),
    ("phi3_dynamic_mark", ["--rounds", "5", "--steady", "30", "--dynamic", "mark"],
     "hf_phi3_longrope,hf_phi3_longrope_grow"),
    ("phi3_dynamic_auto", ["--rounds", "5", "--steady", "30", "--dynamic", "auto"], "hf_phi3_longrope_grow"),
    ("suite_r3", ["--rounds", "3", "--unsafe"], None),
]

if __name__ == "__main__":
    sys.exit(cuda_pass.main(plan=PLAN, share={}, device="cpu", title="CPU re-measurement (issue 25)",
                            default_budget=4 * 3600.0, doc=__doc__, default_timeout=900, min_step=30.0))
