"""results.json rows, report.md and PNG charts for perf/run.py."""
import math
import os
import re
import statistics

PAPER = ("GraphMend paper (arXiv 2509.16248, CGO 2027; torch 2.12, transformers 4.52.4, RTX 3090/A40/H100, "
         "mode=\"reduce-overhead\", large batches): 107 of 147 breaks removed (73%) in 27 Hugging Face models, "
         "21 fully fixed; cold start up to 26x faster, about 5x on average; steady state up to 1.39x "
         "(their artifact re-derives 1.00-1.03x).")

SCALARS = [  # (metric, unit)
    ("cold_s", "s"), ("steady_median_s", "s"), ("steady_mean_s", "s"), ("flip_s", "s"), ("cold_cpu_s", "s"),
    ("steady_cpu_median_s", "s"), ("flip_cpu_s", "s"), ("eager_cpu_median_s", "s"),
    ("flip_warm_median_s", "s"), ("eager_median_s", "s"), ("import_s", "s"), ("wall_s", "s"),
    ("loadavg_start", "load"), ("loadavg_end", "load"), ("graphs_after_cold", "graphs"), ("graph_calls_per_forward", "calls"), ("recompiles_steady", "graphs"),
    ("recompiles_flip", "graphs"), ("unique_graphs_total", "graphs"), ("changed_lines", "lines"),
]


ROUND_METRICS = ("cold_s", "cold_cpu_s", "steady_median_s", "steady_cpu_median_s", "steady_mean_s", "flip_s",
                 "flip_cpu_s", "flip_warm_median_s", "eager_median_s", "eager_cpu_median_s")
ROUND_KEEP = ROUND_METRICS + ("round", "wall_s", "loadavg_start", "loadavg_end", "graphs_after_cold",
                              "recompiles_flip", "error", "reused_from")
COMPILE_KEYS = ("frames", "entire_frame_compile_time_s", "backend_compile_time_s", "inductor_compile_time_s",
                "code_gen_time_s", "guard_count", "graph_op_count")
COMPILE_FUNCS = ("bytecode_tracing", "build_guards", "create_aot_dispatcher_function", "compile_fx_inner",
                 "GraphLowering.codegen", "async_compile.wait")


def compile_summary(snap):
    """The few compile-time figures the report shows, from a worker's compile_cold/compile_flip snapshot."""
    if not snap:
        return None
    m, fns = snap.get("metrics") or {}, snap.get("functions") or {}
    out = {k: m[k] for k in COMPILE_KEYS if k in m}
    out.update({f"fn:{k}": fns[k] for k in COMPILE_FUNCS if k in fns})
    return out


def combine_rounds(results):
    """One variant's results of N rounds -> round 0's full result (breaks, outputs, reasons) with the timing
    metrics replaced by their median over the rounds that ran, and `rounds`: each round's timings."""
    if not results:
        return {"error": "not run"}
    if len(results) == 1:
        return results[0]
    ok = [r for r in results if "error" not in r]
    base = dict(results[0] if "error" not in results[0] or not ok else ok[0])
    base["rounds"] = [dict({k: r[k] for k in ROUND_KEEP if k in r},
                           compile_cold=compile_summary(r.get("compile_cold")),
                           compile_flip=compile_summary(r.get("compile_flip"))) for r in results]
    for k in ROUND_METRICS:
        vals = [r[k] for r in ok if r.get(k) is not None]
        if vals:
            base[k] = statistics.median(vals)
    cc = [compile_summary(r.get("compile_cold")) for r in ok if r.get("compile_cold")]
    if cc:
        base["compile_cold_median"] = {k: statistics.median([c[k] for c in cc if k in c])
                                       for k in sorted({k for c in cc for k in c})}
    base["rounds_ok"] = len(ok)
    return base


