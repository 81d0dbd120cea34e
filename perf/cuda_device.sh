#!/usr/bin/env bash
# The CUDA pass as run on a lent GPU machine (the device tool), from the repository root:
#   bash perf/cuda_device.sh            # results: $OUT/cuda.tgz (perf/results/... once unpacked), logs beside it
#   CUDA_PASS_ARGS="--dry --cases branch_block" bash perf/cuda_device.sh   # the same on CPU (tests/test_perf_rounds.py)
# The machine has its own torch and a newer transformers; the suite's transformers 4.44.2 and the linter's
# own packages (libcst, fixit, ...) travel as wheels in .whl/ (perf/README.md says how they were fetched).
set -u
OUT=${OUT:-/tmp/cuda_out}
BUDGET=${BUDGET:-480}
RESULTS=${RESULTS:-/tmp/cuda}
WHEELS=${WHEELS:-.whl}
mkdir -p "$OUT"
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl \
    || { echo "cuda_device: wheel install failed"; exit 3; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
python3 -c "import sys, torch, transformers, importlib.metadata as m; print(sys.version.split()[0], torch.__version__,
torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA', transformers.__version__, transformers.__file__, m.version('libcst'), m.version('fixit'))" \
  2>&1 | tee "$OUT/env.txt"
# shellcheck disable=SC2086  # CUDA_PASS_ARGS is a list of arguments
timeout $((BUDGET + 60)) python3 perf/cuda_pass.py --budget "$BUDGET" --out "$RESULTS" ${CUDA_PASS_ARGS:-} 2>&1 \
  | tee "$OUT/pass.log"
rc=${PIPESTATUS[0]}
tar czf "$OUT/cuda.tgz" -C "$(dirname "$RESULTS")" "$(basename "$RESULTS")"
find /tmp -maxdepth 3 -path '/tmp/gm_perf_*' -name stderr.txt -print0 2>/dev/null | tar czf "$OUT/workers.tgz" --null -T - 2>/dev/null
echo "cuda_device: cuda_pass rc=$rc"
exit "$rc"
