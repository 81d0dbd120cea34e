"""Which real graph breaks does graphmend-lint predict? Recall and precision against Dynamo.

    python -m perf.coverage                 # the model suite below -> perf/results/predicted_vs_real_breaks/
    python -m perf.coverage hf_bart hf_t5   # some of them (prints only)
    python -m perf.coverage pkg.mod:make    # any importable factory: make() -> (model, [inputs, ...])
    python -m perf.coverage --report        # rebuild report.md from coverage.json

For each model: compile it with the "eager" backend, run every input, and record each graph break
from Dynamo's `graph_breaks` log artifact (file:line, GB id, reason; the same source `TORCH_LOGS=
graph_breaks` prints). Each file holding a break or a traced module class is linted with
`graphmend_lint.engine.check`; a break is "predicted" when one of our findings spans its line.
Recall = predicted breaks / breaks seen. Precision = findings on a line that ran (eager line
coverage of the same inputs) which match a break / all findings on lines that ran.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch._dynamo  # noqa: E402

from graphmend_lint import engine, parallel  # noqa: E402
from graphmend_lint.settings import Settings  # noqa: E402
from graphmend_lint.verify import recorder  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "predicted_vs_real_breaks"
NOTES = OUT / "notes.md"  # hand-written part of the report (appended to the generated one)


@dataclass
class Break(recorder.Break):
    """A break site from the product's recorder (graphmend_lint/verify/recorder.py)."""

    def line_in(self, path: str) -> int | None:
        """The line of the innermost frame in `path` (a break inside copy.py called from a model)."""
        path = os.path.realpath(path)
        for f, line in reversed([*self.stack, (self.file, self.line)]):
            if os.path.realpath(f) == path:
                return line
        return None

    @property
    def where(self) -> str:
        return f"{short(self.file)}:{self.line}"


def short(path: str) -> str:
    for marker in ("site-packages/", "/work/main/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def capture_breaks(run) -> list[Break]:
    """Run `run()` (which calls compiled code) and return the distinct graph breaks it logged."""
    with recorder.Recorder() as rec:
        run()
    return [Break(**asdict(b)) for b in rec.sites()]


def _call(fn, args):
    out = fn(**args) if isinstance(args, dict) else fn(*args)
    return list(out) if hasattr(out, "__next__") else out  # run a generator forward to its end


def compiled_breaks(model, inputs) -> list[Break]:
    """Breaks seen when `model` is compiled (backend "eager": no inductor) and run on every input."""
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="eager")

    def run() -> None:
        with torch.no_grad():
            for args in inputs:
                try:
                    _call(compiled, args)
                except Exception:  # inputs that take a raising path still count their breaks
                    pass

    return capture_breaks(run)


def executed_lines(model, inputs, files: set[str]) -> dict[str, set[int]]:
    """Lines of `files` that run in eager mode on `inputs` (a light sys.settrace line coverage)."""
    hit: dict[str, set[int]] = {f: set() for f in files}

    def local(frame, event, arg):
        if event == "line":
            hit[frame.f_code.co_filename].add(frame.f_lineno)
        return local

    def glob(frame, event, arg):
        if frame.f_code.co_filename in hit:
            hit[frame.f_code.co_filename].add(frame.f_lineno)
            return local
        return None

    sys.settrace(glob)
    try:
        with torch.no_grad():
            for args in inputs:
                try:
                    _call(model, args)
                except Exception:
                    pass
    finally:
        sys.settrace(None)
    return hit


def module_files(model) -> set[str]:
    """Source files of the classes of the model's modules (torch's own nn modules excluded)."""
    import inspect

    files = set()
    for m in model.modules() if isinstance(model, torch.nn.Module) else []:
        try:
            f = inspect.getsourcefile(type(m))
        except TypeError:
            continue
        if f and "/torch/" not in f:
            files.add(os.path.realpath(f))
    return files


def lint(path: str):
    return engine.check(Path(path).read_bytes(), Settings()).findings


def lint_project(paths: list[str]) -> dict[str, list]:
    """The files together, as `graphmend-lint check` does: with the project index (cross-file bases,
    helpers called from other files, guard wrappers). GRAPHMEND_COVERAGE_ALONE=1: each file alone."""
    if os.environ.get("GRAPHMEND_COVERAGE_ALONE") == "1":
        return {f: lint(f) for f in paths}
    outs = parallel.check_files([Path(f) for f in paths], Settings(), jobs=1, use_cache=False)
    return {str(o.path): o.findings for o in outs}


