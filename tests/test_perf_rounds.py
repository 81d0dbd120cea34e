"""perf/ (issue 25): rounds and noise bands in the report, compile-time snapshots, the CUDA pass plan.

Fast tests use made-up results (no torch compile); the dry CUDA pass (slow) runs the real plan on CPU.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from perf import cuda_pass, report  # noqa: E402


def _res(cold, steady, flip, r, **kw):
    return dict({"cold_s": cold, "steady_median_s": steady, "flip_s": flip, "round": r, "wall_s": 1.0,
                 "compile_cold": {"metrics": {"frames": 2, "entire_frame_compile_time_s": cold / 2},
                                  "functions": {"bytecode_tracing": 0.1}}}, **kw)


def test_combine_rounds_takes_medians_and_keeps_round0():
    rs = [_res(3.0, 0.010, 0.5, 0, explain={"0": {}}), _res(1.0, 0.012, 0.4, 1), _res(2.0, 0.011, 0.6, 2)]
    c = report.combine_rounds(rs)
    assert c["cold_s"] == 2.0 and c["steady_median_s"] == 0.011 and c["flip_s"] == 0.5
    assert c["explain"] == {"0": {}}  # breaks come from round 0 (the later rounds skip the analysis)
    assert [r["round"] for r in c["rounds"]] == [0, 1, 2] and c["rounds_ok"] == 3
    assert c["compile_cold_median"]["entire_frame_compile_time_s"] == 1.0
    assert report.combine_rounds(rs[:1]) is rs[0]  # one round: unchanged (the old results.json shape)


def test_combine_rounds_with_a_failed_round():
    c = report.combine_rounds([{"error": "timeout", "round": 0}, _res(2.0, 0.01, 0.5, 1)])
    assert c["cold_s"] == 2.0 and c["rounds_ok"] == 1 and "error" not in c


def test_noise_verdicts():
    assert "within noise" in report.noise_cell([0.95, 1.02, 1.08])
    assert "**faster**" in report.noise_cell([1.05, 1.07, 1.10])
    assert "**slower**" in report.noise_cell([0.80, 0.85, 0.90])
    assert report.noise_cell([1.2]).endswith("(1 round)") and report.noise_cell([]) == "-"


def test_paired_ratios_pair_by_round():
    u = {"rounds": [_res(2.0, 0.02, 1, 0), _res(4.0, 0.02, 1, 1)]}
    f = {"rounds": [_res(1.0, 0.01, 1, 0), _res(4.0, 0.04, 1, 1)]}
    assert report.paired_ratios(u, f, "cold_s") == [2.0, 1.0]
    assert report.paired_ratios(u, f, "steady_median_s") == [2.0, 0.5]


def _meta(**kw):
    return dict({"variants": ["unfixed", "fixed"], "quick": False, "torch": "t", "transformers": None,
                 "device": "cpu", "backend": "eager", "modes": ["default"], "machine": "m", "python": "3",
                 "date_utc": "d", "steady_calls": 9, "fixer_missing": False, "fixer_status": {"fixed": "ok"},
                 "fixer_output": {"fixed": ""}, "rounds": 3, "commit": "abc123"}, **kw)


def test_report_shows_rounds_compile_and_reads_old_results(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "charts", lambda *a, **k: None)
    u = report.combine_rounds([_res(2.0, 0.02, 1.0, r) for r in range(3)])
    f = report.combine_rounds([_res(1.0, 0.02 + 0.001 * r, 0.5, r) for r in range(3)])
    f["recompiles_flip"], f["recompile_reasons_flip"] = 1, ["Recompiling function forward: size mismatch"]
    cases = [{"case": "c1", "kind": "local", "files": [], "findings": {},
              "variants": {"unfixed@default": u, "fixed@default": f}}]
    report.write(str(tmp_path), _meta(), cases)
    md = (tmp_path / "report.md").read_text()
    assert "commit abc123" in md and "3 round(s)" in md
    assert "## Rounds (wall clock, default)" in md and "2.00x [2.00-2.00] **faster**" in md
    assert "within noise" in md  # steady: 0.02 vs 0.020-0.022
    assert "## Where compile time goes" in md and "| c1 | fixed | 2 | 0.50 |" in md
    assert "size mismatch" in md
    # a results.json written before rounds existed (no rounds, commit, compile figures) still renders
    old = json.load(open(os.path.join(ROOT, "perf", "results", "breaks_latency_phi3_safe_fix", "results.json")))
    report.write(str(tmp_path), old["meta"], old["cases"])
    md = (tmp_path / "report.md").read_text()
    assert "## Graph breaks" in md and "## Rounds" not in md


@pytest.mark.slow  # imports torch and compiles (5-10 s)
def test_compile_snapshot_and_delta():
    torch = pytest.importorskip("torch")
    from perf import worker
    torch._dynamo.reset()
    f = torch.compile(lambda x: x.sin() + 1, backend="eager")
    f(torch.randn(3))
    snap = worker.compile_snapshot(torch)
    assert snap["metrics"]["frames"] >= 1 and snap["metrics"]["entire_frame_compile_time_s"] > 0
    assert "bytecode_tracing" in snap["functions"]
    assert worker.snapshot_delta({"a": 3, "b": {"c": 2.5, "d": 1}}, {"a": 1, "b": {"c": 2.5}}) == {"a": 2, "b": {"d": 1}}


@pytest.mark.slow  # imports torch
def test_mark_dynamic_default_and_named():
    torch = pytest.importorskip("torch")
    from perf import worker
    inputs = [{"input_ids": torch.zeros(2, 8, dtype=torch.long), "use_cache": False}, (torch.zeros(3),)]
    assert worker.mark_dynamic(torch, inputs, None) == ["input_ids:1"]
    assert worker.mark_dynamic(torch, inputs[:1], {"input_ids": 0}) == ["input_ids:0"]


@pytest.mark.slow  # hf_models imports torch
def test_hf_case_tables_are_consistent():
    from perf import hf_models
    assert len({n.split("_")[1] for n in hf_models.HF_CASES}) >= 10  # model families
    assert set(hf_models.DEFAULT_HF) <= set(hf_models.HF_CASES)
    assert hf_models.TRAIN <= set(hf_models.HF_CASES) and len(hf_models.TRAIN) >= 4
    for name, (factory, files) in hf_models.HF_CASES.items():
        assert callable(getattr(hf_models, factory)), name
        assert files and all(f.endswith(".py") for f in files), name


def test_cuda_pass_dry_argv_and_budget(tmp_path, monkeypatch):
    args = cuda_pass.parse_args(["--dry", "--out", str(tmp_path), "--budget", "100"])
    argv = cuda_pass.step_argv("inductor_reduce_overhead", cuda_pass.PLAN[1][1], "a,b", args, 50)
    s = " ".join(argv)
    assert "--device cpu --backend eager" in s and "--modes default" in s and "--rounds 1" in s
    assert "--steady 9" in s and "--budget 50" in s and argv[-2:] == ["--timeout", "50"]
    real = cuda_pass.step_argv("inductor_reduce_overhead", cuda_pass.PLAN[1][1], "a,b",
                               cuda_pass.parse_args(["--out", str(tmp_path)]), 200)
    assert "--device cuda --backend inductor" in " ".join(real) and "--modes reduce-overhead" in " ".join(real)

    clock = [0.0]
    calls = []

    def fake_run(argv, env, timeout):  # each step "takes" 40 s and writes a results.json
        calls.append((argv, timeout))
        clock[0] += 40
        out = argv[argv.index("--out") + 1]
        os.makedirs(out, exist_ok=True)
        json.dump({"meta": {"complete": True}}, open(os.path.join(out, "results.json"), "w"))
        return 0
    monkeypatch.setattr(cuda_pass, "run_step", fake_run)
    monkeypatch.setattr(cuda_pass.time, "time", lambda: clock[0])
    assert cuda_pass.main(["--dry", "--out", str(tmp_path), "--budget", "100"]) == 0
    steps = json.load(open(tmp_path / "steps.json"))
    assert [s["status"] for s in steps][:2] == ["ok", "ok"]
    assert steps[-1]["status"] == "skipped: budget spent" and len(calls) == 2  # 100 - 80 < 30 s left
    assert calls[0][1] == 75 and abs(calls[1][1] - 61.2) < 1e-6  # hard stops: share + 30 s (0.45 x 100, 0.52 x 60)
    assert "| [inductor_default](inductor_default/report.md) | ok |" in (tmp_path / "README.md").read_text()


def test_run_step_kills_the_process_group(tmp_path):
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    t = __import__("time").time()
    assert cuda_pass.run_step([sys.executable, "-c", script], dict(os.environ), 1.0) == "timeout"
    assert __import__("time").time() - t < 20


@pytest.mark.slow  # about 30-60 s on a busy 2-core machine: two workers, backend eager
def test_cuda_pass_dry_run(tmp_path):
    out = tmp_path / "cuda"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "perf", "cuda_pass.py"), "--dry", "--out", str(out),
                           "--cases", "branch_block", "--steps", "inductor_reduce_overhead", "--budget", "200"],
                          cwd=ROOT, capture_output=True, text=True, timeout=400,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((out / "inductor_reduce_overhead" / "results.json").read_text())
    assert data["meta"]["device"] == "cpu" and data["meta"]["backend"] == "eager" and data["meta"]["complete"]
    (case,) = data["cases"]
    fixed = case["variants"]["fixed@default"]
    assert fixed["compile_cold"]["metrics"]["frames"] >= 1
    assert "## Where compile time goes" in (out / "inductor_reduce_overhead" / "report.md").read_text()
    assert "inductor_reduce_overhead" in (out / "README.md").read_text()


def test_remeasure_plan_runs_inductor_on_cpu(tmp_path):
    from perf import remeasure
    args = cuda_pass.parse_args(["--out", str(tmp_path)], default_budget=3600, default_timeout=900)
    argvs = {name: " ".join(cuda_pass.step_argv(name, extra, cases, args, 3600, "cpu"))
             for name, extra, cases in remeasure.PLAN}
    assert all("--device cpu --backend inductor" in a for a in argvs.values())
    assert "--rounds 5" in argvs["issue_cases_r5"] and "hf_phi3_longrope" in argvs["issue_cases_r5"]
    assert "--dynamic mark" in argvs["phi3_dynamic_mark"]
    assert "--cases" not in argvs["suite_r3"] and "--unsafe" in argvs["suite_r3"]  # every default case
    assert argvs["suite_r3"].endswith("--timeout 900")


def test_recompile_brief():
    msg = ("Recompiling function forward in /tmp/x/pkgs/transformers/models/phi3/modeling_phi3.py:1271\n"
           "    triggered by the following guard failure(s):\n"
           "    - 0/0: attention_mask is None                                   # if attention_mask is None:")
    assert report.recompile_brief(msg) == "forward (phi3/modeling_phi3.py:1271): attention_mask is None"


@pytest.mark.slow  # builds every transformers case (about 10-20 s)
def test_hf_flip_inputs_differ_only_where_meant():
    """A flip input whose tensors differ in layout (an expand()ed tensor vs a contiguous one) recompiles
    for the stride alone: the same-shaped tensors of inputs[0] and inputs[1] must have the same strides."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from perf import hf_models
    from perf.loader import call, leaves
    for name in hf_models.DEFAULT_HF:
        model, inputs = hf_models.make(name)
        a, b = inputs[0], inputs[1]
        pairs = [(k, a[k], b[k]) for k in a if k in b] if isinstance(a, dict) else list(zip(range(len(a)), a, b))
        for k, x, y in pairs:
            if torch.is_tensor(x) and x.shape == y.shape:
                assert x.stride() == y.stride(), (name, k, x.stride(), y.stride())
    model, inputs = hf_models.make("hf_phi3_longrope")
    with torch.no_grad():
        assert leaves(call(model, inputs[0]))[0].shape == leaves(call(model, inputs[1]))[0].shape