def spread(res, metric):
    """(median, min, max, n) of a metric over the rounds of one variant, or None."""
    vals = [r[metric] for r in res.get("rounds") or [] if r.get(metric) is not None and "error" not in r]
    if not vals:
        return None
    return statistics.median(vals), min(vals), max(vals), len(vals)


def paired_ratios(u, f, metric):
    """unfixed / fixed per round (runs of the same round ran back to back, so they share the machine's state)."""
    ur = {r.get("round"): r.get(metric) for r in u.get("rounds") or [] if "error" not in r}
    fr = {r.get("round"): r.get(metric) for r in f.get("rounds") or [] if "error" not in r}
    return [ur[k] / fr[k] for k in sorted(set(ur) & set(fr), key=str) if ur[k] and fr[k]]


def noise_cell(ratios):
    """'1.05x [0.97-1.12] within noise' - median of the paired ratios, their min-max band, and the verdict."""
    if len(ratios) < 2:
        return fmt(ratios[0], "x") + " (1 round)" if ratios else "-"
    med, lo, hi = statistics.median(ratios), min(ratios), max(ratios)
    verdict = "within noise" if lo <= 1.0 <= hi else ("**faster**" if lo > 1.0 else "**slower**")
    return f"{med:.2f}x [{lo:.2f}-{hi:.2f}] {verdict}"


def spread_cell(sp):
    if not sp:
        return "-"
    med, lo, hi, n = sp
    rel = f" ±{50 * (hi - lo) / med:.0f}%" if med else ""
    return f"{fmt(med)} [{fmt(lo)}-{fmt(hi)}]{rel}"


