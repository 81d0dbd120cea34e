"""Eager cost of GM1xx's "short form" (issue 24): the `if` replaced by `torch.where` in eager too.

Every fixture whose fix was the short form (tests/fixtures/GM101, GM102, GM104; the
`fix: torch.where` titles before issue 24) is timed here in eager mode, original against short
form, on CPU, one intra-op thread, for both branch outcomes (three for the `elif` chain) and two
sizes: "small" (32 x 128) and "hidden" (4 x 256 x 768, a transformer layer's hidden states).
Each figure is the median of 15 runs (`--repeats`) of 100 calls (10 for "hidden"), the two forms
alternating run by run. `short / original` above 1.0: the short form is slower in eager.

    python perf/eager_short_form.py            # 10-30 s on the shared 2-core box
    python perf/eager_short_form.py --quick    # small size only, 3 repeats

Only torch is needed. perf/README.md holds a run's table; README.md ("Eager verbatim") and the
rule that picks the form (`EAGER_VERBATIM` in graphmend_lint/fixes/where/compiled.py) cite it.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

SIZES = {"small": (32, 128), "hidden": (4, 256, 768)}


def _scaled(shape, taken: bool, big: float = 2.0):
    """A float32 tensor in (-1, 1) (the test is False), or with one element at `big` (True)."""
    g = torch.Generator().manual_seed(0)
    h = torch.rand(shape, generator=g) * 1.8 - 0.9
    if taken:
        h.view(-1)[0] = big
    return h


# each case: (name, original, short form, inputs(shape, outcome) -> args, outcomes, grad mode)
def _assign_both(h):
    if h.sum() > 0:
        y = h * 2
    else:
        y = h - 1
    return y


def _assign_both_w(h):
    return torch.where(h.sum() > 0, h * 2, h - 1)


def _one_sided(h):
    if h.abs().amax() > 1.5:
        h = torch.clamp(h, min=-1.5, max=1.5)
    return h


def _one_sided_w(h):
    return torch.where(h.abs().amax() > 1.5, torch.clamp(h, min=-1.5, max=1.5), h)


def _sigmoid_or_double(h, c):
    if c.sum() > 0:
        h = torch.sigmoid(h)
    else:
        h = h * 2
    return h


def _sigmoid_or_double_w(h, c):
    return torch.where(c.sum() > 0, torch.sigmoid(h), h * 2)


def _return_both(h):
    if (h > 0).any():
        return F.gelu(h), torch.tanh(h)
    else:
        return h, h * 0.5


def _return_both_w(h):
    return torch.where((h > 0).any(), F.gelu(h), h), torch.where((h > 0).any(), torch.tanh(h), h * 0.5)


def _fp16_clamp(h):
    if h.dtype == torch.float16 and (torch.isinf(h).any() or torch.isnan(h).any()):
        clamp_value = torch.finfo(h.dtype).max - 1000
        h = torch.clamp(h, min=-clamp_value, max=clamp_value)
    return h


def _fp16_clamp_w(h):
    if h.dtype == torch.float16:
        clamp_value = torch.finfo(h.dtype).max - 1000
        h = torch.where(torch.logical_or(torch.isinf(h).any(), torch.isnan(h).any()),
                        torch.clamp(h, min=-clamp_value, max=clamp_value), h)
    return h


def _logical(h, x):
    if not (x > 0).all() and (h.mean() > 0 or torch.isnan(h).any()):
        h = torch.nan_to_num(h, nan=0.0) * 0.5
    return h


def _logical_w(h, x):
    return torch.where(torch.logical_and(torch.logical_not((x > 0).all()),
                                         torch.logical_or(h.mean() > 0, torch.isnan(h).any())),
                       torch.nan_to_num(h, nan=0.0) * 0.5, h)


def _elif(h, m):
    if m > 0.5:
        out = torch.tanh(h)
    elif m < -0.5:
        out = torch.sigmoid(h) * 2.0
    else:
        out = h
    return out


def _elif_w(h, m):
    return torch.where(m > 0.5, torch.tanh(h), torch.where(m < -0.5, torch.sigmoid(h) * 2.0, h))


def _sqrt(h):
    if h.min() >= 0:
        h = torch.sqrt(h)
    return h


def _sqrt_w(h):
    return torch.where(h.min() >= 0, torch.sqrt(h), h)


def _sqrt_dw(h):
    if h.min() > 0:
        h = torch.sqrt(h)
    return h


def _sqrt_dw_w(h):
    return torch.where(h.min() > 0, torch.sqrt(torch.where(h.min() > 0, h, 1.0)), h)


def _ifexp(h, x):
    return h * 2 if (x.mean() > 0) else -h


def _ifexp_w(h, x):
    return torch.where(x.mean() > 0, h * 2, -h)


def _ifexp_log(h):
    return torch.log(h) if h.amin() > 0 else h


def _ifexp_log_w(h):
    return torch.where(h.amin() > 0, torch.log(torch.where(h.amin() > 0, h, 1.0)), h)


def _names(a, b, c):
    return a if c.sum() > 0 else b


def _names_w(a, b, c):
    return torch.where(c.sum() > 0, a, b)


def _in(shape, outcome):
    return (_scaled(shape, False) + (1.0 if outcome == "True" else -1.0),)


def _in_big(shape, outcome):
    return (_scaled(shape, outcome == "True"),)


def _in_h_c(shape, outcome):
    return _scaled(shape, False), torch.full((4,), 1.0 if outcome == "True" else -1.0)


def _in_any_pos(shape, outcome):
    h = _scaled(shape, False)
    return (h.abs() if outcome == "True" else -h.abs(),)


def _in_fp16(shape, outcome):
    h = _scaled(shape, False).half()
    if outcome == "True":
        h.view(-1)[0] = float("inf")
    return (h,)


def _in_logical(shape, outcome):
    h = _scaled(shape, False).abs() + 0.1
    return h, torch.full((4,), -1.0 if outcome == "True" else 1.0)


def _in_elif(shape, outcome):
    return _scaled(shape, False), torch.tensor({"if": 1.0, "elif": -1.0, "else": 0.0}[outcome])


def _in_nonneg(shape, outcome):
    h = _scaled(shape, False).abs() + 0.1
    if outcome == "False":
        h.view(-1)[0] = -1.0
    return (h,)


def _in_ifexp(shape, outcome):
    return _scaled(shape, False), torch.full((4,), 1.0 if outcome == "True" else -1.0)


def _in_names(shape, outcome):
    return _scaled(shape, False), _scaled(shape, True), torch.full((4,), 1.0 if outcome == "True" else -1.0)


TF = ("True", "False")
CASES = [
    # fixture, original, short form, inputs, outcomes, gradients (input requires grad)
    ("GM101/invalid_assign_both_branches", _assign_both, _assign_both_w, _in, TF, False),
    ("GM101/invalid_one_sided_update", _one_sided, _one_sided_w, _in_big, TF, False),
    ("GM101/invalid_shape_printed_after", _sigmoid_or_double, _sigmoid_or_double_w, _in_h_c, TF, False),
    ("GM101/invalid_return_both_branches", _return_both, _return_both_w, _in_any_pos, TF, False),
    ("GM101/invalid_fp16_overflow_clamp", _fp16_clamp, _fp16_clamp_w, _in_fp16, TF, False),
    ("GM101/invalid_logical_ops", _logical, _logical_w, _in_logical, TF, False),
    ("GM101/invalid_elif_chain", _elif, _elif_w, _in_elif, ("if", "elif", "else"), False),
    ("GM101/invalid_sqrt_under_no_grad", _sqrt, _sqrt_w, _in_nonneg, TF, False),
    ("GM101/invalid_sqrt_under_autograd", _sqrt_dw, _sqrt_dw_w, _in_nonneg, TF, True),
    ("GM102/invalid_ifexp_safe", _ifexp, _ifexp_w, _in_ifexp, TF, False),
    ("GM102/invalid_ifexp_log_autograd", _ifexp_log, _ifexp_log_w, _in_nonneg, TF, True),
    ("GM102/invalid_ifexp_no_grad_import", _ifexp_log, _ifexp_log_w, _in_nonneg, TF, False),
    # not a fixture: both branch values are names, so the short form adds only the torch.where
    ("(names only) a if c.sum() > 0 else b", _names, _names_w, _in_names, TF, False),
]


def _time(fns, args, n: int, repeats: int) -> list[float]:
    """Median microseconds per call of each of `fns` over `repeats` runs of `n` calls; the runs of
    the functions alternate, so drift in machine load hits them alike."""
    for fn in fns:
        for _ in range(max(3, n // 10)):
            fn(*args)
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, runs):
            t0 = time.perf_counter()
            for _ in range(n):
                fn(*args)
            out.append((time.perf_counter() - t0) / n * 1e6)
    return [statistics.median(r) for r in runs]


def measure(sizes, repeats: int) -> list[dict]:
    rows = []
    for name, orig, short, inputs, outcomes, grad in CASES:
        for size in sizes:
            shape = SIZES[size]
            n = 100 if size == "small" else 10
            for outcome in outcomes:
                args = inputs(shape, outcome)
                if grad:
                    args = tuple(a.requires_grad_() if i == 0 else a for i, a in enumerate(args))
                with torch.set_grad_enabled(grad):
                    a, b = orig(*args), short(*args)
                    same = all(torch.equal(p, q) for p, q in zip(a if isinstance(a, tuple) else (a,),
                                                                  b if isinstance(b, tuple) else (b,)))
                    t_orig, t_short = _time((orig, short), args, n, repeats)
                rows.append({"case": name, "size": size, "taken": outcome, "orig_us": t_orig,
                             "short_us": t_short, "ratio": t_short / t_orig, "equal": same})
    return rows


def table(rows: list[dict]) -> str:
    out = ["| case | size | test | original (us) | short form (us) | short / original |",
           "|---|---|---|---:|---:|---:|"]
    for r in rows:
        flag = "" if r["equal"] else " (outputs differ!)"
        out.append(f"| {r['case']} | {r['size']} | {r['taken']} | {r['orig_us']:.1f} | {r['short_us']:.1f} "
                   f"| {r['ratio']:.2f}{flag} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small size only, 3 repeats")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    sizes = ["small"] if a.quick else list(SIZES)
    rows = measure(sizes, 3 if a.quick else a.repeats)
    print(f"torch {torch.__version__}, CPU, {a.threads} thread(s), median of {3 if a.quick else a.repeats} runs")
    print(table(rows))
    slower = [r for r in rows if r["ratio"] > 1.0]
    print(f"\nshort form slower than the original in {len(slower)} of {len(rows)} rows")


if __name__ == "__main__":
    main()