def test_cuda_pass_skips_a_step_whose_share_cannot_finish_one_case(tmp_path, monkeypatch):
    """The H200 run of 2026-12-04 started the last Phi-3 step with 59 s and got nothing back from it."""
    clock, calls = [0.0], []

    def fake_run(argv, env, timeout):
        calls.append(argv[argv.index("--out") + 1])
        clock[0] += 150
        os.makedirs(calls[-1], exist_ok=True)
        json.dump({"meta": {"complete": True}}, open(os.path.join(calls[-1], "results.json"), "w"))
        return 0
    monkeypatch.setattr(cuda_pass, "run_step", fake_run)
    monkeypatch.setattr(cuda_pass.time, "time", lambda: clock[0])
    # device cpu, not dry: the real budget rules without a GPU. 480 s: step 1 gets 216, step 2 (330 left) 172,
    # step 3 (180 left) 104, step 4 (30 left): too little.
    assert cuda_pass.main(["--out", str(tmp_path), "--budget", "480"], device="cpu") == 0
    steps = json.load(open(tmp_path / "steps.json"))
    assert [s["status"] for s in steps] == ["ok", "ok", "ok", "skipped: 30 s is too little for one case"]
    clock[0], calls[:] = 0.0, []
    assert cuda_pass.main(["--out", str(tmp_path), "--budget", "200"], device="cpu") == 0
    steps = json.load(open(tmp_path / "steps.json"))
    # 200 s: step 1 gets 90 (< 100): skipped, not started; step 2 gets 104 and runs
    assert steps[0]["status"] == "skipped: 90 s is too little for one case" and steps[1]["status"] == "ok"
    assert len(calls) == 1 + sum(s["status"] == "ok" for s in steps[2:])