def table_noise(cases, v, mode, clock="wall"):
    """Per case: each variant's median and min-max over the rounds, and the paired ratio with its band."""
    cold, steady, flip, _ = LAT[clock]
    what = "wall clock" if clock == "wall" else "CPU time"
    out = [f"## Rounds ({what}, {mode}): unfixed vs {v}, median [min-max] over the rounds", "",
           "Ratio = unfixed / fixed per round (the two ran back to back, order alternating), median and "
           "[min-max] over the rounds; **within noise** when that band contains 1.0 (no difference this run can "
           "resolve), **faster**/**slower** when the whole band is above/below 1.0. ±% = half the min-max range "
           "of a variant's medians relative to its median: the smallest change the run could see.", "",
           "| case | rounds | cold unfixed | cold fixed | cold ratio | steady unfixed | steady fixed | steady ratio | "
           "flip unfixed | flip fixed | flip ratio |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        u, f = pair(c, v, mode)
        if not u.get("rounds") and not f.get("rounds"):
            continue
        n = min(len(u.get("rounds") or []), len(f.get("rounds") or []))
        cells = []
        for metric in (cold, steady, flip):
            cells += [spread_cell(spread(u, metric)), spread_cell(spread(f, metric)),
                      noise_cell(paired_ratios(u, f, metric))]
        out.append(f"| {c['case']} | {n} | " + " | ".join(cells) + " |")
    return out


def _cs(x, key):
    v = (x or {}).get(key)
    if isinstance(v, float) and v.is_integer() and not key.endswith("_s") and not key.startswith("fn:"):
        v = int(v)  # a median of counts
    return "-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)


def table_compile(cases, variants, mode):
    """Where cold start goes: Dynamo frame compiles, tracing, guards, backend (AOT + inductor), codegen."""
    out = ["## Where compile time goes (first call; median over rounds when there are several)", "",
           "Seconds, summed over the frames compiled by the first call, from torch._dynamo.utils "
           "(CompilationMetrics: entire frame = Dynamo tracing + guards + backend; backend = AOTAutograd + "
           "inductor; inductor and codegen are parts of backend; dynamo_timed functions: bytecode tracing, "
           "build_guards). flip = compile added by the first call on the other input.", "",
           "| case | variant | frames | entire frame | bytecode tracing | build guards | backend | inductor | "
           "codegen | guards | graph ops | flip: frames | flip: entire frame |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    any_row = False
    for c in cases:
        for v in ["unfixed"] + list(variants):
            r = c["variants"].get(f"{v}@{mode}", {})
            cc = r.get("compile_cold_median") or compile_summary(r.get("compile_cold"))
            if not cc:
                continue
            any_row = True
            cf = compile_summary(r.get("compile_flip")) or {}
            out.append(f"| {c['case']} | {v} | {_cs(cc, 'frames')} | {_cs(cc, 'entire_frame_compile_time_s')} | "
                       f"{_cs(cc, 'fn:bytecode_tracing')} | {_cs(cc, 'fn:build_guards')} | "
                       f"{_cs(cc, 'backend_compile_time_s')} | {_cs(cc, 'inductor_compile_time_s')} | "
                       f"{_cs(cc, 'code_gen_time_s')} | {_cs(cc, 'guard_count')} | {_cs(cc, 'graph_op_count')} | "
                       f"{_cs(cf, 'frames')} | {_cs(cf, 'entire_frame_compile_time_s')} |")
    return out if any_row else []


def breaks(res):
    """Graph breaks seen on any non-raising input: max of explain() and the counting backend (graphs - 1)."""
    ex = res.get("explain") or {}
    if not ex:
        return None
    return max(max(e["breaks"], e["counting_breaks"]) for e in ex.values())


def graphs(res):
    ex = res.get("explain") or {}
    return max((max(e["graphs"], e["counting_graphs"]) for e in ex.values()), default=None)


def equal_to_unfixed(res):
    cmp_ = res.get("vs_unfixed")
    if not cmp_:
        return None
    eager = [v for k, v in cmp_.items() if k.startswith("eager")]
    if all(v["equal"] for v in eager):
        return "equal"
    if all(v["allclose"] for v in eager):
        return "allclose"
    return "DIFFERENT"


def rows_for(case, kind, variant, mode, res, meta):
    base = {"case": case, "kind": kind, "variant": variant, "mode": mode, "torch": meta["torch"],
            "transformers": meta["transformers"], "device": meta["device"], "backend": meta["backend"],
            "machine": meta["machine"]}
    rows = []

    def add(metric, value, unit=""):
        rows.append(dict(base, metric=metric, value=value, unit=unit))
    if "error" in res:
        add("error", res["error"])
        add("wall_s", res.get("wall_s"), "s")
        return rows
    for metric, unit in SCALARS:
        if res.get(metric) is not None:
            add(metric, res[metric], unit)
    add("breaks", breaks(res), "breaks")
    add("graphs", graphs(res), "graphs")
    if res.get("rounds"):
        add("rounds_ok", res.get("rounds_ok"), "rounds")
        for metric in ROUND_METRICS:  # the metric itself is the median over the rounds
            sp = spread(res, metric)
            if sp:
                add(f"{metric}_rounds_min", sp[1], "s")
                add(f"{metric}_rounds_max", sp[2], "s")
    for k, v in (res.get("compile_cold_median") or compile_summary(res.get("compile_cold")) or {}).items():
        add(f"compile_cold:{k}", v, "s" if k.endswith("_s") or k.startswith("fn:") else "")
    for i, e in (res.get("explain") or {}).items():
        add(f"explain_breaks_input{i}", e["breaks"], "breaks")
        add(f"explain_graphs_input{i}", e["graphs"], "graphs")
        add(f"counting_breaks_input{i}", e["counting_breaks"], "breaks")
        add(f"graph_calls_per_forward_input{i}", e["graph_calls_per_forward"], "calls")
        add(f"break_reasons_input{i}", e["reasons"])
    for i, m in (res.get("compiled_matches_eager") or {}).items():
        add(f"compiled_allclose_eager_input{i}", m["allclose"])
    for i, r in (res.get("raises_compiled") or {}).items():
        add(f"raises_compiled_input{i}", r)
    for i, r in (res.get("raises_eager") or {}).items():
        add(f"raises_eager_input{i}", r)
    if variant != "unfixed":
        add("output_vs_unfixed", equal_to_unfixed(res))
    return rows


def progress(variant, mode, res):
    tag = variant + ("" if mode is None else f"@{mode}") + (" (same code as fixed)" if res.get("reused_from") else "")
    if "error" in res:
        return f"{tag}: ERROR {res['error'][:80]}"
    flip = f" flip {res['flip_s'] * 1e3:.0f}ms" if res.get("flip_s") is not None else ""
    return (f"{tag}: breaks {breaks(res)} cold {res['cold_s']:.1f}s steady {res['steady_median_s'] * 1e3:.2f}ms"
            f"{flip} ({res['wall_s']:.0f}s)")


def gmean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, unit="s"):
    if x is None:
        return "-"
    if unit == "s":
        return f"{x:.2f} s" if x >= 1 else f"{x * 1e3:.2f} ms" if x >= 1e-3 else f"{x * 1e6:.0f} us"
    return f"{x:.2f}x"


def ratio(a, b):
    return a / b if a and b else None


def write(out, meta, cases):
    variants = [v for v in meta["variants"] if v != "unfixed"]
    mode = (meta.get("modes") or ["default"])[0]  # the main tables; a reduce-overhead-only run shows that mode
    lines = [f"# graphmend-lint perf report ({'quick' if meta['quick'] else 'full'} run)", ""]
    for m in meta.get("merged", []):
        lines += [f"Cases {', '.join(m['cases'])} were rerun on {m['date_utc']} and merged into this report.", ""]
    if not meta.get("complete", True):
        lines += ["**Partial report: the run is still going or was stopped; only finished cases are shown.**", ""]
    lines += [f"- torch {meta['torch']}, transformers {meta['transformers']}, device `{meta['device']}`, backend "
              f"`{meta['backend']}`, modes {meta['modes']}", f"- machine: {meta['machine']}" + (f", GPU {meta['gpu']}" if meta.get("gpu") else "") +
              f", Python {meta['python']}",
              f"- date {meta['date_utc']}, commit {meta.get('commit') or 'unknown'}, {meta['steady_calls']} "
              f"steady-state calls, {meta.get('rounds', 1)} round(s), torch.compile dynamic="
              f"{meta.get('dynamic', 'auto')}, total wall {meta.get('total_wall_s', 0):.0f} s"]
    cut = [f"{c['case']} ({c['rounds_cut']})" for c in cases if c.get("rounds_cut")]
    if cut:
        lines.append(f"- **rounds cut short by the budget: {', '.join(cut)}**")
    if meta.get("skipped_for_budget"):
        lines.append(f"- **budget of {meta.get('budget_s'):.0f} s reached: not run: "
                     f"{', '.join(meta['skipped_for_budget'])}**")
    loads = [r.get(k) for c in cases for r in c["variants"].values() for k in ("loadavg_start", "loadavg_end")
             if r.get(k) is not None]
    if loads:
        m = re.search(r"(\d+) cpus", meta.get("machine", ""))  # the machine that ran it, not the one rewriting
        ncpu = int(m.group(1)) if m else os.cpu_count() or 1
        lines.append(f"- 1-minute load average during the workers: {min(loads):.1f} - {max(loads):.1f} on {ncpu} cpus"
                     + (" - **the machine was shared and oversubscribed: wall-clock times are noisy; the CPU-time "
                        "table is the more robust comparison**" if max(loads) > ncpu + 0.5 else ""))
    if meta["fixer_missing"]:
        lines.append("- **graphmend_lint is not installed: every fixed variant is an unmodified copy (fixed == unfixed).**")
    for v in variants:
        st = meta["fixer_status"][v]
        lines.append(f"- fixer for `{v}`: {st}" + ("" if st == "ok" else
                     f" - output tail: `{meta['fixer_output'][v].strip().splitlines()[-1][:200] if meta['fixer_output'][v].strip() else ''}`"))
    nochange = [c["case"] for c in cases if all(r.get("changed_lines", 0) == 0 for k, r in c["variants"].items()
                                                 if not k.startswith("unfixed"))]
    if nochange:
        lines.append(f"- the fixer changed nothing in: {', '.join(nochange)} (fixed == unfixed there)")
    lines += ["", "Method: each case x variant runs in a fresh process with an empty inductor cache "
              "(TORCHINDUCTOR_CACHE_DIR=new temp dir, TORCHINDUCTOR_FX_GRAPH_CACHE=0, "
              f"TORCHINDUCTOR_COMPILE_THREADS={meta.get('compile_threads') or 1}; on CPU OMP_NUM_THREADS={meta.get('cpu_threads') or 'default'}). "
              "cold = first call incl. compile; steady = median of the next calls on the same input; flip = first "
              "call on an input that takes the other branch after warm-up; breaks = max over inputs of "
              "`torch._dynamo.explain` and a counting backend (graphs - 1); calls/fwd = compiled graphs executed "
              "per forward (a graph compiled once but run in every layer counts each time). The fixed variants are "
              "produced by running `graphmend-lint check --fix --exit-zero` on copies of the sources "
              "(diffs in `diffs/`).", ""]
    multi = any(r.get("rounds") for c in cases for r in c["variants"].values())
    for v in variants:
        lines += table_breaks(cases, v, mode), ""
        lines += table_latency(cases, v, mode, "wall"), ""
        if multi:
            lines += table_noise(cases, v, mode, "wall"), ""
        if meta["device"] == "cpu":
            lines += table_latency(cases, v, mode, "cpu"), ""
            if multi:
                lines += table_noise(cases, v, mode, "cpu"), ""
    lines += table_compile(cases, variants, mode), ""
    lines += table_flip(cases, variants, mode), ""
    for m in meta["modes"]:
        if m != mode:
            for v in variants:
                lines += [f"### mode={m}", ""] + table_latency(cases, v, m) + [""]
                if multi:
                    lines += table_noise(cases, v, m) + [""]
    lines += ["## Paper figures for comparison", "", PAPER, ""]
    lines += remaining(cases, variants, mode)
    lines += remaining(cases, ["unfixed"], mode, "## Break sites before the fix (explain() reasons, file:line)")
    lines += findings_table(cases)
    lines += ["## Charts", "", "![breaks](breaks.png)", "", "![ratios, wall clock](ratios.png)", ""]
    if meta["device"] == "cpu":
        lines += ["![ratios, CPU time](ratios_cpu.png)", ""]
    open(os.path.join(out, "report.md"), "w").write("\n".join(x for x in flatten(lines)) + "\n")
    charts(out, cases, variants, mode)


def flatten(lines):
    for x in lines:
        if isinstance(x, list):
            yield from flatten(x)
        else:
            yield x


def pair(c, v, mode):
    return c["variants"].get(f"unfixed@{mode}", {}), c["variants"].get(f"{v}@{mode}", {})


def table_breaks(cases, v, mode):
    out = [f"## Graph breaks: unfixed vs {v}", "",
           "| case | kind | breaks unfixed | breaks fixed | removed | graphs | calls/fwd | recompiles on flip | "
           "changed lines | output vs unfixed | raises (compiled, bad input) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    tot_b = tot_a = 0
    full = with_breaks = 0
    for c in cases:
        u, f = pair(c, v, mode)
        bu, bf = breaks(u), breaks(f)
        if bu is not None and bf is not None:
            tot_b += bu
            tot_a += bf
            with_breaks += bu > 0
            full += bu > 0 and bf == 0
        raises = "; ".join(f"{r or 'no raise'} -> {s or 'no raise'}" for r, s in
                           zip((u.get("raises_compiled") or {}).values(), (f.get("raises_compiled") or {}).values()))
        kind = c["kind"] + (", train" if u.get("train") or f.get("train") else "")
        out.append(f"| {c['case']} | {kind} | {bu if bu is not None else 'ERR'} | "
                   f"{bf if bf is not None else 'ERR'} | {(bu - bf) if None not in (bu, bf) else '-'} | "
                   f"{graphs(u)} -> {graphs(f)} | {u.get('graph_calls_per_forward')} -> "
                   f"{f.get('graph_calls_per_forward')} | {u.get('recompiles_flip', '-')} -> "
                   f"{f.get('recompiles_flip', '-')} | {f.get('changed_lines', '-')} | {equal_to_unfixed(f)} | "
                   f"{raises or '-'} |")
    pct = f" ({100 * (tot_b - tot_a) / tot_b:.0f}%)" if tot_b else ""
    out += ["", f"**Total: {tot_b - tot_a} of {tot_b} breaks removed{pct}; {full} of {with_breaks} cases with "
            f"breaks fully fixed** (paper: 107 of 147, 73%; 21 of 27 models)."]
    return out


LAT = {"wall": ("cold_s", "steady_median_s", "flip_s", "eager_median_s"),
       "cpu": ("cold_cpu_s", "steady_cpu_median_s", "flip_cpu_s", "eager_cpu_median_s")}


def table_latency(cases, v, mode, clock="wall"):
    cold, steady, flip, eager = LAT[clock]
    what = "wall clock" if clock == "wall" else "CPU time of the worker process incl. compiler subprocesses"
    out = [f"## Latency, {what} ({mode}): unfixed vs {v} (ratio = unfixed / fixed, > 1 means the fix is faster)",
           "",
           "| case | cold unfixed | cold fixed | cold ratio | steady unfixed | steady fixed | steady ratio | "
           "flip unfixed | flip fixed | flip ratio | eager (unfixed) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    rs = {"cold": [], "steady": [], "flip": []}
    rs_changed = {"cold": [], "steady": [], "flip": []}
    for c in cases:
        u, f = pair(c, v, mode)
        r = {"cold": ratio(u.get(cold), f.get(cold)), "steady": ratio(u.get(steady), f.get(steady)),
             "flip": ratio(u.get(flip), f.get(flip))}
        for k in rs:
            rs[k].append(r[k])
            if None not in (breaks(u), breaks(f)) and breaks(f) < breaks(u):
                rs_changed[k].append(r[k])
        out.append(f"| {c['case']} | {fmt(u.get(cold))} | {fmt(f.get(cold))} | {fmt(r['cold'], 'x')} | "
                   f"{fmt(u.get(steady))} | {fmt(f.get(steady))} | {fmt(r['steady'], 'x')} | "
                   f"{fmt(u.get(flip))} | {fmt(f.get(flip))} | {fmt(r['flip'], 'x')} | {fmt(u.get(eager))} |")
    out.append(f"| **geomean, all cases** | | | {fmt(gmean(rs['cold']), 'x')} | | | {fmt(gmean(rs['steady']), 'x')} "
               f"| | | {fmt(gmean(rs['flip']), 'x')} | |")
    out.append(f"| **geomean, cases with fewer breaks** | | | {fmt(gmean(rs_changed['cold']), 'x')} | | | "
               f"{fmt(gmean(rs_changed['steady']), 'x')} | | | {fmt(gmean(rs_changed['flip']), 'x')} | |")
    best = {k: max([x for x in rs[k] if x], default=None) for k in rs}
    out += ["", f"Best ratios: cold {fmt(best['cold'], 'x')}, steady {fmt(best['steady'], 'x')}, flip "
            f"{fmt(best['flip'], 'x')} (paper: cold up to 26x / ~5x avg, steady up to 1.39x; no flip figure)."]
    return out


def recompile_brief(msg):
    """'Recompiling function forward in /x/transformers/models/phi3/modeling_phi3.py:1271 / triggered by the
    following guard failure(s): / - 0/0: tensor 'input_ids' size mismatch ...' -> 'forward (phi3/modeling_phi3.py:1271):
    tensor 'input_ids' size mismatch ...'."""
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip()]
    head = lines[0] if lines else msg
    if head.startswith("Recompiling function ") and " in " in head:
        fn, where = head[len("Recompiling function "):].split(" in ", 1)
        head = f"{fn} ({'/'.join(where.split('/')[-2:])})"
    guard = next((ln.lstrip("- ") for ln in lines[1:] if ln.startswith("-")), "")
    if guard[:1].isdigit() and ": " in guard:
        guard = guard.split(": ", 1)[1]  # drop the '0/0' frame/compile id
    guard = " ".join(guard.split("  #")[0].split())  # drop the guard's source comment
    return (head + (": " + guard[:120] if guard else "")).replace("|", "/")


def table_flip(cases, variants, mode):
    """Recompiles on the flip input and Dynamo's reasons for them (shape change vs guard on a value)."""
    out = ["## Recompiles on the flip input (Dynamo's recompile reasons)", ""]
    for c in cases:
        for v in ["unfixed"] + list(variants):
            r = c["variants"].get(f"{v}@{mode}", {})
            if r.get("recompiles_flip"):
                why = "; ".join(recompile_brief(x) for x in r.get("recompile_reasons_flip") or [])
                out.append(f"- {c['case']} `{v}`: {r['recompiles_flip']} graph(s) compiled on the flip"
                           f" (dynamic={r.get('dynamic', 'auto')}{', marked ' + ','.join(r['marked_dynamic']) if r.get('marked_dynamic') else ''})"
                           f"{': ' + why if why else ''}")
    return out if len(out) > 2 else []


def remaining(cases, variants, mode, title="## Breaks that remain after the fix"):
    out = [title, ""]
    for v in variants:
        seen = []
        for c in cases:
            f = c["variants"].get(f"{v}@{mode}", {})
            for i, e in (f.get("explain") or {}).items():
                for r in e["reasons"]:
                    item = f"- `{v}` {c['case']} (input {i}): {r['where']} `{r['line']}` - {r['reason']}"
                    if item.split(" (input")[0] + r["where"] + r["reason"] not in [s[0] for s in seen]:
                        seen.append((item.split(" (input")[0] + r["where"] + r["reason"], item))
                if e["breaks"] > len(e["reasons"]) or e["counting_breaks"] > e["breaks"]:
                    key = f"{v}{c['case']}uncounted"
                    if key not in [s[0] for s in seen]:
                        seen.append((key, f"- `{v}` {c['case']}: {max(e['breaks'], e['counting_breaks'])} breaks, "
                                          f"{len(e['reasons'])} with a reason from explain() (explain undercounts)"))
            if "error" in f:
                seen.append((c["case"], f"- `{v}` {c['case']}: worker error: {f['error'][:200]}"))
        out += [s[1] for s in seen] or ["- none"]
        out.append("")
    return out


def findings_table(cases):
    out = ["## Lint findings on the unfixed sources (`graphmend-lint check`)", "", "| case | files | findings |",
           "|---|---|---|"]
    for c in cases:
        fnd = ", ".join(f"{k} x{n}" for k, n in sorted(c.get("findings", {}).items())) or "none"
        out.append(f"| {c['case']} | {', '.join(c['files'])} | {fnd} |")
    return out + [""]


def charts(out, cases, variants, mode):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [c["case"] for c in cases]
    x = range(len(names))
    width = 0.8 / (1 + len(variants))
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(names) + 2), 4))
    for j, v in enumerate(["unfixed"] + variants):
        vals = [breaks(c["variants"].get(f"{v}@{mode}", {})) or 0 for c in cases]
        ax.bar([i + j * width for i in x], vals, width, label=v)
    ax.set_xticks([i + width * len(variants) / 2 for i in x])
    ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("graph breaks")
    ax.set_title("Graph breaks before / after graphmend-lint --fix")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "breaks.png"), dpi=110)
    plt.close(fig)

    clocks = ["wall"] + (["cpu"] if any("cold_cpu_s" in r for c in cases for r in c["variants"].values()) else [])
    for clock in clocks:
        cold, steady, flip, _ = LAT[clock]
        fig, axes = plt.subplots(1, 3, figsize=(max(9, 1.2 * len(names) + 4), 4), sharey=False)
        w = 0.8 / max(1, len(variants))
        for ax, (key, metric) in zip(axes, [("cold", cold), ("steady", steady), ("flip", flip)]):
            for j, v in enumerate(variants):
                vals = []
                for c in cases:
                    u, f = pair(c, v, mode)
                    vals.append(ratio(u.get(metric), f.get(metric)) or float("nan"))
                # bars start at 1.0 (no change): up = the fix is faster, down = slower
                ax.bar([i + j * w for i in x], [v_ - 1 for v_ in vals], w, bottom=1.0, label=v)
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_yscale("log")
            ax.set_title(f"{key}: unfixed / fixed ({clock})")
            ax.set_xticks([i + w * (len(variants) - 1) / 2 for i in x])
            ax.set_xticklabels(names, rotation=45, ha="right", fontsize=7)
        axes[0].legend(fontsize=7)
        axes[0].set_ylabel("ratio (log scale; > 1: fix is faster)")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "ratios.png" if clock == "wall" else "ratios_cpu.png"), dpi=110)
        plt.close(fig)