def _hits(b: Break, path: str, finding) -> bool:
    line = b.line_in(path)
    return line is not None and finding.line <= line <= finding.end_line


def match(breaks: list[Break], findings_by_file: dict[str, list]) -> None:
    for b in breaks:
        b.codes = sorted({x.code for f, xs in findings_by_file.items() for x in xs if _hits(b, f, x)})


def analyse(name: str, model, inputs) -> dict:
    t0 = time.perf_counter()
    breaks = compiled_breaks(model, inputs)
    t_compile = time.perf_counter() - t0
    files = module_files(model) | {os.path.realpath(f) for b in breaks for f, _ in [*b.stack, (b.file, b.line)]
                                   if "/torch/" not in f and ("site-packages" in f or "/lib/python3" not in f)}
    findings = lint_project([f for f in sorted(files) if f.endswith(".py") and os.path.exists(f)])
    match(breaks, findings)
    ran = executed_lines(model, inputs, set(findings))
    live = [(f, x) for f, xs in findings.items() for x in xs
            if any(line in ran.get(f, ()) for line in range(x.line, x.end_line + 1))]
    matched = [(f, x) for f, x in live
               if any(_hits(b, f, x) for b in breaks)]
    predicted = [b for b in breaks if b.codes]

    def site(b: Break) -> str:
        for f, line in reversed([*b.stack, (b.file, b.line)]):
            if os.path.realpath(f) in findings:
                return f"{short(f)}:{line}"
        return b.where

    return {
        "model": name,
        "breaks": [asdict(b) | {"site": site(b)} for b in breaks],
        "breaks_seen": len(breaks),
        "breaks_predicted": len(predicted),
        "recall": len(predicted) / len(breaks) if breaks else None,
        "findings_all": sum(len(v) for v in findings.values()),
        "findings_on_executed_lines": len(live),
        "findings_matching_a_break": len(matched),
        "precision": len(matched) / len(live) if live else None,
        "unmatched_findings": [f"{short(f)}:{x.line} {x.code}" for f, x in live if (f, x) not in matched],
        "files": [short(f) for f in findings],
        "seconds": round(time.perf_counter() - t0, 1),
        "compile_seconds": round(t_compile, 1),
    }


# -- why a break was not predicted, or a finding matched no break (transformers 4.44.2 lines) ------
T = "transformers/models/"
EXPLAINED = {
    T + "phi3/modeling_phi3.py:260": (
        "GM101 could predict it (`if seq_len > ...` with `seq_len = torch.max(position_ids) + 1`) but the "
        "local `seq_len` is also a parameter (`seq_len=None`): the tensor facts are flow-insensitive and join "
        "the assigned tensor with the unknown parameter, so the test is `unknown`. Fix belongs in "
        "analysis/tensors.py (a parameter overwritten by the first top-level statement that mentions it)."),
    T + "wav2vec2/modeling_wav2vec2.py:2226": (
        "Not a separate site: the `raise ValueError` of `if labels.max() >= vocab_size:` (GM301, line 2225) "
        "running on the out-of-range-label input; Dynamo logs the exception as GB0088."),
    T + "longformer/modeling_longformer.py:1004": (
        "GM906 covers `narrow` with a 0-d tensor offset, but here the tensor arrives through a parameter "
        "(`max_num_global_attn_indices`, returned in a tuple by `_get_global_attn_indices`): needs "
        "inter-procedural facts, which the per-function analysis does not have."),
    T + "longformer/modeling_longformer.py:1056": (
        "`assert list(t.size()) == [..., max_num_global_attn_indices, ...]`: a list display holding the 0-d "
        "tensor from a parameter (inter-procedural, as at 1004); the assert rules (GM3xx) would also have "
        "to look inside list displays."),
    T + "longformer/modeling_longformer.py:1106": "Same pattern as line 1056.",
    T + "wav2vec2/modeling_wav2vec2.py:454": (
        "`hidden_states.requires_grad = True` in training (GB0206, setattr on Tensor.requires_grad): no rule "
        "covers attribute stores on tensors yet."),
    T + "wav2vec2/modeling_wav2vec2.py:213": (
        "`np.random.choice(np.arange(n), k, replace=False)` in `_compute_mask_indices` (training, SpecAugment): "
        "Dynamo traces numpy through torch and the sampling is data-dependent (GB0033). GM910 covers scalar "
        "`np.random` draws only; numpy values are never tensors for the GM1xx rules (issue 14)."),
    T + "switch_transformers/modeling_switch_transformers.py:306": (
        "GM905 (boolean-mask indexing) could predict it, but `router_mask` is first bound by tuple unpacking "
        "(unknown) and then rebound by `router_mask = router_mask.bool()`; the flow-insensitive join of the "
        "two bindings is `unknown`."),
}
FINDING_NOTES = {
    T + "wav2vec2/modeling_wav2vec2.py:1050 GM104": (
        "`True if self.training and (p < layerdrop) else False`: in eval `self.training` is False and the "
        "tensor comparison never runs, so no break; it breaks in training (a static-guard short-circuit "
        "the GM1xx rule could recognise)."),
    T + "longformer/modeling_longformer.py:1286 GM102": (
        "`() if (output_attentions and is_global_attn) else None` where `is_global_attn = ....item()` "
        "(line 1282): Dynamo breaks at the `.item()` (GM901) and resumes with a Python bool, so the "
        "ternary itself never breaks. GM1xx rules should not flag tests on values already turned into "
        "Python data on an earlier line."),
}


