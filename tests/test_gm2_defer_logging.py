"""Default log-strategy ("defer") for logging and warnings (GM202/GM203): eager runs the original
call; under torch.compile the same records and warnings are emitted after the graph, which stays
whole (one graph, no break in Dynamo's graph_breaks log), on eager, aot_eager and inductor. Calls
that cannot be deferred keep the guard."""
from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
import torch
from harness import load

from graphmend_lint import engine
from graphmend_lint.settings import Settings
from graphmend_lint.verify.recorder import Recorder

SOURCE = '''import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger("gm_defer_case")


class Block(nn.Module):
    def forward(self, x, flag=True):
        logger.warning("block input %s sum %s", x.shape, x.sum())
        if flag:
            logger.info("flag set for %s rows", x.shape[0])
        logging.warning("root record")
        warnings.warn(f"deprecated for shape {x.shape}", FutureWarning, stacklevel=2)
        y = x * 2
        y.add_(1)
        warnings.warn("plain")
        return y
'''


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    folder = tmp_path_factory.mktemp("deferlog")
    (folder / "orig_block.py").write_text(SOURCE)
    result = engine.check(SOURCE.encode(), Settings(select=("GM2",)), fix=True)
    assert result.fixed and not result.findings
    (folder / "fixed_block.py").write_bytes(result.source)
    return load(folder / "orig_block.py", "deferlog_orig"), load(folder / "fixed_block.py", "deferlog_fixed"), \
        result.source.decode()


def _run(module, backend: str | None, caplog) -> tuple[list, list]:
    torch._dynamo.reset()
    fn = module.Block()
    if backend is not None:
        fn = torch.compile(fn, backend=backend)
    caplog.clear()
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO):
        warnings.simplefilter("always")
        out = fn(torch.ones(2, 3))
    records = [(r.name, r.levelname, r.getMessage()) for r in caplog.records
               if r.name in ("gm_defer_case", "root")]
    shown = [(w.category.__name__, str(w.message)) for w in caught if "graphmend" not in str(w.message)
             and w.category is not UserWarning or str(w.message) == "plain"]
    torch._dynamo.reset()
    return [out], records + shown


def test_fixed_code_defers_every_call(modules):
    _, _, source = modules
    assert source.count("_graphmend_log(") == 4  # the def and three calls
    assert source.count("_graphmend_warn(") == 3
    assert '_graphmend_warn(f"deprecated for shape {x.shape}", "FutureWarning")' in source


@pytest.mark.parametrize("backend", [None, "eager", "aot_eager", "inductor"])
def test_compiled_fixed_run_emits_what_eager_emits(modules, backend, caplog):
    orig, fixed, _ = modules
    want_out, want = _run(orig, None, caplog)
    got_out, got = _run(fixed, backend, caplog)
    assert torch.equal(got_out[0], want_out[0])
    assert [w for w in want if w[0] == "gm_defer_case"][0][2] == "block input torch.Size([2, 3]) sum tensor(6.)"
    assert got == want


def test_fixed_code_keeps_one_graph(modules):
    _, fixed, _ = modules
    torch._dynamo.reset()
    with Recorder() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.compile(fixed.Block(), backend="eager")(torch.ones(2, 3))
    assert rec.sites() == [] and rec.graphs == 1
    torch._dynamo.reset()


def test_not_deferrable_calls_keep_the_guard():
    src = b'''import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger(__name__)


class MyWarning(UserWarning):
    pass


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.log = logging.getLogger("m")

    def forward(self, x):
        logger.info("rows %d", x.shape[0])
        logger.exception("no exception to log when replayed")
        logger.warning("kw", exc_info=True)
        self.log.info("logger on self: its name is not known here")
        logger.warning_once("a cached call with a tensor %s", x)
        warnings.warn("own category", MyWarning)
        warnings.warn("source", source=x)
        if x.sum() > 0:
            logger.warning("inside a tensor if: GM101 skips the whole if under compile")
        return x
'''
    findings = [f for f in engine.check(src, Settings(select=("GM2",))).findings]
    assert len(findings) == 8
    assert all("guard it" in f.message for f in findings), [f.message for f in findings if "guard it" not in f.message]


