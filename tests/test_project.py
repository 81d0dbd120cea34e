"""The project index (analysis/project.py): cross-file bases, helpers, guard wrappers, config, cache."""
from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphmend_lint import parallel
from graphmend_lint.analysis import project, summary
from graphmend_lint.cli import main
from graphmend_lint.settings import ConfigError, Settings, from_table

BREAKS = """
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        print("in forward")
        return x
"""
EXPECT = [(6, "GM101"), (8, "GM201")]  # BREAKS after a 3-line header


def write(root: Path, files: dict[str, str]) -> list[Path]:
    out = []
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
        out.append(p)
    return out


def lint(paths: list[Path], s: Settings | None = None, cache: bool = False, jobs: int = 1) -> dict[str, list[tuple[int, str]]]:
    outs = parallel.check_files(paths, s or Settings(), jobs=jobs, use_cache=cache)
    return {o.path.name: sorted((f.line, f.code) for f in o.findings) for o in outs}


def _base_pkg(tmp_path: Path) -> list[Path]:
    return write(tmp_path, {
        "pkg/__init__.py": "from .layers.base import Base as Base\n",
        "pkg/layers/__init__.py": "",
        "pkg/layers/root.py": "import torch.nn as nn\n\n\nclass Root(nn.Module):\n    pass\n",
        "pkg/layers/base.py": "from .root import Root\n\n\nclass Base(Root):\n    pass\n",
        "pkg/enc_relative.py": "from .layers.base import Base\n\n\nclass Enc(Base):" + BREAKS,
        "pkg/enc_absolute.py": "from pkg.layers import base\n\n\nclass Enc(base.Base):" + BREAKS,
        "pkg/enc_reexport.py": "import pkg\n\n\nclass Enc(pkg.Base):" + BREAKS,
        "pkg/not_a_module.py": "class Base:\n    pass\n\n\nclass Enc(Base):" + BREAKS,
    })


@pytest.mark.parametrize("jobs", [1, 2])
def test_cross_file_bases_two_levels_deep(tmp_path, jobs):
    """First pass in workers (each file alone), then the files the index changes are checked again."""
    paths = _base_pkg(tmp_path)
    got = lint(paths, jobs=jobs)
    for name in ("enc_relative.py", "enc_absolute.py", "enc_reexport.py"):
        assert got[name] == EXPECT, name
    assert got["not_a_module.py"] == []


def test_cross_file_base_seen_in_a_three_file_run(tmp_path):
    """A pre-commit run on one file still follows its bases through the imports (on demand)."""
    paths = _base_pkg(tmp_path)
    only = [p for p in paths if p.name == "enc_relative.py"]
    assert lint(only)["enc_relative.py"] == EXPECT


def test_module_name_and_relative_imports(tmp_path):
    paths = _base_pkg(tmp_path)
    mod, root, pkg = project.module_name(paths[3])
    assert (mod, root, pkg) == ("pkg.layers.base", tmp_path.resolve(), False)
    assert project.module_name(paths[0])[0] == "pkg"


def test_installed_package_base_read_as_source(tmp_path, monkeypatch):
    """A base class from a package on sys.path is read from its source, never imported."""
    site = tmp_path / "site"
    write(site, {
        "fakelib/__init__.py": "from .modeling import GradientCheckpointingLayer\nraise ImportError('never imported')\n",
        "fakelib/modeling.py": "from torch import nn\n\n\nclass GradientCheckpointingLayer(nn.Module):\n    pass\n",
    })
    monkeypatch.syspath_prepend(str(site))
    app = write(tmp_path / "app", {"layer.py": "from fakelib import GradientCheckpointingLayer\n\n\n"
                                               "class Layer(GradientCheckpointingLayer):" + BREAKS})
    assert lint(app)["layer.py"] == EXPECT
    assert "fakelib" not in sys.modules


def test_transformers_base_from_the_venv(tmp_path):
    """transformers 4.44.2 in the venv: a subclass of LlamaDecoderLayer (bases followed in its source)."""
    pytest.importorskip("transformers")
    app = write(tmp_path, {"layer.py": "from transformers.models.llama.modeling_llama import LlamaDecoderLayer\n\n\n"
                                       "class Layer(LlamaDecoderLayer):" + BREAKS})
    before = set(sys.modules)
    assert lint(app)["layer.py"] == EXPECT
    assert not any(m.startswith("transformers") for m in set(sys.modules) - before)


def test_cross_module_helpers(tmp_path):
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils.py": """
            import torch
            from . import deep


            def check(x):
                if torch.all(x == 1):
                    return x
                return deep.inner(x)


            def unused(x):
                if x.sum() > 0:
                    return x
                return x
            """,
        "pkg/deep.py": "def inner(x):\n    print('x')\n    return x\n",
        "pkg/model.py": """
            from torch import nn
            from .utils import check


            class M(nn.Module):
                def forward(self, x):
                    return check(x)
            """,
    })
    got = lint(paths)
    assert got["utils.py"] == [(7, "GM101")]  # `unused` is never called compiled
    assert got["deep.py"] == [(2, "GM201")]
    assert got["model.py"] == []


def test_helpers_called_only_in_eager_are_not_compiled(tmp_path):
    """torch_geometric's `if not is_compiling(): self._index_select_safe(...)` and the like: a call that
    never runs compiled makes no helper compiled, in the same file or another (the index's edges
    and the file's own scope agree); a one-line body and the test itself still count."""
    helper = "\n    if x.sum() > 0:\n        print('slow path')\n    return x\n"
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": "".join(f"def {n}(x):{helper}\n\n" for n in ("safe", "timing", "after", "jit", "inline")),
        "pkg/model.py": """
            import torch
            from torch import nn
            from .helpers import safe, timing, after, jit, inline


            class M(nn.Module):
                def _check(self, x):
                    if x.min() < 0:
                        raise ValueError("negative")
                    return x

                def forward(self, x, flag: bool = True):
                    if not torch.compiler.is_compiling():
                        self._check(x)
                        safe(x)
                    if flag and not torch.compiler.is_compiling():
                        timing(x)
                    if torch.jit.is_scripting():
                        jit(x)
                    if not torch.compiler.is_compiling(): inline(x)
                    if torch.compiler.is_compiling():
                        return x * 2
                    return after(x)
            """,
    })
    got = lint(paths)
    assert got["model.py"] == []
    assert got["helpers.py"] == [(26, "GM101"), (27, "GM201")]  # `inline` (its line holds the test)