# -- the model suite -------------------------------------------------------------------------------
def _hf(case):
    def make():
        from perf import hf_models
        return hf_models.make(case)
    return make


def _decoder(config_name, model_name, **extra):
    def make():
        import transformers
        cfg = getattr(transformers, config_name)(
            vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0, **extra)
        cfg._attn_implementation = "eager"
        model = getattr(transformers, model_name)(cfg).eval()
        ids = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
        mask = torch.ones_like(ids)
        mask[1, :2] = 0  # left padding: the mask path runs
        return model, [{"input_ids": ids, "attention_mask": mask, "use_cache": False}]
    return make


def _gpt2():
    import transformers
    cfg = transformers.GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    return model, [{"input_ids": ids, "labels": ids, "use_cache": False}]


def _mixtral():
    return _decoder("MixtralConfig", "MixtralForCausalLM", num_local_experts=4, num_experts_per_tok=2)()


def _longformer():
    import transformers
    cfg = transformers.LongformerConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        attention_window=[4, 4], max_position_embeddings=80, pad_token_id=1, sep_token_id=2)
    model = transformers.LongformerModel(cfg).eval()
    ids = torch.randint(3, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    glob = torch.zeros_like(ids)
    glob[:, 0] = 1  # global attention on the first token: the global path runs
    return model, [{"input_ids": ids}, {"input_ids": ids, "global_attention_mask": glob}]


def _switch():
    import transformers
    cfg = transformers.SwitchTransformersConfig(
        vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
        num_experts=4, encoder_sparse_step=1, decoder_sparse_step=1, dropout_rate=0.0)
    model = transformers.SwitchTransformersModel(cfg).to(torch.float16).eval()  # fp16: the clamps run
    g = torch.Generator().manual_seed(1)
    ids, dec = torch.randint(3, 128, (2, 8), generator=g), torch.randint(3, 128, (2, 4), generator=g)
    return model, [{"input_ids": ids, "decoder_input_ids": dec, "use_cache": False}]


def _jetmoe():
    import transformers
    cfg = transformers.JetMoeConfig(
        vocab_size=128, hidden_size=32, num_hidden_layers=2, num_key_value_heads=2, kv_channels=8,
        intermediate_size=64, num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=64)
    model = transformers.JetMoeForCausalLM(cfg).eval()
    ids = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    return model, [{"input_ids": ids, "use_cache": False}]


def _deberta():
    import transformers
    cfg = transformers.DebertaV2Config(
        vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=64, num_labels=3, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.DebertaV2ForSequenceClassification(cfg).eval()
    ids = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    return model, [{"input_ids": ids, "labels": torch.tensor([0, 2])}]


def _sdpa(config_name, model_name, train=False):
    """SDPA attention with a padded mask: transformers' mask helpers (modeling_attn_mask_utils) run;
    `train`: training mode (dropout 0), where `(is_training or not is_tracing) and torch.all(...)` runs."""
    def make():
        import transformers
        cfg = getattr(transformers, config_name)(
            vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0, attention_dropout=0.0)
        cfg._attn_implementation = "sdpa"
        model = getattr(transformers, model_name)(cfg)
        model = model.train() if train else model.eval()
        ids = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
        mask = torch.ones_like(ids)
        return model, [{"input_ids": ids, "attention_mask": mask, "use_cache": False}]
    return make


def _encoder(config_name, model_name, **extra):
    def make():
        import transformers
        cfg = getattr(transformers, config_name)(
            vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64, pad_token_id=0, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, **extra)
        model = getattr(transformers, model_name)(cfg).eval()
        ids = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
        mask = torch.ones_like(ids)
        mask[1, 6:] = 0  # right padding: the mask path runs
        return model, [{"input_ids": ids, "attention_mask": mask}, {"input_ids": ids}]
    return make


def _wav2vec2_train():
    """Training mode with LayerDrop and SpecAugment: `skip_the_layer = self.training and p < layerdrop`."""
    import transformers
    cfg = transformers.Wav2Vec2Config(
        vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=4, layerdrop=0.5, mask_time_prob=0.5, mask_time_length=2,
        hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0)
    model = transformers.Wav2Vec2Model(cfg).train()
    x = torch.randn(2, 800, generator=torch.Generator().manual_seed(1))
    return model, [(x,)]


SUITE = {
    "hf_bart": _hf("hf_bart"),
    "hf_t5": _hf("hf_t5"),
    "hf_whisper": _hf("hf_whisper"),
    "hf_phi3_longrope": _hf("hf_phi3_longrope"),
    "hf_wav2vec2_ctc": _hf("hf_wav2vec2_ctc"),
    "hf_marian": _hf("hf_marian"),
    "hf_gpt2": _gpt2,
    "hf_llama": _decoder("LlamaConfig", "LlamaForCausalLM"),
    "hf_mistral": _decoder("MistralConfig", "MistralForCausalLM"),
    "hf_mixtral_moe": _mixtral,
    "hf_longformer": _longformer,
    "hf_switch_moe": _switch,
    "hf_jetmoe": _jetmoe,
    "hf_deberta_v2_cls": _deberta,
    # added for issue 14 (cross-file helpers, guards, LayerDrop, more families)
    "hf_llama_sdpa": _sdpa("LlamaConfig", "LlamaForCausalLM"),
    "hf_llama_sdpa_train": _sdpa("LlamaConfig", "LlamaForCausalLM", train=True),
    "hf_qwen2_sdpa": _sdpa("Qwen2Config", "Qwen2ForCausalLM"),
    "hf_wav2vec2_train": _wav2vec2_train,
    "hf_bert": _encoder("BertConfig", "BertModel"),
    "hf_roberta": _encoder("RobertaConfig", "RobertaModel"),
    "hf_electra": _encoder("ElectraConfig", "ElectraModel", embedding_size=32),
    "hf_qwen2": _decoder("Qwen2Config", "Qwen2ForCausalLM"),
    "hf_gemma": _decoder("GemmaConfig", "GemmaForCausalLM", head_dim=8),
    "hf_opt": _decoder("OPTConfig", "OPTForCausalLM", ffn_dim=64, word_embed_proj_dim=32),
}


def _factory(name: str):
    """A suite name, or `package.module:function` (inputs: tuples of args or dicts of kwargs)."""
    if ":" not in name:
        return SUITE[name]
    import importlib

    module, func = name.split(":", 1)
    return getattr(importlib.import_module(module), func)


def run_suite(names: list[str]) -> list[dict]:
    torch.set_num_threads(1)
    results = []
    for name in names:
        torch.manual_seed(0)
        model, inputs = _factory(name)()
        res = analyse(name, model, inputs)
        print(f"{name}: {res['breaks_predicted']}/{res['breaks_seen']} breaks predicted, "
              f"{res['findings_matching_a_break']}/{res['findings_on_executed_lines']} findings match "
              f"({res['seconds']} s)", flush=True)
        for b in res["breaks"]:
            print(f"  {b['site']} {b['gb']} {b['reason']} -> {','.join(b['codes']) or 'not predicted'}")
        results.append(res)
    return results


def totals(results: list[dict]) -> dict:
    seen = sum(r["breaks_seen"] for r in results)
    pred = sum(r["breaks_predicted"] for r in results)
    live = sum(r["findings_on_executed_lines"] for r in results)
    hit = sum(r["findings_matching_a_break"] for r in results)
    classes: Counter = Counter()
    missed: Counter = Counter()
    for r in results:
        for b in r["breaks"]:
            key = f"{b['gb'] or '-'} {b['reason']}"
            classes[key] += 1
            if not b["codes"]:
                missed[key] += 1
    return {"breaks_seen": seen, "breaks_predicted": pred, "recall": pred / seen if seen else None,
            "findings_on_executed_lines": live, "findings_matching_a_break": hit,
            "precision": hit / live if live else None, "break_classes": dict(classes),
            "unpredicted_classes": dict(missed)}


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.0f}%)" if b else "0/0"