ONLY_COMPILED = Path(__file__).parent / "fixtures" / "GM202" / "invalid_compile_only_else.py"


def test_call_that_runs_only_under_compile_becomes_the_helper_call(tmp_path, caplog):
    """The `else` of `if not is_compiling():` runs only under compile: the fix replaces the call by
    the helper call (no guard, which would be dead code there); the break goes, the record stays."""
    fixed = engine.check(ONLY_COMPILED.read_bytes(), Settings(select=("GM2",)), fix=True).source.decode()
    assert "logger.warning(" not in fixed and '_graphmend_log(\n                __name__, "warning"' in fixed
    (tmp_path / "only_fixed.py").write_text(fixed)
    orig, new = load(ONLY_COMPILED, "only_orig"), load(tmp_path / "only_fixed.py", "only_fixed")
    seen = []
    for module in (orig, new):
        torch._dynamo.reset()
        caplog.clear()
        with Recorder() as rec, caplog.at_level(logging.WARNING):
            out = torch.compile(module.Activation(), backend="eager")(torch.full((3,), 20.0))
        seen.append((out, [r.getMessage() for r in caplog.records if "clamping" in r.getMessage()],
                     len(rec.sites())))
    torch._dynamo.reset()
    (o_out, o_rec, o_breaks), (f_out, f_rec, f_breaks) = seen
    assert torch.equal(o_out, f_out) and o_rec == f_rec == ["clamping is skipped under torch.compile"]
    assert o_breaks == 1 and f_breaks == 0
    guard = engine.check(ONLY_COMPILED.read_bytes(), Settings(select=("GM2",), log_strategy="guard")).findings
    assert guard and all(f.replacement is None and "runs only under torch.compile" in f.message for f in guard)


def test_torch_only_under_a_condition_keeps_the_guard():
    """transformers' `if is_torch_available(): import torch ...`: a module-level helper would fail to
    import without torch, so the call is guarded inside the function instead."""
    src = b'''import logging

from .utils import is_torch_available

logger = logging.getLogger(__name__)

if is_torch_available():
    import torch
    from torch import nn

    class M(nn.Module):
        def forward(self, x):
            logger.warning("hello")
            return x
'''
    result = engine.check(src, Settings(select=("GM2",)), fix=True)
    assert result.fixed and b"_graphmend" not in result.source
    assert b"            if not torch.compiler.is_compiling():\n                logger.warning" in result.source


def test_every_file_of_a_run_gets_its_own_helper(tmp_path):
    """The plan of where the helper goes is per file, under Fixit as under the CLI."""
    import shutil
    import subprocess
    import sys
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(SOURCE)
    shutil.copytree(tmp_path, tmp_path / "fixit_run", ignore=shutil.ignore_patterns("fixit_run"))
    cli = subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "--fix", "--no-cache", "a.py", "b.py"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    fixit = [sys.executable, "-m", "fixit", "--rules", "graphmend_lint", "fix", "--automatic", "a.py", "b.py"]
    subprocess.run(fixit, cwd=tmp_path / "fixit_run", capture_output=True, text=True)
    for name in ("a.py", "b.py"):
        # Fixit applies one pass: of the two fixes that put a helper above the class, one is
        # kept; what it left has no fix that calls a missing helper
        text = (tmp_path / "fixit_run" / name).read_text()
        for helper in ("_graphmend_log", "_graphmend_warn"):
            assert (f"{helper}(" in text) == (f"def {helper}(" in text)
        assert text.count("def _graphmend_") == 1
    subprocess.run(fixit, cwd=tmp_path / "fixit_run", capture_output=True, text=True)  # a second run: the rest
    for folder in (tmp_path, tmp_path / "fixit_run"):
        for name in ("a.py", "b.py"):
            text = (folder / name).read_text()
            assert text.count("def _graphmend_log(") == 1 and text.count("def _graphmend_warn(") == 1, folder
            compile(text, name, "exec")
    import ast

    def statements(folder):  # the same code (the CLI also wraps long lines; the helpers' order may differ)
        return sorted(ast.dump(stmt) for stmt in ast.parse((folder / "a.py").read_text()).body)
    assert statements(tmp_path) == statements(tmp_path / "fixit_run")


