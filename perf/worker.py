"""One case x variant, in a fresh process: cold start, steady state, branch flip, breaks, outputs.

Usage: python -m perf.worker SPEC_JSON OUT_JSON OUT_PT
SPEC_JSON holds {"spec": loader spec, "backend", "device", "mode", "steady", "expect_transformers",
"dynamic": "auto"|"true"|"false"|"mark" (torch.compile(dynamic=None|True|False), or mark_dynamic on the
case's dynamic dims), "light": skip the break analysis (explain, counting backend; later rounds), "profile": torch.profiler
over 5 steady calls after all timings (round 0 only)}.

Train cases (hf_models.TRAIN, or a local model file with TRAIN = True) run forward + backward of the
sum of their floating outputs with gradients on, in train mode (outputs compared with eager include the
parameter gradients); eval cases run forward under no_grad.
compile_cold / compile_flip: where compile time went (Dynamo phases, AOT, inductor, codegen; guards),
from torch._dynamo.utils' counters, cumulative timers and compilation metrics (no TORCH_COMPILE_DEBUG).
"""
import json
import os
import statistics
import sys
import time


def main(spec_path, out_json, out_pt):
    job = json.load(open(spec_path))
    t_import = time.perf_counter()
    import torch
    import torch._dynamo
    from torch._dynamo.utils import counters
    from perf.loader import call, dynamic_dims, is_train, leaves, load, to_device

    res = {"import_s": time.perf_counter() - t_import, "loadavg_start": os.getloadavg()[0]}
    device, backend, mode = job["device"], job["backend"], job.get("mode")
    cuda = device == "cuda"

    def timed(fn):
        if cuda:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = fn()
            end.record()
            torch.cuda.synchronize()
            return out, start.elapsed_time(end) / 1000.0
        t0 = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - t0

    def cpu_now():  # this process (all threads) + waited-for children (the C++ compiler of inductor)
        t = os.times()
        return time.process_time() + t.children_user + t.children_system

    def timed2(fn):
        """(out, wall seconds, CPU seconds); CPU time is robust to other load on a shared machine."""
        c0 = cpu_now()
        out, wall = timed(fn)
        return out, wall, cpu_now() - c0

    torch.manual_seed(0)
    model, inputs, raise_idx = load(job["spec"])
    train = is_train(job["spec"])
    res["train"] = train
    dynamic = job.get("dynamic") or "auto"
    res["dynamic"] = dynamic
    if job["spec"]["kind"] == "hf":
        import transformers
        res["transformers_file"] = transformers.__file__
        want = job.get("expect_transformers")
        if want and not transformers.__file__.startswith(want):
            raise RuntimeError(f"wrong transformers imported: {transformers.__file__} (want {want})")
    if hasattr(model, "to"):
        model = model.to(device)
    if hasattr(model, "train"):
        model.train(train)
    inputs = [to_device(i, device) for i in inputs]
    if dynamic == "mark":
        res["marked_dynamic"] = mark_dynamic(torch, inputs, dynamic_dims(job["spec"]))
    recompile_log = capture_recompiles(torch)
    ok_idx = [i for i in range(len(inputs)) if i not in raise_idx]
    flip_idx = next((i for i in ok_idx if i != 0), None)

    # ---- compiled run: cold, steady, flip -------------------------------------------------------
    compiled_graphs = [0]
    graph_calls = [0]

    def counting(inner):
        def backend_fn(gm, example_inputs):
            compiled_graphs[0] += 1
            fn = inner(gm, example_inputs)

            def run(*args):
                graph_calls[0] += 1
                return fn(*args)
            return run
        return backend_fn

    dyn = {"auto": None, "mark": None, "true": True, "false": False}[dynamic]
    if mode:  # e.g. reduce-overhead (CUDA graphs); counted through dynamo counters instead
        cmodel = torch.compile(model, mode=mode, dynamic=dyn)
    else:
        cmodel = torch.compile(model, backend=counting(torch._dynamo.lookup_backend(backend)), dynamic=dyn)

    grads = []  # train: the parameter gradients of the last step (compared with eager like the outputs)

    def step(m, inp):
        """One forward (eval) or forward + backward (train)."""
        out = call(m, inp)
        if train:
            loss = sum(t.float().sum() for t in leaves(out) if t.requires_grad)
            if torch.is_tensor(loss):
                loss.backward()
            grads[:] = [p.grad.detach().cpu() for p in model.parameters() if p.grad is not None]
            model.zero_grad(set_to_none=True)
        return out

    def ccall(inp):
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        return step(cmodel, inp)

    def unique_graphs():
        return compiled_graphs[0] if not mode else counters["stats"]["unique_graphs"]

    with torch.enable_grad() if train else torch.no_grad():
        torch.manual_seed(0)  # train cases with randomness (LayerDrop, SpecAugment): same draws as eager below
        cout0, res["cold_s"], res["cold_cpu_s"] = timed2(lambda: ccall(inputs[0]))
        cout0 = [t.detach().cpu() for t in leaves(cout0)] + grads  # CUDA graphs overwrite outputs on the next call
        res["graphs_after_cold"] = unique_graphs()
        res["compile_cold"] = snap0 = compile_snapshot(torch)
        calls_before = graph_calls[0]
        steady, steady_cpu = [], []
        for _ in range(job["steady"]):
            _, t, c = timed2(lambda: ccall(inputs[0]))
            steady.append(t)
            steady_cpu.append(c)
        res["steady_cpu_median_s"] = statistics.median(steady_cpu)
        res["graph_calls_per_forward"] = (graph_calls[0] - calls_before) / job["steady"] if not mode else None
        res["steady_median_s"] = statistics.median(steady)
        res["steady_mean_s"] = statistics.mean(steady)
        res["steady_all_s"] = steady
        res["recompiles_steady"] = unique_graphs() - res["graphs_after_cold"]
        cout1 = None
        res["raises_compiled"] = {}
        for cand in [i for i in ok_idx if i != 0]:  # first input that does not raise (fixtures list raising ones)
            before = unique_graphs()
            n_recompile_msgs = len(recompile_log)
            try:
                torch.manual_seed(1)
                cout1, res["flip_s"], res["flip_cpu_s"] = timed2(lambda: ccall(inputs[cand]))
            except Exception as e:  # noqa: BLE001
                res["raises_compiled"][cand] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                raise_idx.append(cand)
                res.pop("flip_s", None)
                res.pop("flip_cpu_s", None)
                continue
            flip_idx = cand
            cout1 = [t.detach().cpu() for t in leaves(cout1)] + grads
            break
        else:
            flip_idx = None
        ok_idx = [i for i in ok_idx if i not in raise_idx]
        if flip_idx is not None:
            res["recompiles_flip"] = unique_graphs() - before
            res["compile_flip"] = snapshot_delta(compile_snapshot(torch), snap0)
            res["recompile_reasons_flip"] = recompile_log[n_recompile_msgs:][:5]
            again = []
            for _ in range(3):
                _, t = timed(lambda: ccall(inputs[flip_idx]))
                again.append(t)
            res["flip_warm_median_s"] = statistics.median(again)
        if job.get("profile") and not job.get("light"):  # after every timing: the profiler's cost stays out of them
            res["profile"] = profile_steady(torch, lambda: ccall(inputs[0]), cuda)
        for i in raise_idx:
            if i in res["raises_compiled"]:
                continue
            try:
                ccall(inputs[i])
                res["raises_compiled"][i] = None
            except Exception as e:  # noqa: BLE001 - we record whatever it raised
                res["raises_compiled"][i] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        res["unique_graphs_total"] = unique_graphs()
        res["dynamo_recompiles"] = sum(counters["recompiles"].values()) if "recompiles" in counters else None
        res["recompile_reasons"] = recompile_log[:10]

        # ---- eager reference and equality of compiled vs eager ----------------------------------
        eager = {}
        res["raises_eager"] = {}
        for i in range(len(inputs)):
            try:
                torch.manual_seed(0 if i == 0 else 1)
                eager[i] = [t.detach().cpu() for t in leaves(step(model, inputs[i]))] + grads
            except Exception as e:  # noqa: BLE001
                res["raises_eager"][i] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        ev, evc = [], []
        for _ in range(max(5, job["steady"] // 2)):
            _, t, c = timed2(lambda: step(model, inputs[0]))
            ev.append(t)
            evc.append(c)
        res["eager_median_s"] = statistics.median(ev)
        res["eager_cpu_median_s"] = statistics.median(evc)
        compiled = {0: cout0}
        if cout1 is not None:
            compiled[flip_idx] = cout1
        res["compiled_matches_eager"] = {i: same(compiled[i], eager.get(i)) for i in compiled}
        torch.save({"eager": eager, "compiled": compiled}, out_pt)

        # ---- graph breaks: explain + counting eager backend, per input ---------------------------
        res["explain"] = {}

        def explain_one(i, res):
            _explain_one(torch, model, inputs, call, i, res)
        for i in [] if job.get("light") else ok_idx:
            torch._dynamo.reset()
            try:
                explain_one(i, res)
            except Exception as e:  # noqa: BLE001 - an input that raises under explain
                res["raises_compiled"].setdefault(i, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
    res["loadavg_end"] = os.getloadavg()[0]
    json.dump(res, open(out_json, "w"), indent=1, default=str)


def _explain_one(torch, model, inputs, call, i, res):
    ex = torch._dynamo.explain(model)(*([] if isinstance(inputs[i], dict) else inputs[i]),
                                      **(inputs[i] if isinstance(inputs[i], dict) else {}))
    reasons = []
    for r in ex.break_reasons:
        fr = r.user_stack[-1] if r.user_stack else None
        reasons.append({
            "reason": r.reason.strip().splitlines()[0][:200],
            "where": f"{short(fr.filename)}:{fr.lineno}" if fr else None,
            "line": (fr.line or "").strip()[:160] if fr else None,
        })
    torch._dynamo.reset()
    n, c = [0], [0]

    def count_backend(gm, example_inputs):
        n[0] += 1

        def run(*args):
            c[0] += 1
            return gm.forward(*args)
        return run
    from graphmend_lint.verify.recorder import Recorder  # the product's graph_breaks recorder

    cm = torch.compile(model, backend=count_backend)
    with Recorder() as rec:  # explain misses breaks before a frame's first op, and skipped frames
        call(cm, inputs[i])
    c[0] = 0
    call(cm, inputs[i])
    res["explain"][i] = {
        "graphs": ex.graph_count, "breaks": ex.graph_break_count, "reasons": reasons,
        "counting_graphs": n[0], "counting_breaks": max(n[0] - 1, 0), "graph_calls_per_forward": c[0],
        "logged_breaks": [f"{short(b.file)}:{b.line} {b.gb}" for b in rec.sites()],
        "logged_frame_skips": len(rec.skips),
    }


COMPILE_METRICS = (  # summed over the compiled frames (torch._dynamo.utils.CompilationMetrics)
    "entire_frame_compile_time_s", "backend_compile_time_s", "inductor_compile_time_s", "code_gen_time_s",
    "dynamo_cumulative_compile_time_us", "aot_autograd_cumulative_compile_time_us",
    "inductor_cumulative_compile_time_us", "inductor_code_gen_cumulative_compile_time_us",
    "compile_time_autotune_time_us", "gc_time_us", "guard_count", "shape_env_guard_count", "graph_op_count",
    "graph_node_count", "dynamo_time_before_restart_s",
)


def profile_steady(torch, fn, cuda, calls=5):
    """torch.profiler over a few steady calls: the top ops by self time (CPU, or CUDA when on a GPU), as text."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    try:
        with profile(activities=acts) as prof:
            for _ in range(calls):
                fn()
            if cuda:
                torch.cuda.synchronize()
        key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
        return f"{calls} calls on inputs[0]\n" + prof.key_averages().table(sort_by=key, row_limit=25)
    except Exception as e:  # noqa: BLE001 - a profiler that cannot run here
        return f"profiler failed: {type(e).__name__}: {e}"


def compile_snapshot(torch):
    """Cumulative compile-time figures of this process so far: {"metrics": summed CompilationMetrics fields +
    "frames" (frame compiles), "phases": dynamo_timed phases (s), "functions": dynamo_timed functions (s),
    "counters": Dynamo's stats/frames/aot_autograd/inductor counters}. Missing APIs leave keys out."""
    import dataclasses
    U = torch._dynamo.utils
    snap = {}
    try:
        ms = U.get_compilation_metrics()
        agg = {"frames": len(ms)}
        for m in ms:
            d = dataclasses.asdict(m) if dataclasses.is_dataclass(m) else dict(m)
            for k in COMPILE_METRICS:
                if isinstance(d.get(k), (int, float)):
                    agg[k] = agg.get(k, 0) + d[k]
        snap["metrics"] = agg
    except Exception as e:  # noqa: BLE001 - a torch without these internals
        snap["metrics_error"] = repr(e)[:200]
    try:
        snap["phases"] = {k: round(v, 6) for k, v in U.calculate_time_spent().items()}
    except Exception:  # noqa: BLE001
        pass
    try:
        snap["functions"] = {k: round(sum(v), 6) for k, v in U.compilation_time_metrics.items()}
    except Exception:  # noqa: BLE001
        pass
    snap["counters"] = {g: {k: v for k, v in U.counters[g].items() if isinstance(v, (int, float)) and len(k) < 80}
                        for g in ("stats", "frames", "aot_autograd", "inductor", "graph_break") if g in U.counters}
    return snap


def snapshot_delta(after, before):
    """after - before, key by key (nested dicts of numbers)."""
    out = {}
    for k, v in after.items():
        b = before.get(k) if isinstance(before, dict) else None
        if isinstance(v, dict):
            out[k] = snapshot_delta(v, b or {})
        elif isinstance(v, (int, float)):
            d = v - (b or 0)
            if d:
                out[k] = round(d, 6) if isinstance(d, float) else d
    return out


def mark_dynamic(torch, inputs, dims):
    """torch._dynamo.mark_dynamic on dims (name or position -> dim) of every input, or by default on dim 1 of
    every tensor input with 2 or more dims (the sequence dim of the transformers cases). Returns what it marked."""
    marked = []
    for inp in inputs:
        items = inp.items() if isinstance(inp, dict) else enumerate(inp)
        for k, v in items:
            if not torch.is_tensor(v):
                continue
            dim = dims.get(k) if dims is not None else (1 if v.dim() >= 2 else None)
            if dim is not None and v.dim() > dim:
                torch._dynamo.mark_dynamic(v, dim)
                marked.append(f"{k}:{dim}")
    return sorted(set(marked))


def capture_recompiles(torch):
    """A list that receives Dynamo's recompile reasons (the `recompiles` log artifact)."""
    import logging
    msgs = []

    class H(logging.Handler):
        def emit(self, record):
            try:
                msgs.append(record.getMessage().strip()[:400])
            except Exception:  # noqa: BLE001
                pass
    try:
        torch._logging.set_logs(recompiles=True)
        lg = logging.getLogger("torch._dynamo.guards.__recompiles")
        lg.addHandler(H())
        lg.propagate = False  # keep them in the result, not on stderr
    except Exception:  # noqa: BLE001
        pass
    return msgs


def short(path):
    for key in ("site-packages/", "/perf/models/", "/models/"):
        if key in path:
            return path.split(key, 1)[1] if key == "site-packages/" else path.split(key, 1)[1]
    return path


def same(a, b):
    import torch
    if b is None or len(a) != len(b):
        return {"equal": False, "allclose": False}
    def eq_nan(x, y):  # torch.equal, with NaN equal to NaN in the same positions
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.is_floating_point():
            nx, ny = torch.isnan(x), torch.isnan(y)
            return torch.equal(nx, ny) and torch.equal(torch.where(nx, 0, x), torch.where(ny, 0, y))
        return torch.equal(x, y)
    eq = all(eq_nan(x, y) for x, y in zip(a, b))
    close = all(x.shape == y.shape and torch.allclose(x.float(), y.float(), rtol=1e-2, atol=1e-2, equal_nan=True)
                for x, y in zip(a, b))
    return {"equal": eq, "allclose": close}


if __name__ == "__main__":
    main(*sys.argv[1:4])