def report_md(summary: dict) -> str:
    t = summary["total"]
    out = [
        "# Static coverage of real graph breaks (generated by `python -m perf.coverage`)", "",
        f"torch {summary['torch']}, transformers 4.44.2, tiny configs with random weights, backend \"eager\", "
        f"{len(summary['models'])} models, {summary['seconds']} s, graphmend-lint {summary['graphmend_commit']}.", "",
        "A *break* is a distinct source line where Dynamo's `graph_breaks` log reports a break (the "
        "innermost frame in the model's files; recompiles and repeated layers count once). It is "
        "*predicted* when a graphmend-lint finding spans that line. A finding counts for precision only "
        "if its line ran in eager on the same inputs; it is a *match* if a break sits on it.", "",
        f"**Recall {_pct(t['breaks_predicted'], t['breaks_seen'])}; precision "
        f"{_pct(t['findings_matching_a_break'], t['findings_on_executed_lines'])}.**", "",
        "| model | breaks | predicted | recall | findings (ran / all) | matching a break | precision | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    def pct(x):
        return "-" if x is None else f"{100 * x:.0f}%"

    for r in summary["models"]:
        out.append(f"| {r['model']} | {r['breaks_seen']} | {r['breaks_predicted']} | {pct(r['recall'])} | "
                   f"{r['findings_on_executed_lines']} / {r['findings_all']} | {r['findings_matching_a_break']} | "
                   f"{pct(r['precision'])} | {r['seconds']} |")
    out += ["", "## Every break", "", "| model | site | GB | reason | predicted by |", "|---|---|---|---|---|"]
    for r in summary["models"]:
        for b in r["breaks"]:
            gbs = ", ".join([b["gb"] or "-", *b["also"]])
            out.append(f"| {r['model']} | `{b['site']}` | {gbs} | {b['reason']} | {', '.join(b['codes']) or '**none**'} |")
    out += ["", "## Breaks no rule predicted, and why", ""]
    for r in summary["models"]:
        for b in r["breaks"]:
            if not b["codes"]:
                why = EXPLAINED.get(b["site"], "**not explained yet**")
                out.append(f"- `{b['site']}` ({r['model']}, {b['gb']} {b['reason']}): {why}")
    out += ["", "## Findings on executed lines that matched no break", ""]
    notes = [f"- `{f}` ({r['model']}): {FINDING_NOTES.get(f, '**not explained yet**')}"
             for r in summary["models"] for f in r["unmatched_findings"]]
    out += notes or ["None."]
    per_code: Counter = Counter(c for r in summary["models"] for b in r["breaks"] for c in b["codes"])
    out += ["", "## Breaks predicted, per rule", "", "| rule | breaks on its findings |", "|---|---|"]
    out += [f"| {c} | {n} |" for c, n in sorted(per_code.items())]
    out += ["", "## Break classes", "", "| class | seen | not predicted |", "|---|---|---|"]
    for k, n in sorted(t["break_classes"].items(), key=lambda kv: -kv[1]):
        out.append(f"| {k} | {n} | {t['unpredicted_classes'].get(k, 0)} |")
    return "\n".join(out) + "\n"


def _commit() -> str:
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "graphmend_lint"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" + uncommitted graphmend_lint changes" if dirty else "")


def main(argv: list[str]) -> int:
    if argv == ["--report"]:  # rebuild report.md from coverage.json (after editing notes or explanations)
        summary = json.loads((OUT / "coverage.json").read_text())
        (OUT / "report.md").write_text(report_md(summary) + "\n" + NOTES.read_text())
        return 0
    names = argv or list(SUITE)
    t0 = time.perf_counter()
    results = run_suite(names)
    summary = {"torch": torch.__version__, "graphmend_commit": _commit(), "total": totals(results),
               "models": results, "seconds": round(time.perf_counter() - t0, 1)}
    if not argv:
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / "coverage.json").write_text(json.dumps(summary, indent=1) + "\n")
        (OUT / "report.md").write_text(report_md(summary) + "\n" + NOTES.read_text())
        print(f"wrote {OUT / 'coverage.json'}")
    t = summary["total"]
    print(f"total: recall {t['breaks_predicted']}/{t['breaks_seen']}, precision "
          f"{t['findings_matching_a_break']}/{t['findings_on_executed_lines']}, {summary['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