def test_merge_folds_a_rerun_into_a_run(tmp_path):
    """The H200 pass's default step ran Phi-3 and Bart; a second call ran enc_layer_clamp and Whisper."""
    import shutil
    res = os.path.join(ROOT, "perf", "results", "breaks_latency_cuda_inductor")
    dst = tmp_path / "all"
    shutil.copytree(os.path.join(res, "inductor_default"), dst)
    report.merge(os.path.join(res, "inductor_default_part2"), str(dst))
    data = json.load(open(dst / "results.json"))
    assert [c["case"] for c in data["cases"]] == ["hf_phi3_longrope", "hf_bart", "enc_layer_clamp", "hf_whisper"]
    assert data["meta"]["skipped_for_budget"] == ["hf_wav2vec2_ctc", "mixed_block"]  # the rerun's cases ran
    assert sorted(os.listdir(dst / "profiles")) == sorted(
        f"{c}.{v}.txt" for c in ("hf_phi3_longrope", "hf_bart", "enc_layer_clamp", "hf_whisper")
        for v in ("unfixed", "fixed"))
    text = (dst / "report.md").read_text()
    assert "on 16 cpus" in text and "TORCHINDUCTOR_COMPILE_THREADS=8" in text  # the GPU machine's, not ours
    assert (dst / "report.md").read_text() == open(os.path.join(res, "inductor_default_all", "report.md")).read()


@pytest.mark.slow  # one worker pair, backend eager: about 30-60 s
def test_cuda_device_script_dry(tmp_path):
    """perf/cuda_device.sh is what the lent GPU machine runs, once, with no second try: on CPU with --dry it
    leaves the tarball of results, the log and the environment line under $OUT."""
    import tarfile
    out, results = tmp_path / "out", tmp_path / "cuda"
    env = dict(os.environ, OUT=str(out), RESULTS=str(results), WHEELS=str(tmp_path / "none"), BUDGET="150",
               CUDA_PASS_ARGS="--dry --cases branch_block --steps inductor_default",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run(["bash", os.path.join(ROOT, "perf", "cuda_device.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "cuda_device: cuda_pass rc=0" in proc.stdout
    assert "no CUDA" in (out / "env.txt").read_text() and "4.44.2" in (out / "env.txt").read_text()
    names = tarfile.open(out / "cuda.tgz").getnames()
    assert "cuda/inductor_default/results.json" in names and "cuda/README.md" in names
    assert "branch_block" in (out / "pass.log").read_text()