def test_a_lambda_handed_to_a_disabled_def_is_not_compiled(tmp_path):
    """unsloth_zoo's `_run_probe_eagerly(lambda: probe(device))`, `_run_probe_eagerly` marked
    torch.compiler.disable: the probe runs inside it, never compiled, in the same file or another
    (the index's edges and the file's own scope agree); a lambda handed to another call still counts."""
    helper = "\n    if x.sum() > 0:\n        print('slow path')\n    return x\n"
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": "".join(f"def {n}(x):{helper}\n\n" for n in ("probe", "kept")),
        "pkg/model.py": """
            import torch
            from torch import nn
            from .helpers import probe, kept


            @torch.compiler.disable
            def run_eagerly(fn):
                return fn()


            def local_probe(x):
                if x.max() > 1:
                    print('big')
                return x


            def apply(fn):
                return fn()


            class M(nn.Module):
                def forward(self, x):
                    a = run_eagerly(lambda: probe(x))
                    b = run_eagerly(lambda: local_probe(x))
                    return apply(lambda: kept(x)) + a + b
            """,
    })
    got = lint(paths)
    assert got["model.py"] == [(24, "GM907"), (25, "GM907")]
    assert got["helpers.py"] == [(8, "GM101"), (9, "GM201")]  # `kept` only (`probe` is lines 1-4)


def test_call_of_a_disabled_def_from_another_file(tmp_path):
    """GM907 across files: a def marked torch.compiler.disable in another module of the project,
    called from a compiled forward by every import spelling; not where that module registers it as a
    reorderable logging function (Dynamo defers the call), nor from eager code."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/stats.py": """
            import torch


            @torch.compiler.disable
            def log_stats(t):
                return None


            @torch._dynamo.disable(recursive=False)
            def record(t):
                return None


            @torch.compiler.disable
            def deferred(t):
                return None


            torch._dynamo.config.reorderable_logging_functions.add(deferred)


            def plain(t):
                return t
            """,
        "pkg/model.py": """
            from torch import nn
            from . import stats
            from .stats import deferred, log_stats, plain
            from .stats import record as rec


            class M(nn.Module):
                def forward(self, x):
                    log_stats(x)
                    stats.record(x)
                    rec(x)
                    deferred(x)
                    return plain(x)


            def train_step(m, x):
                log_stats(x)
                return m(x)
            """,
    })
    got = lint(paths)
    assert got["model.py"] == [(10, "GM907"), (11, "GM907"), (12, "GM907")]
    assert got["stats.py"] == []
    alone = lint([paths[-1]])  # the other file is read by the index when only this one is linted
    assert alone["model.py"] == got["model.py"]


def test_methods_of_a_helper_object_and_overrides_run_compiled(tmp_path):
    """Audits: performer's `self.proj_updater.redraw_projections()` and momentfm's
    `self.mask_generator.generate_mask(...)` (the object built in `__init__`, its class in the same
    file or another), and gliner's subclass `loss` called as `self.loss()` from the inherited forward:
    their breaks were missed. The file alone (engine.check) and the project agree."""
    from graphmend_lint import engine

    model = """
        import torch
        from torch import nn
        from .masking import Masking


        class Updater(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("calls", torch.tensor(0))

            def maybe_update(self):
                print("redraw")
                return self.calls


        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.updater = Updater()
                self.masks = Masking()

            def loss(self, h):
                return h.sum()

            def forward(self, x):
                self.updater.maybe_update()
                return self.loss(self.masks.generate_mask(x))


        class Child(Base):
            def loss(self, h):
                print("child loss")
                return h.mean()


        class Unused:
            def maybe_update(self):
                print("never compiled")
        """
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/masking.py": """
            class Masking:
                def generate_mask(self, x):
                    print("masking")
                    return x
            """,
        "pkg/model.py": model,
    })
    got = lint(paths)
    assert got["model.py"] == [(13, "GM201"), (33, "GM201")]
    assert got["masking.py"] == [(4, "GM201")]
    alone = engine.check(paths[-1].read_bytes(), Settings()).findings
    assert sorted((f.line, f.code) for f in alone) == got["model.py"]


def test_overrides_in_other_files_run_compiled(tmp_path):
    """Audits (pytorch-metric-learning, pykeen): the base's forward calls `self.compute_loss()`, and
    each loss defines it in a file of its own that has no forward; the override, and what it calls in
    a third file, run compiled. The answer is the project's: the loss file linted alone says the same,
    and a subclass that does not override it, or a method nothing calls on `self`, reports nothing."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": """
            from torch import nn


            class BaseLoss(nn.Module):
                def compute_loss(self, x):
                    raise NotImplementedError

                def forward(self, x):
                    return self.compute_loss(x)
            """,
        "pkg/utils.py": """
            def pick(x):
                print("pick")
                return x
            """,
        "pkg/nca.py": """
            from .base import BaseLoss
            from .utils import pick


            class NCALoss(BaseLoss):
                def compute_loss(self, x):
                    print("nca")
                    return pick(x)

                def describe(self):
                    print("never compiled")


            class Plain(BaseLoss):
                pass
            """,
    })
    got = lint(paths)
    assert got["nca.py"] == [(8, "GM201")]
    assert got["utils.py"] == [(3, "GM201")]
    assert lint([paths[-1]])["nca.py"] == got["nca.py"]
    assert lint([paths[2]])["utils.py"] == got["utils.py"]


