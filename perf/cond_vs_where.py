"""torch.cond vs torch.where vs the double-where idiom vs the unfixed `if` (issue 13).

    python perf/cond_vs_where.py                 # full run (about 4-6 min on a 2-core CPU box)
    python perf/cond_vs_where.py --quick         # the gather case (all 4 forms), fewer repeats (about 1 min)
    python perf/cond_vs_where.py --report-only   # rewrite report.md from results.json

Forms, each compiled with torch.compile and compared with the eager unfixed code:
  if     the original Python `if` on a tensor value (a graph break)
  where  torch.where(pred, arm_true, arm_false): both arms run, then one is selected
  cond   torch.cond(pred, true_fn, false_fn, operands): one arm runs
  dwhere the double-where idiom: the inputs of the arm that can raise / give non-finite gradients
         are sanitized first (x[torch.where(ok, idx, 0)], sqrt(torch.where(ok, x, 1))), then where
Per case, form and mode (eval: forward under no_grad; train: forward + backward): graphs compiled,
graph breaks (Dynamo's graph_breaks log), cold time (first call, compile included), steady latency
(median after warm-up), the flip (first call taking the other arm, after the warm-up), graphs run
per call, and equality of outputs / gradients with the eager original (aot_eager: torch.equal;
inductor: allclose). The inductor output code is analysed (kernels, extern calls, the host-side `if`
of torch.cond) and kept for the cond form. A last part triggers known torch.cond limits and records
the exact errors. Device: CUDA when available (adds a mode="reduce-overhead" pass), else CPU.
No torch import happens before the cache environment is set (fresh inductor cache per run).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "cond_vs_where"


def _env_before_torch(threads: int, cache_dir: str | None) -> None:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir or tempfile.mkdtemp(prefix="cvw_inductor_")
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "triton"))
    os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
    os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))


# ----------------------------------------------------------------------------------------------
# cases (built after torch is imported)
# ----------------------------------------------------------------------------------------------

def build_cases(torch, nn, device, quick):
    class Router(nn.Module):
        """Arms call two different layers: `if x.mean() > 0: return a(x); return b(x)`."""

        def __init__(self, d, hidden=None):
            super().__init__()
            if hidden:
                self.a = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))
                self.b = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))
            else:
                self.a, self.b = nn.Linear(d, d), nn.Linear(d, d)

        def f_if(self, x):
            if x.mean() > 0:
                return self.a(x)
            return self.b(x)

        def f_where(self, x):
            return torch.where(x.mean() > 0, self.a(x), self.b(x))

        def f_cond(self, x):
            return torch.cond(x.mean() > 0, lambda x: self.a(x), lambda x: self.b(x), (x,))

    class Gather(nn.Module):
        """The taken arm gathers rows with a tensor index, guarded by an in-range test."""

        def __init__(self, d):
            super().__init__()
            self.lin = nn.Linear(d, d)

        def f_if(self, x, idx):
            h = self.lin(x)
            if (idx < h.shape[0]).all():
                y = h[idx]
            else:
                y = h.mean(0, keepdim=True).repeat(idx.shape[0], 1)
            return y

        def f_where(self, x, idx):
            h = self.lin(x)
            ok = (idx < h.shape[0]).all()
            return torch.where(ok, h[idx], h.mean(0, keepdim=True).repeat(idx.shape[0], 1))

        def f_cond(self, x, idx):
            h = self.lin(x)
            return torch.cond((idx < h.shape[0]).all(), lambda h, idx: h[idx],
                              lambda h, idx: h.mean(0, keepdim=True).repeat(idx.shape[0], 1), (h, idx))

        def f_dwhere(self, x, idx):
            h = self.lin(x)
            ok = (idx < h.shape[0]).all()
            safe = torch.where(ok, idx, 0)  # a valid index whatever the test says
            return torch.where(ok, h[safe], h.mean(0, keepdim=True).repeat(idx.shape[0], 1))

    class Elementwise(nn.Module):
        """`if x.sum() > 0: y = h * 2 else: y = h - 1` after a Linear."""

        def __init__(self, d):
            super().__init__()
            self.lin = nn.Linear(d, d)

        def f_if(self, x):
            h = self.lin(x)
            if x.sum() > 0:
                y = h * 2
            else:
                y = h - 1
            return y

        def f_where(self, x):
            h = self.lin(x)
            return torch.where(x.sum() > 0, h * 2, h - 1)

        def f_cond(self, x):
            h = self.lin(x)
            return torch.cond(x.sum() > 0, lambda h: h * 2, lambda h: h - 1, (h,))

    class SqrtArm(nn.Module):
        """The taken arm uses sqrt(x), valid only when x > 0: where gives NaN gradients otherwise."""

        def __init__(self, d):
            super().__init__()
            self.lin = nn.Linear(d, d)

        def f_if(self, x):
            h = self.lin(x)
            if x.min() > 0:
                y = h * x.sqrt()
            else:
                y = h
            return y

        def f_where(self, x):
            h = self.lin(x)
            return torch.where(x.min() > 0, h * x.sqrt(), h)

        def f_cond(self, x):
            h = self.lin(x)
            return torch.cond(x.min() > 0, lambda h, x: h * x.sqrt(), lambda h, x: h.clone(), (h, x))

        def f_dwhere(self, x):
            h = self.lin(x)
            ok = x.min() > 0
            xs = torch.where(ok, x, 1.0)  # sqrt never sees a negative input
            return torch.where(ok, h * xs.sqrt(), h)

    def g(seed):
        return torch.Generator().manual_seed(seed)

    def rn(*shape, seed, shift=0.0):
        return (torch.randn(*shape, generator=g(seed)) + shift).to(device)

    cases = []

    def add(name, make, inputs, grad_args, note, forms=("if", "where", "cond"), untaken_raises=()):
        cases.append(dict(name=name, make=make, inputs=inputs, grad_args=grad_args, note=note, forms=list(forms),
                          untaken_raises=untaken_raises))

    if not quick:
        add("router_cheap", lambda: Router(64), [(rn(32, 64, seed=1, shift=0.5),), (rn(32, 64, seed=2, shift=-0.5),)],
            [0], "x(32,64); arms Linear(64,64) a / b; pred x.mean() > 0")
        add("router_expensive", lambda: Router(512, 2048),
            [(rn(32, 512, seed=3, shift=0.5),), (rn(32, 512, seed=4, shift=-0.5),)], [0],
            "x(32,512); arms MLP 512-2048-512 (GELU) a / b: each arm about 0.13 GFLOP forward")
    n, k, d = 128, 32, 64
    idx_ok = torch.randint(0, n, (k,), generator=g(5)).to(device)
    idx_bad = idx_ok.clone()
    idx_bad[3] = n + 7  # out of range: the gathering arm is not taken, and must not run
    add("gather", lambda: Gather(d), [(rn(n, d, seed=6), idx_ok), (rn(n, d, seed=7), idx_bad)], [0],
        f"x({n},{d}), idx({k},) int64; arm h[idx] if (idx < {n}).all() else mean row; input 1 has idx = {n + 7}",
        forms=("if", "where", "cond", "dwhere"), untaken_raises=("where",))
    if not quick:
        add("elementwise", lambda: Elementwise(128),
            [(rn(64, 128, seed=8, shift=0.5),), (rn(64, 128, seed=9, shift=-0.5),)], [0],
            "x(64,128); h = Linear(128,128)(x); h * 2 if x.sum() > 0 else h - 1")
        add("sqrt_arm", lambda: SqrtArm(64),
            [(torch.rand(32, 64, generator=g(10)).add(0.1).to(device),), (rn(32, 64, seed=11),)], [0],
            "x(32,64); h = Linear(64,64)(x); h * sqrt(x) if x.min() > 0 else h; input 1 has negative x",
            forms=("if", "where", "cond", "dwhere"))
    return cases


# ----------------------------------------------------------------------------------------------
# torch.cond limits: each snippet is one branch body that cond refuses (or not)
# ----------------------------------------------------------------------------------------------

def limit_snippets(torch, nn, device):
    x = torch.randn(4, 8, device=device)
    bn = nn.BatchNorm1d(8).to(device).train()

    def alias(x):
        return torch.cond(x.sum() > 0, lambda x: x, lambda x: x * 2, (x,))

    def alias_view(x):
        return torch.cond(x.sum() > 0, lambda x: x.view(-1), lambda x: (x * 2).view(-1), (x,))

    def shapes(x):
        return torch.cond(x.sum() > 0, lambda x: x[:2] * 2, lambda x: x * 2, (x,))

    def dtypes(x):
        return torch.cond(x.sum() > 0, lambda x: (x * 2).to(torch.int64), lambda x: x * 2, (x,))

    def item(x):
        return torch.cond(x.sum() > 0, lambda x: x * x.sum().item(), lambda x: x * 2, (x,))

    def nonzero(x):
        return torch.cond(x.sum() > 0, lambda x: x[x > 0].sum().expand(4, 8), lambda x: x * 2, (x,))

    def batchnorm(x):
        return torch.cond(x.sum() > 0, lambda x: bn(x), lambda x: x * 2, (x,))

    def printing(x):
        def t(x):
            print("taken")
            return x * 2
        return torch.cond(x.sum() > 0, t, lambda x: x - 1, (x,))

    def mutate(x):
        def t(x):
            x.add_(1)
            return x * 2
        return torch.cond(x.sum() > 0, t, lambda x: x - 1, (x,))

    return [
        ("alias_input_as_output", "true_fn returns its input unchanged", alias, [False, True]),
        ("alias_view_of_input", "true_fn returns x.view(-1)", alias_view, [False, True]),
        ("different_output_shapes", "true_fn (2,8), false_fn (4,8)", shapes, [False, True]),
        ("different_output_dtypes", "int64 vs float32", dtypes, [False]),
        ("item_in_branch", "x * x.sum().item() in true_fn", item, [False]),
        ("nonzero_in_branch", "x[x > 0] (data-dependent shape) in true_fn", nonzero, [False]),
        ("batchnorm_train_in_branch", "BatchNorm1d in train mode (running stats mutated)", batchnorm, [False]),
        ("print_in_branch", "print() in true_fn", printing, [False]),
        ("input_mutation_in_branch", "x.add_(1) in true_fn", mutate, [False]),
    ], x


# ----------------------------------------------------------------------------------------------
# log capture
# ----------------------------------------------------------------------------------------------

class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.breaks: list[str] = []
        self.codes: list[str] = []
        self.cudagraph: list[str] = []

    def emit(self, record):
        name = record.name
        if name.endswith("__graph_breaks"):
            self.breaks.append(record.getMessage())
        elif name.endswith("__output_code"):
            msg = record.getMessage()
            if msg.startswith("Output code:"):
                self.codes.append(msg.split("\n", 1)[1] if "\n" in msg else msg)
        elif "cudagraph" in name:
            self.cudagraph.append(record.getMessage()[:300])

    def reset(self):
        self.breaks, self.codes, self.cudagraph = [], [], []


def install_capture(torch):
    cap = Capture()
    torch._logging.set_logs(graph_breaks=True, output_code=True, cudagraphs=True)
    for n in list(logging.root.manager.loggerDict):
        if n.startswith("torch"):
            for h in logging.getLogger(n).handlers:
                h.setLevel(logging.CRITICAL)  # keep logs off the console
    for n in ("torch._dynamo", "torch._inductor"):
        logging.getLogger(n).addHandler(cap)
    return cap


# ----------------------------------------------------------------------------------------------
# output-code analysis
# ----------------------------------------------------------------------------------------------

KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.(cpp_pybinding|cpp|triton)\(", re.MULTILINE)


def analyse_code(code: str) -> dict:
    kernels = [m.group(1) for m in KERNEL_DEF.finditer(code)]
    funcs: dict[str, list[str]] = {}  # top-level functions and methods (Runner.call): name -> body lines
    lines = code.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^( *)def (\w+)\(", line)
        if not m:
            continue
        ind, body = len(m.group(1)), []
        for l in lines[i + 1:]:
            if l.strip() and len(l) - len(l.lstrip()) <= ind:
                break
            body.append(l)
        funcs[m.group(2)] = body
    launches = {}
    for fname, body in funcs.items():
        if fname in ("benchmark_compiled_module", "__init__", "recursively_apply_fns") or fname.startswith("get_args"):
            continue
        n_k = sum(len(re.findall(rf"\b{re.escape(k)}(?:\.run)?\(", l)) for l in body for k in kernels)
        n_e = sum(len(re.findall(r"extern_kernels\.\w+\(", l)) for l in body)
        n_aten = sum(len(re.findall(r"\btorch\.ops\.aten\.\w+", l)) + len(re.findall(r"\baten\.\w+\.\w+\(", l)) for l in body)
        launches[fname] = {"fused_kernels": n_k, "extern_calls": n_e, "aten_fallbacks": n_aten}
    host_ifs = [l.strip() for b in funcs.values() for l in b if re.match(r"\s*if .*\.item\(\):", l)]
    call_body = funcs.get("call", [])
    pred_kernels = []
    for i, l in enumerate(call_body):
        if re.match(r"\s*if .*\.item\(\):", l):
            pred_buf = re.match(r"\s*if (\w+)\.item", l).group(1)
            pred_kernels = [k for k in kernels if any(k + "(" in ll and pred_buf in ll for ll in call_body[:i])]
    return {
        "kernels_defined": kernels,
        "launches_per_function": launches,
        "host_side_ifs": host_ifs,
        "subgraph_functions": [f for f in funcs if re.match(r"(true|false)_graph_\d+", f)],
        "predicate_kernels": pred_kernels,
        "calls_subgraph_functions": any(re.search(r"(true|false)_graph_\d+\(", l) for l in call_body),
    }


# ----------------------------------------------------------------------------------------------
# measurement
# ----------------------------------------------------------------------------------------------

class Bench:
    def __init__(self, torch, device, steady_s, min_reps, max_reps):
        self.torch, self.device, self.cuda = torch, device, device == "cuda"
        self.steady_s, self.min_reps, self.max_reps = steady_s, min_reps, max_reps
        self.reuse_kernels = False

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def cpu_now(self):
        t = os.times()
        return time.process_time() + t.children_user + t.children_system

    def timed(self, fn):
        """(result or exception, wall s, cpu s)."""
        self.sync()
        c0, t0 = self.cpu_now(), time.perf_counter()
        try:
            out = fn()
            self.sync()
        except Exception as e:  # noqa: BLE001 - recorded
            out = e
        return out, time.perf_counter() - t0, self.cpu_now() - c0

    def steady_interleaved(self, fns: dict, warmup=3):
        """Median latency of each callable, called in turn (round robin) until the time budget is spent."""
        for fn in fns.values():
            for _ in range(warmup):
                fn()
        self.sync()
        times = {k: [] for k in fns}
        cpu = {k: [] for k in fns}
        t_end = time.perf_counter() + self.steady_s * len(fns)
        n = 0
        while n < self.min_reps or (time.perf_counter() < t_end and n < self.max_reps):
            for k, fn in fns.items():
                c0, t0 = time.process_time(), time.perf_counter()
                fn()
                self.sync()
                times[k].append(time.perf_counter() - t0)
                cpu[k].append(time.process_time() - c0)
            n += 1
        return {k: self._stats(v, cpu[k]) for k, v in times.items()}

    @staticmethod
    def _stats(times, cpu=None):
        times = sorted(times)

        def q(p):
            return times[min(len(times) - 1, int(p * len(times)))]
        out = {"median_us": statistics.median(times) * 1e6, "p10_us": q(0.1) * 1e6, "p90_us": q(0.9) * 1e6, "n": len(times)}
        if cpu:  # process CPU time per call: on a shared, oversubscribed CPU box less noisy than wall time
            out["cpu_median_us"] = statistics.median(cpu) * 1e6
        return out

    def steady(self, fn, warmup=3):
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        t_end = time.perf_counter() + self.steady_s
        t_cap = time.perf_counter() + 4 * self.steady_s  # slow calls (eager torch.cond in train): >= 5 reps
        while (len(times) < self.min_reps and (len(times) < 5 or time.perf_counter() < t_cap)) or (
                time.perf_counter() < t_end and len(times) < self.max_reps):
            t0 = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - t0)
        return self._stats(times)


def make_step(torch, fn, args, grad_args, train):
    """A callable running one eval forward (no_grad) or one train forward + backward."""
    if not train:
        def step():
            with torch.no_grad():
                return (fn(*args),)
        return step, args
    args = tuple(a.detach().clone().requires_grad_(i in grad_args) for i, a in enumerate(args))
    params = [p for p in fn.parameters()]
    wrt = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad] + params

    def step():
        out = fn(*args)
        grads = torch.autograd.grad(out.float().sum(), wrt, allow_unused=True, materialize_grads=True)
        return (out.detach(),) + tuple(grads)
    return step, args


def compare(torch, got, ref):
    if isinstance(got, Exception):
        return {"error": f"{type(got).__name__}: {first_line(got)}"}
    if len(got) != len(ref):
        return {"equal": False, "close": False, "why": "arity"}
    eq = all(a.shape == b.shape and torch.equal(a, b) for a, b in zip(got, ref))
    close = all(a.shape == b.shape and torch.allclose(a.float(), b.float(), rtol=1e-4, atol=1e-5, equal_nan=True)
                for a, b in zip(got, ref))
    nonfinite = any(not torch.isfinite(a).all() for a in got[1:])
    maxdiff = max(((a.float() - b.float()).abs().nan_to_num(float("inf")).max().item() if a.shape == b.shape else float("inf"))
                  for a, b in zip(got, ref))
    return {"equal": eq, "close": close, "nonfinite_grads": nonfinite, "max_abs_diff": maxdiff}


def first_line(e, n=1):
    lines = [l for l in str(e).splitlines() if l.strip()]
    return " | ".join(lines[:n]) if lines else type(e).__name__


def fresh_kernel_cache(torch, reuse: bool) -> None:
    """A new inductor cache dir and empty in-memory code caches, so that a form does not reuse the C++ /
    Triton kernels an earlier form compiled (the predicate kernel of `if` and `cond` is often the same
    source). The process-wide one-off costs (inductor imports, CPU ISA probes) were paid by the warm-up."""
    if reuse:
        return
    from torch._inductor import codecache
    root = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    root = os.environ.setdefault("CVW_CACHE_ROOT", root)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="form_", dir=root)
    os.environ["TRITON_CACHE_DIR"] = os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "triton")
    for cls in ("CppCodeCache", "CppPythonBindingsCodeCache", "CppWrapperCodeCache", "PyCodeCache"):
        c = getattr(codecache, cls, None)
        if c is not None:
            c.cache_clear()


class Counting:
    """A backend that counts graphs compiled and graph calls, delegating to inductor or aot_eager."""

    def __init__(self, torch, backend, cudagraphs=False):
        self.torch, self.backend, self.cudagraphs = torch, backend, cudagraphs
        self.compiled = 0
        self.calls = 0

    def __call__(self, gm, example_inputs):
        self.compiled += 1
        if self.backend == "inductor":
            from torch._inductor.compile_fx import compile_fx
            inner = compile_fx(gm, example_inputs, config_patches={"triton.cudagraphs": True} if self.cudagraphs else None)
        else:
            inner = self.torch._dynamo.lookup_backend(self.backend)(gm, example_inputs)

        def run(*a):
            self.calls += 1
            return inner(*a)
        return run


def run_case(torch, nn, bench, cap, case, refs, backend, mode, cudagraphs=False, timing=True):
    """All forms of one case in one mode: compile each (cold), then time them interleaved with the eager
    original (steady: one call of each in turn, so a change of machine load hits all alike), then the flip
    (first call on input 1) of each, breaks and equality on both inputs."""
    torch._dynamo.reset()
    res, runs = {}, {}
    train = mode == "train"
    for form in case["forms"]:
        torch.manual_seed(0)
        base = case["make"]().to(bench.device)
        base.train(train)
        fresh_kernel_cache(torch, reuse=backend != "inductor" or bench.reuse_kernels)
        cnt = Counting(torch, backend, cudagraphs)
        # the bound method itself is compiled (a wrapper module would log each break twice: once at its call)
        cm = _Bound(base, form, compile=lambda f, cnt=cnt: torch.compile(f, backend=cnt))
        cap.reset()
        skips0 = torch._dynamo.utils.counters["inductor"]["cudagraph_skips"]
        s0, _ = make_step(torch, cm, case["inputs"][0], case["grad_args"], train)
        s1, _ = make_step(torch, cm, case["inputs"][1], case["grad_args"], train)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out0, cold, cold_cpu = bench.timed(s0)
        r = {"cold_s": cold, "cold_cpu_s": cold_cpu, "graphs_cold": cnt.compiled, "breaks_cold": len(cap.breaks)}
        r["eq_input0"] = compare(torch, out0, refs[mode][0])
        runs[form] = dict(cnt=cnt, s0=s0, s1=s1, ok0=not isinstance(out0, Exception), breaks=list(cap.breaks),
                          codes=list(cap.codes), cg=list(cap.cudagraph), skips0=skips0)
        res[form] = r
    if timing:
        torch.manual_seed(0)
        ebase = case["make"]().to(bench.device)
        ebase.train(train)
        eager0, _ = make_step(torch, _Bound(ebase, "if"), case["inputs"][0], case["grad_args"], train)
        fns = {"eager_original": eager0}
        fns.update({f: r["s0"] for f, r in runs.items() if r["ok0"]})
        calls0 = {f: r["cnt"].calls for f, r in runs.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            st = bench.steady_interleaved(fns)
        res["eager_original"] = {"steady": st.pop("eager_original")}
        for f, v in st.items():
            res[f]["steady"] = v
            res[f]["graph_calls_per_step"] = (runs[f]["cnt"].calls - calls0[f]) / (v["n"] + 3)
    for form, run in runs.items():
        r, cnt = res[form], run["cnt"]
        cap.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if bench.cuda and form in case.get("untaken_raises", ()):
                out1, flip = RuntimeError("skipped on CUDA: the untaken arm would trigger a device-side assert"), 0.0
            else:
                out1, flip, _ = bench.timed(run["s1"])
        breaks = run["breaks"] + cap.breaks
        r.update(flip_s=flip, graphs_total=cnt.compiled, breaks_total=len(breaks),
                 break_reasons=sorted({b.splitlines()[0].replace(str(HERE.parent) + os.sep, "")[:160] for b in breaks}))
        r["eq_input1"] = compare(torch, out1, refs[mode][1])
        if backend == "inductor":
            codes = run["codes"] + cap.codes
            r["code"] = [analyse_code(c) for c in codes]
            r["_code_text"] = codes
            r["cudagraph_skips"] = torch._dynamo.utils.counters["inductor"]["cudagraph_skips"] - run["skips0"]
            r["cudagraph_log"] = (run["cg"] + cap.cudagraph)[:4]
    return res


def eager_refs(torch, case, device):
    torch.manual_seed(0)
    base = case["make"]().to(device)
    refs = {}
    for mode in ("eval", "train"):
        base.train(mode == "train")
        outs = []
        for args in case["inputs"]:
            step, _ = make_step(torch, _Bound(base, "if"), args, case["grad_args"], mode == "train")
            outs.append(step())
        refs[mode] = outs
    return refs


class _Bound:
    """A form of a base module as a plain callable with .parameters() (eager runs)."""

    def __init__(self, base, form, compile=None):
        self.base, self.fn = base, getattr(base, "f_" + form)
        if compile:
            self.fn = compile(self.fn)

    def __call__(self, *a):
        return self.fn(*a)

    def parameters(self):
        return self.base.parameters()


def eager_latency(torch, bench, case, quick):
    """Each form run eagerly (no compile), alone: what a user who does not compile pays for the rewrite."""
    bench = Bench(torch, bench.device, steady_s=bench.steady_s / 2, min_reps=10, max_reps=200)
    torch.manual_seed(0)
    base = case["make"]().to(bench.device)
    res = {}
    for mode in ("eval", "train"):
        base.train(mode == "train")
        for form in case["forms"]:
            step, _ = make_step(torch, _Bound(base, form), case["inputs"][0], case["grad_args"], mode == "train")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    res[f"{form}/{mode}"] = bench.steady(step)
                except Exception as e:  # noqa: BLE001
                    res[f"{form}/{mode}"] = {"error": f"{type(e).__name__}: {first_line(e)}"}
    return res


def run_limits(torch, nn, device, cap):
    snippets, x = limit_snippets(torch, nn, device)
    out = []
    for name, what, fn, grads in snippets:
        for grad in grads:
            for where in ("eager", "compile_aot_eager"):
                torch._dynamo.reset()
                cap.reset()
                a = x.detach().clone().requires_grad_(grad)
                f = fn if where == "eager" else torch.compile(fn, backend="aot_eager")
                rec = {"case": name, "what": what, "requires_grad": grad, "run": where}
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        y = f(a)
                        if grad:
                            y.float().sum().backward()
                    rec["result"] = "ok"
                    rec["output_shape"] = list(y.shape)
                except Exception as e:  # noqa: BLE001 - recorded
                    rec["result"] = "error"
                    rec["error_type"] = f"{type(e).__module__}.{type(e).__qualname__}"
                    lines = [l for l in str(e).splitlines() if l.strip() and not l.startswith("  File")]
                    rec["error_lines"] = [l[:700] for l in lines[:8]]
                rec["graph_breaks_logged"] = len(cap.breaks)
                out.append(rec)
    torch._dynamo.reset()
    return out


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------

def fmt_us(v):
    return "-" if v is None else (f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} us")


def eq_cell(r):
    def one(e):
        if "error" in e:
            return "raises " + e["error"].split(":")[0]
        if e.get("equal"):
            return "equal"
        if e.get("close"):
            return "close"
        return "NaN grad" if e.get("nonfinite_grads") else f"DIFF {e.get('max_abs_diff', 0):.2g}"
    return f"{one(r['eq_input0'])} / {one(r['eq_input1'])}"


def write_report(data, out: Path):
    L = []
    meta = data["meta"]
    L.append("# torch.cond vs torch.where vs double-where vs the unfixed `if` (issue 13)\n")
    L.append(f"Generated by `python perf/cond_vs_where.py{' --quick' if meta['quick'] else ''}`: torch {meta['torch']}, "
             f"device {meta['device']}, {meta['threads']} intra-op thread(s), {meta['cpus']} CPUs, load average at start "
             f"{meta['loadavg_start']:.1f}, end {meta.get('loadavg_end', 0):.1f}; total {meta.get('total_s', 0):.0f} s. "
             "Fresh inductor cache per run (FX graph and autograd caches off, one compile thread); each form "
             "compiled after `torch._dynamo.reset()` in one process, after a warm-up compile of an unrelated function.\n")
    L.append("Forms: **if** the original (graph break), **where** both arms then select, **cond** `torch.cond` "
             "(one arm), **dwhere** double-where (the risky arm's input sanitized, then where). eval = forward under "
             "no_grad; train = forward + backward (`autograd.grad` of the sum w.r.t. input and parameters). "
             "steady = median of >= %d calls on input 0 after 3 warm-up calls; flip = first call on input 1 "
             "(other arm) after that; eager = the same form run without compile, alone (>= 10 calls). Equality vs the eager original "
             "on input 0 / input 1 (aot_eager: `torch.equal` = equal; inductor: `allclose(1e-4, 1e-5)` = close).\n"
             .replace("%d", str(meta["min_reps"])))
    L.append("## Summary: steady latency and what goes wrong\n")
    L.append("Median wall time per call (median process CPU time per call in brackets), inductor except the eager "
             "original; all forms of a case and mode timed in turn, one call each, so load changes hit all alike. "
             "Last column: the result on input 1 (the risky arm not taken) where it differs from the eager original.\n")
    L.append("| case | mode | eager original | if (compiled, break) | where | cond | dwhere | untaken-arm trouble (inductor, input 1) |")
    L.append("|---|---|---|---|---|---|---|---|")
    for case in data["cases"]:
        for mode in ("eval", "train"):
            ind = case["inductor"].get(mode, {})
            eg = ind.get("eager_original", {}).get("steady", {})
            def cell(st):
                if not st:
                    return "-"
                return fmt_us(st["median_us"]) + (f" ({fmt_us(st['cpu_median_us'])})" if "cpu_median_us" in st else "")
            cells = [cell(ind[f].get("steady")) if f in ind else "-" for f in ("if", "where", "cond", "dwhere")]
            trouble = [f"{f}: {eq_cell(ind[f]).split(' / ')[1]}" for f in case["forms"] if f in ind
                       if not eq_cell(ind[f]).split(" / ")[1] in ("equal", "close")]
            L.append(f"| {case['name']} | {mode} | {cell(eg)} | " + " | ".join(cells)
                     + f" | {'; '.join(trouble) or 'none'} |")
    for case in data["cases"]:
        L.append(f"\n## {case['name']}\n\n{case['note']}\n")
        L.append("| form | mode | graphs (cold/+flip) | breaks | cold wall / CPU | kernels built | steady (inductor) | eager steady | flip | graphs run/forward | inductor eq in0/in1 | aot_eager eq in0/in1 |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for mode in ("eval", "train"):
            ind = case["inductor"].get(mode, {})
            aot = case["aot_eager"].get(mode, {})
            for form in case["forms"]:
                r = ind.get(form)
                a = aot.get(form)
                eg = case["eager"].get(f"{form}/{mode}", {})
                if r is None:
                    continue
                st = r.get("steady", {})
                L.append(f"| {form} | {mode} | {r['graphs_cold']}/+{r['graphs_total'] - r['graphs_cold']} | {r['breaks_total']} | "
                         f"{r['cold_s']:.1f} / {r['cold_cpu_s']:.1f} s | {sum(len(c['kernels_defined']) for c in r.get('code', []))} | {fmt_us(st.get('median_us'))} | {fmt_us(eg.get('median_us')) if 'median_us' in eg else eg.get('error', '-')[:40]} | "
                         f"{r['flip_s'] * 1000:.1f} ms | {r.get('graph_calls_per_step', 0):.0f} | {eq_cell(r)} | {eq_cell(a) if a else '-'} |")
    if any(c.get("inductor_cudagraphs") for c in data["cases"]):
        L.append("\n## CUDA graphs (inductor with triton.cudagraphs, as mode=\"reduce-overhead\")\n")
        L.append("| case | mode | form | steady | cudagraph skips | skip message |")
        L.append("|---|---|---|---|---|---|")
        for case in data["cases"]:
            for mode, forms in case.get("inductor_cudagraphs", {}).items():
                for f in case["forms"]:
                    r = forms.get(f)
                    if r:
                        msg = (r.get("cudagraph_log") or [""])[0].splitlines()[0][:120] if r.get("cudagraph_log") else ""
                        L.append(f"| {case['name']} | {mode} | {f} | {fmt_us(r.get('steady', {}).get('median_us'))} | "
                                 f"{r.get('cudagraph_skips')} | {msg} |")
    # cond codegen
    L.append(f"\n## What inductor generates for torch.cond ({meta['device']})\n")
    L.append("From the output code of the cond form (files in `output_code/`). launches = fused kernels + extern "
             "calls (mm/addmm) + aten fallbacks, in the wrapper's `call` and in each branch subgraph function.\n")
    L.append("| case | mode | graph | host-side `if` in cond's wrapper | predicate kernel | cond launches: true path / false path | where launches | dwhere launches |")
    L.append("|---|---|---|---|---|---|---|---|")
    for case in data["cases"]:
        for mode in ("eval", "train"):
            forms = case["inductor"].get(mode, {})
            r = forms.get("cond")
            if not r:
                continue
            for gi, c in enumerate(r["code"]):
                lp = c["launches_per_function"]

                def tot(f, lp=lp):
                    return sum(lp.get(f, {}).values())
                subs = c["subgraph_functions"]
                paths = " / ".join(str(tot("call") + tot(f)) for f in subs) if subs else str(tot("call"))
                other = []
                for f in ("where", "dwhere"):
                    w = forms.get(f)
                    other.append(str(tot_w(w["code"][gi])) if w and gi < len(w["code"]) else "-")
                L.append(f"| {case['name']} | {mode} | {'fwd' if gi == 0 else 'bwd' if gi == 1 else gi} | "
                         f"{'; '.join('`' + h + '`' for h in c['host_side_ifs']) or 'none'} | "
                         f"{', '.join(c['predicate_kernels']) or '-'} | {paths} | {' | '.join(other)} |")
    L.append("")
    # limits
    L.append(f"\n## torch.cond limits (torch {meta['torch']})\n")
    L.append("Each snippet is `torch.cond(x.sum() > 0, true_fn, false_fn, (x,))` with x (4, 8); run eagerly and under "
             "`torch.compile(backend=\"aot_eager\")` (no fullgraph). `breaks` = graph_breaks log records.\n")
    L.append("| case | requires_grad | eager `torch.cond` | under `torch.compile` (aot_eager) | graph breaks logged |")
    L.append("|---|---|---|---|---|")
    groups: dict = {}
    for rec in data["limits"]:
        groups.setdefault((rec["case"], rec["what"], rec["requires_grad"]), {})[rec["run"]] = rec

    def cell(rec):
        if rec is None:
            return "-"
        if rec["result"] != "error":
            return f"ok, output shape {rec.get('output_shape')}"
        lines = [re.sub(r" at 0x[0-9a-f]+", "", l).replace("|", "\\|") for l in key_lines(rec["error_lines"])]
        return f"`{rec['error_type'].rsplit('.', 1)[-1]}`: " + " / ".join(lines)
    for (name, what, grad), runs in groups.items():
        nb = sum(r["graph_breaks_logged"] for r in runs.values())
        L.append(f"| {name} ({what}) | {grad} | {cell(runs.get('eager'))} | {cell(runs.get('compile_aot_eager'))} | {nb} |")
    notes = out / "notes.md"  # hand-written reading of a run (conclusions, CUDA expectation), if present
    if notes.exists():
        L.append("")
        L.append(notes.read_text(encoding="utf-8").rstrip())
    (out / "report.md").write_text("\n".join(L) + "\n", encoding="utf-8")


BOILERPLATE = ("This higher order operator doesn't work", "Higher Order Operator:", "Hint:", "Developer debug",
               "For more details", "from user code", "Set TORCHDYNAMO_VERBOSE", "backend=")


def key_lines(lines, n=2):
    """The informative lines of an error: the reason and its explanation, without the boilerplate."""
    out = []
    for l in lines:
        l = l.strip()
        if any(l.startswith(b) for b in BOILERPLATE):
            continue
        if "got " in l and "FakeTensor" in l:
            l = "got " + l.split("got ", 1)[1]
        l = re.sub(r"Found in <bound method HigherOrderOperator.name of <[^>]*>>", "", l).strip()
        out.append(l[:300])
    return out[:n]


def tot_w(c):
    return sum(c["launches_per_function"].get("call", {}).values())


# ----------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the gather case only (all four forms), fewer repeats, about 1 minute")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cases", default="", help="comma-separated subset")
    ap.add_argument("--no-limits", action="store_true")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--reuse-kernels", action="store_true", help="let forms share compiled kernels within the run "
                    "(by default each form gets a fresh kernel cache, so its cold time includes all its C++ builds)")
    ap.add_argument("--cache-dir", default=None, help="inductor cache dir to reuse (default: a fresh one, so the "
                    "first compile pays inductor's one-off CPU ISA probes; kernels are never shared between runs)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        data = json.loads((out / "results.json").read_text())
        write_report(data, out)
        return 0

    _env_before_torch(args.threads, args.cache_dir)
    t_start = time.perf_counter()
    import torch
    import torch._dynamo
    from torch import nn

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    torch.set_num_threads(args.threads)
    quick = args.quick
    bench = Bench(torch, device, steady_s=0.15 if quick else 0.3, min_reps=10 if quick else 25, max_reps=400)
    bench.reuse_kernels = args.reuse_kernels
    cap = install_capture(torch)

    # warm-up compile of an unrelated function: inductor's imports and first C++ build are not charged to case 1
    t_import = time.perf_counter() - t_start
    w = torch.compile(lambda a: (a.sin() + 1).sum(), backend="inductor")
    w(torch.randn(8, device=device))
    torch._dynamo.reset()
    t_warm = time.perf_counter() - t_start - t_import

    cases = build_cases(torch, nn, device, quick)
    if args.cases:
        keep = set(args.cases.split(","))
        cases = [c for c in cases if c["name"] in keep]
    data = {"meta": {"torch": torch.__version__, "device": device, "threads": args.threads, "quick": quick,
                     "cpus": os.cpu_count(), "python": sys.version.split()[0], "machine": platform.machine(),
                     "loadavg_start": os.getloadavg()[0], "min_reps": bench.min_reps,
                     "import_s": t_import, "warmup_compile_s": t_warm,
                     "gpu": torch.cuda.get_device_name() if device == "cuda" else None},
            "cases": [], "limits": []}
    code_dir = out / "output_code"
    code_dir.mkdir(exist_ok=True)
    for old in code_dir.glob("*.py.txt"):
        old.unlink()
    for case in cases:
        t0 = time.perf_counter()
        print(f"[{time.perf_counter() - t_start:6.1f}s] {case['name']}", flush=True)
        refs = eager_refs(torch, case, device)
        rec = {k: case[k] for k in ("name", "note", "forms")}
        rec["eager"] = eager_latency(torch, bench, case, quick)
        rec["aot_eager"], rec["inductor"] = {}, {}
        for mode in ("eval", "train"):
            rec["aot_eager"][mode] = run_case(torch, nn, bench, cap, case, refs, "aot_eager", mode, timing=False)
            ind = run_case(torch, nn, bench, cap, case, refs, "inductor", mode)
            for form, r in ind.items():
                texts = r.pop("_code_text", [])
                if form == "cond" or (form != "if" and case["name"] in ("router_cheap", "gather")):
                    for gi, text in enumerate(texts):  # .txt: generated code, not part of the project's sources
                        (code_dir / f"{case['name']}__{form}__{mode}__{gi}.py.txt").write_text(text, encoding="utf-8")
            rec["inductor"][mode] = ind
            if device == "cuda":
                rec.setdefault("inductor_cudagraphs", {})[mode] = {
                    f: {k: v for k, v in r.items() if k != "_code_text"}
                    for f, r in run_case(torch, nn, bench, cap, case, refs, "inductor", mode, cudagraphs=True).items()}
        rec["seconds"] = time.perf_counter() - t0
        data["cases"].append(rec)
        (out / "results.json").write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    if not args.no_limits:
        print(f"[{time.perf_counter() - t_start:6.1f}s] torch.cond limits", flush=True)
        data["limits"] = run_limits(torch, nn, device, cap)
    data["meta"]["total_s"] = time.perf_counter() - t_start
    data["meta"]["loadavg_end"] = os.getloadavg()[0]
    (out / "results.json").write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    write_report(data, out)
    print(f"[{time.perf_counter() - t_start:6.1f}s] done -> {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