def merge(src, dst):
    """Replace (or add) the cases of run src in run dst (same device/backend), then rewrite dst's report."""
    import json
    import shutil
    a = json.load(open(os.path.join(dst, "results.json")))
    b = json.load(open(os.path.join(src, "results.json")))
    for key in ("device", "backend", "torch", "variants"):
        if a["meta"][key] != b["meta"][key]:
            raise SystemExit(f"cannot merge: {key} differs ({a['meta'][key]} vs {b['meta'][key]})")
    names = {c["case"] for c in b["cases"]}
    order = [c["case"] for c in a["cases"]]
    cases = {c["case"]: c for c in a["cases"]}
    cases.update({c["case"]: c for c in b["cases"]})
    a["cases"] = [cases[n] for n in order] + [cases[n] for n in sorted(names - set(order))]
    a["rows"] = [r for r in a["rows"] if r["case"] not in names] + b["rows"]
    a["meta"].setdefault("merged", []).append({"cases": sorted(names), "date_utc": b["meta"]["date_utc"],
                                               "fixer_status": b["meta"]["fixer_status"]})
    left = [n for n in a["meta"].get("skipped_for_budget") or [] if n not in names]
    a["meta"]["skipped_for_budget"] = left or None
    for sub in ("diffs", "profiles"):
        if not os.path.isdir(os.path.join(src, sub)):
            continue
        os.makedirs(os.path.join(dst, sub), exist_ok=True)
        for name in os.listdir(os.path.join(src, sub)):
            if name.split(".")[0] in names:
                shutil.copy(os.path.join(src, sub, name), os.path.join(dst, sub, name))
    json.dump(a, open(os.path.join(dst, "results.json"), "w"), indent=1, default=str)
    write(dst, a["meta"], a["cases"])


def main(argv=None):
    """python -m perf.report DIR: rebuild report.md and charts from DIR/results.json.
    python -m perf.report --merge SRC DST: put the cases of run SRC into run DST (a rerun of some cases)."""
    import json
    import sys
    argv = argv or sys.argv[1:]
    if argv[0] == "--merge":
        merge(argv[1], argv[2])
        print(f"merged {argv[1]} into {argv[2]}")
        return
    out = argv[0]
    data = json.load(open(os.path.join(out, "results.json")))
    write(out, data["meta"], data["cases"])
    print(f"rewrote {out}/report.md and charts")


if __name__ == "__main__":
    main()