def test_a_function_bound_by_partial_in_init_runs_compiled(tmp_path):
    """Audit (piq): `self.mdsi = functools.partial(mdsi, ...)` in `__init__` and `self.mdsi(x, y)` in
    forward: `mdsi` (here in another file) and what it calls run compiled."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/functional.py": """
            def mdsi(x, y, c=1.0):
                print("mdsi")
                return x - y
            """,
        "pkg/losses.py": """
            import functools

            from torch import nn

            from .functional import mdsi


            class MDSILoss(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mdsi = functools.partial(mdsi, c=2.0)

                def forward(self, x, y):
                    return self.mdsi(x, y)
            """,
    })
    assert lint(paths)["functional.py"] == [(3, "GM201")]
    assert lint([paths[1]])["functional.py"] == [(3, "GM201")]


def test_init_of_a_class_made_in_compiled_code_runs_compiled(tmp_path):
    """Audit (zuko): a forward that makes `Coupling(mask)` runs `Coupling.__init__` compiled (Dynamo
    traces it), in the same file or another; a module class made there is not followed."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/tr.py": """
            from torch import nn


            class Coupling:
                def __init__(self, mask):
                    print("coupling")
                    self.mask = mask


            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    print("a module made in forward: not followed")
            """,
        "pkg/flow.py": """
            from torch import nn

            from .tr import Coupling, Head


            class Local:
                def __init__(self, x):
                    print("local")


            class Flow(nn.Module):
                def forward(self, x, mask):
                    Coupling(mask)
                    Local(x)
                    Head()
                    return x
            """,
    })
    got = lint(paths)
    assert got["tr.py"] == [(7, "GM201")]
    assert got["flow.py"] == [(9, "GM201")]


def test_a_logger_imported_from_another_module(tmp_path):
    """Audit (deepspeed): `from pkg.utils import logger`, a logger that another module makes with
    `logging.getLogger` and its package re-exports; its calls in compiled code are GM202's, with the
    guard fix. Imported names that are not loggers are not reported (review: a `metric_logger` made
    by a project's own `build_metric_logger()` once got a safe guard that dropped its records)."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils/__init__.py": "from .logging import logger, not_a_logger, metric_logger\n",
        "pkg/utils/logging.py": """
            import logging


            def build_metric_logger():
                return []


            logger = logging.getLogger("pkg")
            not_a_logger = object()
            metric_logger = build_metric_logger()
            """,
        "pkg/model.py": """
            from torch import nn

            from pkg.utils import logger, metric_logger, not_a_logger


            class Model(nn.Module):
                def forward(self, x):
                    logger.warning("shape %s", x.shape)
                    not_a_logger.warning("not a logger")
                    metric_logger.log(x.sum())
                    return x
            """,
    })
    assert lint(paths)["model.py"] == [(9, "GM202")]
    assert lint([paths[-1]])["model.py"] == [(9, "GM202")]


def test_buffers_a_base_class_of_another_file_registers(tmp_path):
    """Audit (torchao): `FakeQuantizeBase.__init__` registers `observer_enabled`; a subclass in
    another file tests it in forward: a tensor test (GM101), as with the base in the same file."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": """
            import torch
            from torch import nn


            class FakeQuantizeBase(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("observer_enabled", torch.tensor([1], dtype=torch.uint8))
                    self.scale = 1.0
            """,
        "pkg/lfq.py": """
            from .base import FakeQuantizeBase


            class Learnable(FakeQuantizeBase):
                def forward(self, x):
                    if self.observer_enabled[0] == 1:
                        x = x * 2
                    if self.scale == 1.0:
                        x = x + 1
                    return x
            """,
    })
    assert lint(paths)["lfq.py"] == [(7, "GM101")]
    assert lint([paths[-1]])["lfq.py"] == [(7, "GM101")]


