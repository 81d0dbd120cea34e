"""One case x variant, in a fresh process: cold start, steady state, branch flip, breaks, outputs.

Usage: python -m perf.worker SPEC_JSON OUT_JSON OUT_PT
SPEC_JSON holds {"spec": loader spec, "backend", "device", "mode", "steady", "expect_transformers"}.
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
    from perf.loader import call, leaves, load, to_device

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
    if job["spec"]["kind"] == "hf":
        import transformers
        res["transformers_file"] = transformers.__file__
        want = job.get("expect_transformers")
        if want and not transformers.__file__.startswith(want):
            raise RuntimeError(f"wrong transformers imported: {transformers.__file__} (want {want})")
    if hasattr(model, "to"):
        model = model.to(device)
    inputs = [to_device(i, device) for i in inputs]
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

    if mode:  # e.g. reduce-overhead (CUDA graphs); counted through dynamo counters instead
        cmodel = torch.compile(model, mode=mode)
    else:
        cmodel = torch.compile(model, backend=counting(torch._dynamo.lookup_backend(backend)))

    def ccall(inp):
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        return call(cmodel, inp)

    def unique_graphs():
        return compiled_graphs[0] if not mode else counters["stats"]["unique_graphs"]

    with torch.no_grad():
        cout0, res["cold_s"], res["cold_cpu_s"] = timed2(lambda: ccall(inputs[0]))
        cout0 = [t.detach().cpu() for t in leaves(cout0)]  # CUDA graphs overwrite outputs on the next call
        res["graphs_after_cold"] = unique_graphs()
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
            try:
                cout1, res["flip_s"], res["flip_cpu_s"] = timed2(lambda: ccall(inputs[cand]))
            except Exception as e:  # noqa: BLE001
                res["raises_compiled"][cand] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                raise_idx.append(cand)
                res.pop("flip_s", None)
                res.pop("flip_cpu_s", None)
                continue
            flip_idx = cand
            cout1 = [t.detach().cpu() for t in leaves(cout1)]
            break
        else:
            flip_idx = None
        ok_idx = [i for i in ok_idx if i not in raise_idx]
        if flip_idx is not None:
            res["recompiles_flip"] = unique_graphs() - before
            again = []
            for _ in range(3):
                _, t = timed(lambda: ccall(inputs[flip_idx]))
                again.append(t)
            res["flip_warm_median_s"] = statistics.median(again)
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

        # ---- eager reference and equality of compiled vs eager ----------------------------------
        eager = {}
        res["raises_eager"] = {}
        for i in range(len(inputs)):
            try:
                eager[i] = [t.detach().cpu() for t in leaves(call(model, inputs[i]))]
            except Exception as e:  # noqa: BLE001
                res["raises_eager"][i] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        ev, evc = [], []
        for _ in range(max(5, job["steady"] // 2)):
            _, t, c = timed2(lambda: call(model, inputs[0]))
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
        for i in ok_idx:
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