def test_second_statement_gets_its_fix_once_the_helper_is_there():
    """Two models in one file, each a frame torch.compile is applied to: the first class brings the
    helper; the second's call has no fix in that pass (a fix calling a helper not yet defined could
    be applied alone), and --fix's next pass defers it."""
    src = SOURCE.replace("class Block(", "class First(") + SOURCE[SOURCE.index("class Block("):]
    findings = engine.check(src.encode(), Settings(select=("GM203",))).findings
    assert [f.safety.value for f in findings] == ["safe", "safe", "none", "none"]
    assert all("no fix yet: `--fix` defers it in its next pass" in f.message for f in findings[2:])
    fixed = engine.check(src.encode(), Settings(select=("GM203",)), fix=True)
    assert not fixed.findings and fixed.fixed == 4
    text = fixed.source.decode()
    assert text.count("def _graphmend_warn(") == 1 and text.count("_graphmend_warn(") == 5
    compile(text, "m.py", "exec")


def test_submodule_frames_keep_the_guard():
    """A module that another module of the file builds runs inlined in its parent's frame, where
    Dynamo never replays a deferred call (measured): it gets the guard, the parent the helper."""
    src = SOURCE + '''

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        warnings.warn("model")
        return self.block(x)
'''
    findings = {f.line: f.message for f in engine.check(src.encode(), Settings(select=("GM203",))).findings}
    assert all("guard it" in m for line, m in findings.items() if line < 25)
    assert "warn after the graph" in findings[max(findings)]


def test_helper_layout_keeps_the_comment_block_with_its_class():
    """The helper goes above the blank lines and comment block of the statement it precedes (two
    blank lines around it, as ruff formats), and a multi-line argument keeps the guard (the deferred
    call's layout would not follow it)."""
    src = b'''import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


# -----------
# Attention
# -----------


class Attn(nn.Module):
    def forward(self, x):
        logger.warning("short message")
        logger.warning(
            "a message split over "
            "two lines"
        )
        return x
'''
    findings = engine.check(src, Settings(select=("GM202",))).findings
    assert ["deferred" in f.message for f in findings] == [True, False]
    text = engine.check(src, Settings(select=("GM202",)), fix=True).source.decode()
    assert "logger = logging.getLogger(__name__)\n\n\n@torch.compiler.disable\n" in text
    assert ".add(_graphmend_log)\n\n\n# -----------\n# Attention\n# -----------\n\n\nclass Attn(" in text


def test_deferral_is_the_same_with_the_clis_skeleton(tmp_path):
    """Which frames get the helper is read from attribute stores only (the skeleton keeps them and
    blanks the rest of `__init__`): the CLI and the whole-file engine (Fixit's path) agree."""
    import subprocess
    import sys
    src = SOURCE + '''

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        layers = []
        layers.append(Block())
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        return self.layers[0](x)
'''
    (tmp_path / "m.py").write_text(src)
    cli = subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "--no-cache", "--output-format", "json",
                          "m.py"], cwd=tmp_path, capture_output=True, text=True)
    import json
    ours = sorted((d["location"]["row"], d["message"]) for d in json.loads(cli.stdout) if d["code"].startswith("GM2"))
    whole = sorted((f.line, f.message) for f in engine.check(src.encode(), Settings()).findings
                   if f.code.startswith("GM2"))
    assert ours == whole and ours