def test_names_a_star_import_brings_from_the_modules_own_imports(tmp_path):
    """tsai: `from ..imports import *` gives every model file `nn` (`import torch.nn as nn` in
    imports.py): `class ECELoss(nn.Module)` is a module and its forward compiled (the audit's 143
    missed forwards). A private name is not brought by `*`."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/imports.py": "import torch\nimport torch.nn as nn\nfrom torch import nn as _nn\n",
        "pkg/models/__init__.py": "",
        "pkg/models/ece.py": """
            from ..imports import *


            class ECELoss(nn.Module):
                def forward(self, logits):
                    if logits.mean().item() > 0:
                        logits = logits * 2
                    return logits


            class Private(_nn.Module):
                def forward(self, x):
                    return x.item()
            """,
    })
    assert lint(paths)["ece.py"] == [(7, "GM101")]  # not `Private.forward`'s `.item()` (line 14)


def test_a_def_installed_as_a_forward_by_assignment_runs_compiled(tmp_path):
    """unsloth: `LlamaAttention.forward = LlamaAttention_fast_forward` inside a patch function (and
    `types.MethodType(new_forward, module)`): the installed defs are forwards, in their own file and
    where another file installs one it imports. The file alone (engine.check) and the project agree."""
    from graphmend_lint import engine

    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/fast.py": """
            import torch


            def fast_forward(self, x):
                print("fast path")
                return x * 2


            def unused_forward(self, x):
                print("never installed")
                return x
            """,
        "pkg/patch.py": """
            import types

            import torch
            from transformers_like import Attention
            from .fast import fast_forward


            def own_forward(self, x):
                if x.sum() > 0:
                    x = x + 1
                return x


            def patch(model):
                Attention.forward = fast_forward
                model.head.forward = types.MethodType(own_forward, model.head)
            """,
    })
    got = lint(paths)
    assert got["fast.py"] == [(6, "GM201")]
    assert got["patch.py"] == [(10, "GM101")]
    alone = engine.check(paths[-1].read_bytes(), Settings()).findings
    assert sorted((f.line, f.code) for f in alone) == got["patch.py"]


def test_a_project_function_false_under_compile_is_a_guard(tmp_path):
    """torchvision's `_is_tracing()` returns `torch._C._get_tracing_state()`, None under Dynamo: code
    under `if torch.jit.is_scripting() or torchvision._is_tracing():` and the helpers called only
    there (`_onnx_paste_mask_in_image`) never run compiled (the audit's 7 false findings). A helper
    called under a guard that may be true stays compiled code."""
    from graphmend_lint import engine

    paths = write(tmp_path, {
        "pyproject.toml": "[project]\nname = 'tv'\n",
        "tvpkg/__init__.py": "import torch\n\n\ndef _is_tracing():\n    return torch._C._get_tracing_state()\n\n\n"
                             "def maybe():\n    return torch.are_deterministic_algorithms_enabled()\n",
        "tvpkg/models/__init__.py": "",
        "tvpkg/models/heads.py": """
            import torch
            from torch import nn

            import tvpkg


            def _onnx_paste(mask: torch.Tensor, box: torch.Tensor):
                h = int(box[3] - box[1])
                return mask[:h]


            def _other(mask: torch.Tensor, box: torch.Tensor):
                return mask[: int(box[0])]


            def paste(mask, box):
                if tvpkg._is_tracing():
                    return _onnx_paste(mask, box)
                if tvpkg.maybe():
                    return _other(mask, box)
                return mask


            class Head(nn.Module):
                def forward(self, mask, box, scale):
                    if torch.jit.is_scripting() or tvpkg._is_tracing():
                        s = scale.item()
                    else:
                        s = 1.0
                    return paste(mask, box) * s
            """,
    })
    got = lint([p for p in paths if p.suffix == ".py"])
    assert got["heads.py"] == [(14, "GM904")]  # `_other`, under a guard that may be true
    alone = engine.check(paths[-1].read_bytes(), Settings()).findings  # the file alone cannot value the guard
    assert [(f.line, f.code) for f in alone] == [(9, "GM904"), (14, "GM904"), (28, "GM901")]


def test_calls_and_loops_over_a_helper_object_run_its_methods(tmp_path):
    """torchvision's `self.fg_bg_sampler(labels)` runs the sampler's `__call__`, FCOS's `head` built
    in a local (`if head is None: head = FCOSHead()`, `self.head = head`) runs its methods, and
    fairseq's `for layer in self.layers:` over a LayerDropModuleList (built in one branch, an
    nn.ModuleList in the other) runs its `__iter__`, whose `torch.empty(n).uniform_()` is a tensor:
    the audits' missed breaks, across files and in the file alone."""
    from graphmend_lint import engine

    model = """
        import torch
        from torch import nn
        from .utils import LayerDropModuleList, Sampler


        class Head(nn.Module):
            def loss(self, x):
                return x.sum().item()


        class Net(nn.Module):
            def __init__(self, head=None, layerdrop=0.0):
                super().__init__()
                self.sampler = Sampler()
                if head is None:
                    head = Head()
                self.head = head
                if layerdrop > 0:
                    self.layers = LayerDropModuleList(layerdrop, [nn.Linear(4, 4)])
                else:
                    self.layers = nn.ModuleList([nn.Linear(4, 4)])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return self.sampler(x), self.head.loss(x)
        """
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils.py": """
            import torch
            from torch import nn


            class Sampler:
                def __call__(self, x):
                    return torch.where(x > 0)[0]


            class LayerDropModuleList(nn.ModuleList):
                def __init__(self, p, modules=None):
                    super().__init__(modules)
                    self.p = p

                def __iter__(self):
                    probs = torch.empty(len(self)).uniform_()
                    for i, m in enumerate(super().__iter__()):
                        if probs[i] > self.p:
                            yield m
            """,
        "pkg/model.py": model,
    })
    got = lint(paths)
    assert got["model.py"] == [(9, "GM901")]
    assert got["utils.py"] == [(8, "GM905"), (19, "GM104")]
    alone = engine.check(paths[-1].read_bytes(), Settings()).findings
    assert sorted((f.line, f.code) for f in alone) == got["model.py"]


def test_autograd_function_forward_runs_compiled_through_apply(tmp_path):
    """liger-kernel's `LigerFusedLinearCrossEntropyFunction.apply(...)` in a module's forward: Dynamo
    traces the Function's `forward` (its `.item()` broke 3 times, measured by the audit), called as
    `Cls.apply`, through a module-level alias (`fn = Cls.apply`), from another file or the same one."""
    fn = ("class {name}(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
          "        n = (x > 0).sum().item()\n        return x * n\n\n    @staticmethod\n"
          "    def backward(ctx, g):\n        return g\n\n\n")
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/ops.py": "import torch\n\n\n" + fn.format(name="Direct") + fn.format(name="Aliased")
                      + fn.format(name="Unused") + "aliased = Aliased.apply\n",
        "pkg/model.py": """
            import torch
            from torch import nn
            from .ops import Direct, aliased


            class Local(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * x.max().item()


            class M(nn.Module):
                def forward(self, x):
                    return Direct.apply(x) + aliased(x) + Local.apply(x)
            """,
    })
    got = lint(paths)
    assert got["ops.py"] == [(7, "GM901"), (18, "GM901")]  # not `Unused`
    assert got["model.py"] == [(10, "GM901")]


def test_namespace_package_folders_import_from_the_project_root(tmp_path):
    """sglang's `srt/models` and `srt/layers` have no __init__.py (PEP 420): `from pkg.a.base import
    VPE` is read from the project's root, so a subclass of a module class in another folder is a
    module and its forward compiled (the audit's missed GM104)."""
    paths = write(tmp_path, {
        "pyproject.toml": "[project]\nname = 'ns'\n",
        "pkg/a/base.py": "import torch\n\n\nclass VPE(torch.nn.Module):\n    def forward(self, ids):\n        return ids * 2\n",
        "pkg/b/sub.py": """
            import torch
            from pkg.a.base import VPE


            class Sub(VPE):
                def forward(self, x):
                    if x.sum() > 0:
                        print("positive")
                    return x
            """,
    })
    assert lint([p for p in paths if p.suffix == ".py"])["sub.py"] == [(8, "GM101"), (9, "GM201")]


def test_a_namespace_portion_without_a_project_marker(tmp_path, monkeypatch):
    """megatron-core's wheel: `megatron/` has no __init__.py and no project file lies above it, so the
    project is `megatron/core` and its modules are `core.*`; `from megatron.core.moe.utils import f`
    names the same files (the audit's 6 missed findings; pyannote.audio's result depended on the
    working folder). Linted from inside and from outside the tree: the same findings."""
    paths = write(tmp_path, {
        "megatron/core/__init__.py": "",
        "megatron/core/module.py": "import torch\n\n\nclass MegatronModule(torch.nn.Module):\n    pass\n",
        "megatron/core/moe/__init__.py": "",
        "megatron/core/moe/utils.py": """
            def sinkhorn(cost, tol=1e-4):
                error = cost.sum()
                while error > tol:
                    error = error / 2
                return cost
            """,
        "megatron/core/moe/router.py": """
            from megatron.core.module import MegatronModule
            from megatron.core.moe.utils import sinkhorn


            class Router(MegatronModule):
                def forward(self, x):
                    print("routing")
                    return sinkhorn(x)
            """,
    })
    expected = {"utils.py": [(4, "GM103")], "router.py": [(8, "GM201")]}
    for cwd in (tmp_path, paths[-1].parent, Path(os.path.abspath(os.sep))):
        monkeypatch.chdir(cwd)
        got = lint(paths)
        assert {k: got[k] for k in expected} == expected, cwd


def test_a_helper_called_through_a_local_name_runs_compiled(tmp_path):
    """nflows' `spline_fn = splines.rational_quadratic_spline` then `spline_fn(...)` in a forward: the
    helper in another file runs compiled (audit: its breaks were not reported)."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/splines.py": "import torch\n\n\ndef spline(x):\n    if torch.any(x > 0):\n        print('spline')\n    return x\n",
        "pkg/model.py": """
            from torch import nn
            from . import splines


            class M(nn.Module):
                def forward(self, x):
                    spline_fn = splines.spline
                    return spline_fn(x)
            """,
    })
    assert lint(paths)["splines.py"] == [(5, "GM101"), (6, "GM201")]


def test_a_helper_called_through_an_annotated_local_name_runs_compiled(tmp_path):
    """`attention_interface: Callable = eager_attention_forward` then `attention_interface(...)`
    (transformers' attention dispatch): Dynamo traces the helper, in this file or another."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/attn.py": "import torch\n\n\ndef eager(x):\n    if torch.any(x > 0):\n        x = x * 2\n    return x\n",
        "pkg/model.py": """
            from typing import Callable

            import torch
            from torch import nn
            from .attn import eager


            def local(x):
                if x.sum() > 0:
                    x = x + 1
                return x


            class M(nn.Module):
                def forward(self, x):
                    interface: Callable[..., torch.Tensor] = eager
                    x = interface(x)
                    other: Callable = local
                    return other(x)
            """,
    })
    got = lint(paths)
    assert got["attn.py"] == [(5, "GM101")]
    assert got["model.py"] == [(10, "GM101")]


def test_functions_of_a_dispatch_table_run_compiled(tmp_path):
    """geomloss' `routines = {"sinkhorn": {"tensorized": sinkhorn_tensorized, ...}, "energy": {...:
    partial(kernel_tensorized, name="energy")}}` then `routines[self.loss][backend](x, y)` in forward:
    each function the module-level dict names runs compiled, in this file or another (audit: the
    `.item()` of sinkhorn's `max_diameter`, 6 breaks, was reported only with `--compiled-scope all`;
    measured on this package: one break in each function)."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/samples.py": """
            def diameter(x):
                return (x.max(0)[0] - x.min(0)[0]).norm().item()


            def tensorized(x, y, name="energy"):
                return (x - y).pow(2).sum() / diameter(x)


            def unused(x):
                return x.sum().item()
            """,
        "pkg/loss.py": """
            from functools import partial

            from torch import nn

            from .samples import tensorized


            def local(x, y):
                if (x > y).any():
                    x = x * 2
                return x.sum()


            routines = {
                "sinkhorn": {"tensorized": partial(tensorized, name="sinkhorn")},
                "local": {"tensorized": local},
            }


            class SamplesLoss(nn.Module):
                def __init__(self, loss="sinkhorn", backend="tensorized"):
                    super().__init__()
                    self.loss, self.backend = loss, backend

                def forward(self, x, y):
                    return routines[self.loss][self.backend](x, y)
            """,
    })
    got = lint(paths)
    assert got["samples.py"] == [(3, "GM901")]
    assert got["loss.py"] == [(10, "GM101")]


def test_a_local_named_like_a_dispatch_table_is_not_it(tmp_path):
    """`routines = {...}` bound in the def itself shadows the module's table (review of 08d6f10)."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/loss.py": """
            from torch import nn


            def energy(x, y):
                return (x - y).sum().item()


            def gauss(x, y):
                return (x - y).pow(2).sum()


            routines = {"energy": energy}


            class M(nn.Module):
                def forward(self, x, y):
                    routines = {"gauss": gauss}
                    return routines["gauss"](x, y)
            """,
    })
    assert lint(paths)["loss.py"] == []


ROPE = """
    from functools import wraps

    import torch


    def dynamic_rope_update(rope_forward):
        print("decorating")  # runs once, at class definition: not compiled

        def longrope_frequency_update(self, position_ids):
            seq_len = torch.max(position_ids) + 1
            if seq_len > self.original_max:
                self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)

        @wraps(rope_forward)
        def wrapper(self, x, position_ids):
            longrope_frequency_update(self, position_ids)
            return rope_forward(self, x, position_ids)

        return wrapper


    def docs_only(fn):
        def note():
            print("decorating")

        note()
        return fn
    """


def test_wrapper_of_a_decorator_from_another_file_runs_compiled(tmp_path):
    """transformers 5.x: `@dynamic_rope_update` (modeling_rope_utils.py) on a rotary `forward`: its
    `functools.wraps` wrapper runs in the forward's place, and so does the helper it calls (a break
    Dynamo logs on phi3 at modeling_rope_utils.py:64). The decorator's own body, and a decorator
    without a wrapper, run at class definition: not compiled."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/rope.py": ROPE,
        "pkg/model.py": """
            from torch import nn
            from .rope import docs_only, dynamic_rope_update


            class Rotary(nn.Module):
                @dynamic_rope_update
                @docs_only
                def forward(self, x, position_ids):
                    return x * self.inv_freq
            """,
    })
    want = [(12, "GM101")]
    assert lint(paths)["rope.py"] == want
    assert lint([paths[1]])["rope.py"] == want  # the file alone: the same answer (the project index)
    fixit = subprocess.run([sys.executable, "-m", "fixit", "--rules", "graphmend_lint", "lint", "pkg/rope.py"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert "pkg/rope.py@12:" in fixit.stdout and fixit.stdout.count("TensorIf") == 1, fixit.stdout + fixit.stderr
    (tmp_path / "pkg/model.py").write_text("from torch import nn\n\n\nclass Rotary(nn.Module):\n    pass\n")
    assert lint([paths[1]])["rope.py"] == []  # no compiled def uses the decorator: nothing runs compiled


def test_wrapper_of_a_same_file_decorator_runs_compiled(tmp_path):
    paths = write(tmp_path, {"m.py": ROPE + """

    from torch import nn


    class Rotary(nn.Module):
        @dynamic_rope_update
        def forward(self, x, position_ids):
            return x * self.inv_freq
    """})
    assert lint(paths)["m.py"] == [(12, "GM101")]


def test_helper_callers_outside_the_run_are_seen_and_config_names_the_rest(tmp_path):
    """The caller (model.py) is not in the run but in the project (issue 22); a caller outside the
    project is named with `compiled-functions`."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils.py": "def helper(x):\n    print('x')\n    return x\n\n\ndef other(x):\n    print('y')\n",
        "pkg/model.py": "from torch import nn\nfrom .utils import helper\n\n\nclass M(nn.Module):\n"
                        "    def forward(self, x):\n        return helper(x)\n",
    })
    utils = [p for p in paths if p.name == "utils.py"]
    assert lint(utils)["utils.py"] == [(2, "GM201")]
    assert lint(utils, Settings(compiled_functions=("pkg.utils.other",)))["utils.py"] == [(2, "GM201"), (7, "GM201")]
    assert lint(utils, Settings(compiled_functions=("pkg.*.oth*",)))["utils.py"] == [(2, "GM201"), (7, "GM201")]


def test_inherited_methods_and_super(tmp_path):
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": """
            from torch import nn


            class Base(nn.Module):
                def norm(self, x):
                    print("norm")
                    return x

                def forward(self, x):
                    return x
            """,
        "pkg/model.py": """
            from .base import Base


            class M(Base):
                def forward(self, x):
                    x = self.norm(x)
                    return super().forward(x)
            """,
    })
    assert lint(paths)["base.py"] == [(7, "GM201")]


def test_module_bases_config(tmp_path):
    paths = write(tmp_path, {"m.py": "from lightning import LightningModule\n\n\nclass M(LightningModule):" + BREAKS})
    assert lint(paths)["m.py"] == []  # not installed: nothing to read
    assert lint(paths, Settings(module_bases=("lightning.LightningModule",)))["m.py"] == EXPECT
    assert lint(paths, Settings(module_bases=("*.LightningModule",)))["m.py"] == EXPECT


@pytest.mark.parametrize("key", ["module-bases", "compiled-functions"])
@pytest.mark.parametrize("bad", ["pkg.mod.Base", ["pkg mod"], ["justaname"], [1], ["a..b"]])
def test_config_values_are_validated(key, bad):
    with pytest.raises(ConfigError, match=key):
        from_table({key: bad})


def test_config_keys_read_and_bad_value_exits_2(tmp_path, capsys):
    s = from_table({"module-bases": ["pkg.Base", "*.Mixin"], "compiled-functions": ["pkg.utils.f"]})
    assert s.module_bases == ("pkg.Base", "*.Mixin") and s.compiled_functions == ("pkg.utils.f",)
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend]\nmodule-bases = ["not a name"]\n')
    (tmp_path / "m.py").write_text("x = 1\n")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["check", "--no-cache", "."])
    finally:
        os.chdir(old)
    assert code == 2 and "module-bases" in capsys.readouterr().err


def test_guard_wrapper_across_files(tmp_path):
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/flags.py": """
            import torch


            def compiling():
                try:
                    return torch.compiler.is_compiling()
                except Exception:
                    return False


            def maybe():
                return torch.compiler.is_compiling() and 1


            def is_tracing(tensor=None):  # transformers 5.x utils.import_utils.is_tracing
                _is_tracing = torch.compiler.is_compiling() or torch.jit.is_tracing()
                if tensor is not None:
                    _is_tracing |= hasattr(tensor, "proxy")
                return _is_tracing


            def not_tracing(tensor=None):
                found = torch.compiler.is_compiling()
                found &= tensor is not None
                return found
            """,
        "pkg/model.py": """
            import torch
            from torch import nn
            from . import flags
            from .flags import compiling, is_tracing, maybe, not_tracing


            class M(nn.Module):
                def forward(self, x):
                    if not compiling():
                        print("eager")
                    if not flags.compiling() and x.sum() > 0:
                        x = x * 2
                    if not is_tracing(x) and (x[:, -1] == 0).all():
                        x = x * 2
                    if compiling():
                        return x
                    print("after the early return")
                    return x

                def other(self, x):
                    if not maybe():
                        print("not a guard")
                    if not not_tracing(x):
                        print("not a guard either (&=)")
                    return x

            def g(m, x):
                return m.other(x)
            """,
    })
    assert lint(paths)["model.py"] == []
    # `maybe` is not a guard (one return is not a compile check): a helper that runs compiled reports
    s = Settings(compiled_functions=("pkg.model.M.other",))
    assert lint(paths, s)["model.py"] == [(23, "GM201"), (25, "GM201")]


def test_cache_key_includes_cross_file_facts(tmp_path, monkeypatch):
    """Editing only the base file changes what the subclass file reports, also with the cache."""
    monkeypatch.setenv("GRAPHMEND_CACHE_DIR", str(tmp_path / "cache"))
    paths = _base_pkg(tmp_path)
    enc = [p for p in paths if p.name == "enc_relative.py"]
    assert lint(enc, cache=True)["enc_relative.py"] == EXPECT
    assert lint(enc, cache=True)["enc_relative.py"] == EXPECT  # warm
    (tmp_path / "pkg/layers/root.py").write_text("class Root:\n    pass\n")
    assert lint(enc, cache=True)["enc_relative.py"] == []
    assert lint(paths, cache=True)["enc_absolute.py"] == []


def test_summaries_never_import(tmp_path):
    src = b"import os\nos._exit(3)\nclass A(B):\n    def forward(self):\n        return helper(1)\n"
    s = project.parse_summary(src)
    assert s["classes"] == {"A": ["B"]} and s["defs"]["A.forward"]["calls"] == ["helper"]
    assert project.parse_summary(b"def (:\n") is None


def test_summary_reads_imports_in_every_block_in_source_order():
    """Imports anywhere in statement blocks count (try/except/else/finally, if, with, loops, match
    cases, defs, classes), a block's body, else, finally, then its handlers; for one name the last
    `import x as y` wins and the first plain `import x` is kept; called names come from the def's
    text, not its docstring or comments."""
    src = (b"try:\n    import a.b as n\nexcept ImportError:\n    from .c import n\nelse:\n    import d\n"
           b"finally:\n    import e as n\nif X:\n    with w:\n        for i in r:\n            import f\n"
           b"match v:\n    case 1:\n        import g\nclass K:\n    def m(self):\n        \"helper(1)\"\n"
           b"        import h.i as j\n        return other.call (2) + super().forward(x)  # gone(3)\n"
           b"import d.sub\n")
    s = project.parse_summary(src)
    assert s["imports"] == {"n": ".c.n", "d": "d", "f": "f", "g": "g", "j": "h.i"}
    assert s["defs"]["K.m"]["calls"] == ["other.call", "super().forward"]


def test_summary_imports_with_lone_cr_line_ends():
    """Python ends a line at a lone CR too: the import search does not count lines at LF then."""
    s = project.parse_summary(b"x = 1\rdef f():\r    return 1\rdef g():\r    import os\r    return os\r")
    assert s["imports"] == {"os": "os"}


_FORWARD_CALL = re.compile(r"(?<![\w.])((?:super\(\)\.)?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\(")


@pytest.mark.parametrize("text", [
    "f(x) + a.b.c (y) + super().m(z)", "super().m(", "super()..m(", "super ().m(", "xsuper().m(",
    "super()m(", "x().m(", "1abc(", "a..b(", "ñame(", "añ(", "a.b.1c(", "f\n\t(", "f\u2003(", "((",
    "super(super().a(", "_.x_1(", "obj.super().m(",
])
def test_calls_read_backwards_equal_the_forward_pattern(text):
    """summary.calls_in reads each call from its `(` on the reversed text; it gives exactly what
    the forward pattern (a dotted name at a [\w.] boundary, then `\s*(`) gives."""
    assert summary.calls_in(text) == {m.group(1) for m in _FORWARD_CALL.finditer(text)}


def test_calls_read_backwards_equal_the_forward_pattern_on_random_text():
    parts = ["super", "()", "super().", ")(", ".", "(", ")", "a", "b1", "1", " ", "\n", "_", "ñ", "..", "x"]
    rnd = random.Random(0)
    for _ in range(20000):
        text = "".join(rnd.choice(parts) for _ in range(rnd.randint(1, 12)))
        assert summary.calls_in(text) == {m.group(1) for m in _FORWARD_CALL.finditer(text)}, text


def test_stdin_and_editor_see_cross_file_bases(tmp_path, monkeypatch, capsys):
    """`--stdin-filename` (and the language server) lint the buffer with the bases on disk."""
    import io

    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    write(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": "from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n"})
    source = "from .base import Base\n\n\nclass Enc(Base):" + textwrap.dedent(BREAKS).replace("\n", "\n    ")
    (tmp_path / "pkg" / "enc.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.encode())))
    assert main(["check", "--no-cache", "--stdin-filename", "pkg/enc.py", "-"]) == 1
    assert [line.split(": ")[1].split()[0] for line in capsys.readouterr().out.splitlines() if ": GM" in line] \
        == ["GM101", "GM201"]
    from graphmend_lint.server import Linter

    diagnostics, _, _ = Linter().lint((tmp_path / "pkg" / "enc.py").as_uri(), source)
    assert sorted(d.code for d in diagnostics) == ["GM101", "GM201"]


def test_an_edit_that_keeps_every_summary_reuses_the_last_index(tmp_path, monkeypatch):
    """A pre-commit run after an edit inside a function body, a comment or a docstring needs no
    new index: the summaries the last index read are the same, so are its facts. An edit that
    changes a summary it read (a base, a call), or makes a file a possible root, builds it again.
    Every answer equals the one of a run without the cache."""
    monkeypatch.setenv("GRAPHMEND_CACHE_DIR", str(tmp_path / "cache"))
    paths = _base_pkg(tmp_path) + write(tmp_path, {"pkg/util.py": "def helper(x):\n    return x\n"})
    enc = [p for p in paths if p.name == "enc_relative.py"]
    built = []
    real = parallel._index_project
    monkeypatch.setattr(parallel, "_index_project", lambda *a: built.append(1) or real(*a))

    def check(edit_path: str, new_text: str, rebuilds: bool, expect) -> None:
        (tmp_path / edit_path).write_text(new_text)
        built.clear()
        assert lint(enc, cache=True)["enc_relative.py"] == expect == lint(enc)["enc_relative.py"]
        assert bool(built) == rebuilds, edit_path

    assert lint(paths, cache=True)["enc_relative.py"] == EXPECT
    base = (tmp_path / "pkg/layers/base.py").read_text()
    check("pkg/layers/base.py", base + "# a comment\n", False, EXPECT)
    check("pkg/enc_relative.py", (tmp_path / "pkg/enc_relative.py").read_text().replace("x * 2", "x * 3"),
          False, EXPECT)
    check("pkg/util.py", "def helper(x):\n    return x + 1\n", False, EXPECT)  # never read: no root, no caller
    check("pkg/util.py", "class U:\n    def forward(self, x):\n        return x\n", True, EXPECT)  # may be a root now
    check("pkg/layers/root.py", "class Root:\n    pass\n", True, [])  # the base is no nn.Module any more
    check("pkg/layers/root.py", "import torch.nn as nn\n\n\nclass Root(nn.Module):\n    pass  # back\n", True, EXPECT)


GEN = ("# This file was automatically generated from src/pkg/models/child/modular_child.py.\n"
       "# Do NOT edit this file manually.\n")
LOG = """
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return x
"""


def _generated_pkg(tmp_path: Path) -> list[Path]:
    """A transformers-like modular layout: modeling_child.py is generated from modular_child.py, which
    writes one class itself, inherits `forward` for another, and pulls a third in renamed."""
    head = "import torch\nimport torch.nn as nn\n\n\n"
    return write(tmp_path, {
        "pkg/__init__.py": "", "pkg/models/__init__.py": "",
        "pkg/models/base/__init__.py": "", "pkg/models/child/__init__.py": "",
        "pkg/models/base/modeling_base.py": head + "class BaseLayer(nn.Module):" + LOG
                                             + "\n\nclass BaseEncoder(nn.Module):" + LOG,
        "pkg/models/child/modular_child.py": head + "from ..base.modeling_base import BaseEncoder\n\n\n"
                                             "class ChildEncoder(BaseEncoder):\n    pass\n\n\n"
                                             "class ChildOwn(nn.Module):" + LOG,
        "pkg/models/child/modeling_child.py": GEN + head + "class ChildEncoder(nn.Module):" + LOG
                                              + "\n\nclass ChildOwn(nn.Module):" + LOG
                                              + "\n\nclass ChildLayer(nn.Module):" + LOG
                                              + "\n\nclass Unknown(nn.Module):" + LOG,
    })


def test_generated_file_says_where_its_code_is_written(tmp_path):
    """A generated file gets no fix; the message names the file that holds the code: its modular
    source when that writes the def, else the base class (or the renamed class) it was copied from."""
    paths = _generated_pkg(tmp_path)
    gen = next(p for p in paths if p.name == "modeling_child.py")
    for run in ([gen], paths):  # one file (pre-commit) or the whole tree: the same answer
        outs = parallel.check_files(run, Settings(), jobs=1, use_cache=False)
        msgs = {f.line: f.message for o in outs if o.path == gen for f in o.findings}
        assert len(msgs) == 4 and all("no fix: this file is generated" in m for m in msgs.values())
        by_class = dict(zip(("ChildEncoder", "ChildOwn", "ChildLayer", "Unknown"), (msgs[k] for k in sorted(msgs))))
        assert by_class["ChildOwn"].endswith("fix `src/pkg/models/child/modular_child.py` and generate the file again")
        assert ("`ChildEncoder.forward` is not written in `src/pkg/models/child/modular_child.py`: the generator "
                "copied it from `BaseEncoder.forward` in `pkg.models.base.modeling_base`") in by_class["ChildEncoder"]
        assert "copied it from `BaseLayer.forward` in `pkg.models.base.modeling_base`" in by_class["ChildLayer"]
        assert "`Unknown.forward` is not written in" in by_class["Unknown"] and "fix it where it is written" in \
            by_class["Unknown"]


def test_generated_file_without_its_source_keeps_the_header_message(tmp_path):
    paths = _generated_pkg(tmp_path)
    (tmp_path / "pkg/models/child/modular_child.py").unlink()
    gen = next(p for p in paths if p.name == "modeling_child.py")
    outs = parallel.check_files([gen], Settings(), jobs=1, use_cache=False)
    msgs = [f.message for o in outs for f in o.findings]
    assert len(msgs) == 4 and all(m.endswith("fix `src/pkg/models/child/modular_child.py` and generate the file again")
                                  for m in msgs)


def test_generator_called_from_compiled_code_is_not_an_entry(tmp_path):
    """GM912 is for a generator that Dynamo enters as a frame (it then skips it). A generator that
    compiled code calls is traced inline: peft's `@contextmanager def _enable_peft_forward_hooks`,
    used in `with` by a `forward` (measured on torch 2.13: 1 graph, 0 breaks), was reported once the
    project index called it compiled. Entries from other files still count: an inherited `forward`
    and a `torch.compile(fn)` target."""
    paths = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/hooks.py": """
            import contextlib


            @contextlib.contextmanager
            def gathered(x):
                yield x


            def steps(x):
                yield x


            def compiled_gen(x):
                yield x


            class Mixin:
                def forward(self, x):
                    yield x
            """,
        "pkg/model.py": """
            import contextlib

            import torch
            from torch import nn

            from .hooks import Mixin, compiled_gen, gathered, steps


            class M(nn.Module):
                @contextlib.contextmanager
                def hooks(self):
                    yield

                def forward(self, x):
                    with self.hooks(), gathered(x):
                        return sum(steps(x))


            class N(Mixin, nn.Module):
                pass


            fast = torch.compile(compiled_gen)
            """,
    })
    got = lint(paths)
    assert got["model.py"] == []
    assert got["hooks.py"] == [(15, "GM912"), (20, "GM912")]
    assert lint([paths[1]])["hooks.py"] == [(15, "GM912"), (20, "GM912")]  # the file alone: the same
