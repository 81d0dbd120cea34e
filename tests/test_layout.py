"""Produced code as maintainers write it: wrapped as `ruff format` would, imports where isort puts
them, adjacent guards merged, the file's own guard helper, no fix in generated files."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from graphmend_lint import engine, settings
from graphmend_lint.analysis import project
from graphmend_lint.analysis.filecontext import FileContext
from graphmend_lint.cli import main
from graphmend_lint.fixes import layout

pytest.importorskip("ruff")


def ruff(*args: str, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], input=stdin, capture_output=True, text=True)


def ruff_formatted(source: str, line_length: int, lines: tuple[int, int] | None = None) -> str:
    """`ruff format` of `source` (only lines a..b when given), with nothing but the line length set."""
    rng = [f"--range={lines[0]}-{lines[1]}"] if lines else []
    proc = ruff("format", "--isolated", f"--line-length={line_length}", *rng, "--stdin-filename", "x.py", "-",
                stdin=source)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def changed_span(before: str, after: str) -> tuple[int, int]:
    touched = layout.changed_lines(before, after)
    return min(touched), max(touched) + 1


def fix(source: str, line_length: int = 88, **kw) -> str:
    s = settings.Settings(line_length=line_length, **kw)
    return engine.check(source.encode(), s, fix=True).source.decode()


STATEMENTS = [
    'torch._assert_async(torch.logical_not(torch.isnan(hidden_states).any()), "hidden states contain nan values")',
    'torch._assert_async(torch.logical_not(torch.logical_or(torch.isnan(hidden_states).any(), '
    'torch.isinf(hidden_states).any())), "the hidden states of the encoder layer contain nan or inf values")',
    'hidden_states = torch.where(attention_mask.sum() > 0, hidden_states * scale_factor, hidden_states - offset_value)',
    'logger.warning_once("the attention mask has no positive entries; this model will ignore the padding tokens")',
    'raise ValueError("the hidden states of the encoder layer contain nan or inf values, which is not allowed")',
    'assert (attention_mask.sum(dim=-1) > 0).all(), "every sequence in the batch needs at least one token here"',
    'assert (attention_mask.sum(dim=-1) > 0).all(), f"every sequence needs a token, got {attention_mask.shape}"',
    # a test too long for `assert <test>, (`: ruff splits the test's brackets, the message after `)`
    'assert torch.logical_or(label_lengths.min() == label_lengths.max(), label.min() == -1), "Pad value should be -1"',
    'return torch.where(torch.isfinite(hidden_states), hidden_states, torch.zeros_like(hidden_states)) * scale',
    'output = self.output_projection(torch.nn.functional.gelu(self.intermediate_dense(hidden_states)), bias=b)',
    'if torch.compiler.is_compiling() and hidden_states.shape == residual.shape and hidden_states.dtype == dt:',
    # a bare tuple (GM101's tuple return): the last element's bracket, else an earlier one's, then the rest
    'return torch.where(h.mean() > 0, torch.tanh(torch.where(h.mean() > 0, h, 1.0)), h2), torch.where(c, h, g)',
    'return torch.where((h > 0).any(), F.gelu(torch.where((h > 0).any(), h, 1.0)), h), '
    'torch.where((h > 0).any(), torch.tanh(torch.where((h > 0).any(), h, 1.0)), h * 0.5)',
    'return hidden_states, torch.where(attention_mask.sum() > 0, hidden_states * scale_factor, hidden_states)',
    'return torch.where(cond, hidden_states * scale_factor, hidden_states), attention_mask, position_ids, cache',
    'return torch.where(attention_mask.sum() > 0, hidden_states * scale_factor, hidden_states), hidden_states',
    'y = torch.where(attention_mask.sum() > 0, hidden_states * scale_factor, hidden_states), attention_mask[0]',
    'return torch.where(attention_mask.sum() > 0, hidden_states * scale_factor, hidden_states), attention_mask[0]',
    'y = torch.where(attention_mask.sum() > 0, hidden_states * scale_factor, hidden_states), torch.where(c, h, g)',
    'y = hidden_states, torch.where(attention_mask.sum() > 0, hidden_states * scale_factor, hidden_states)',
    'return hidden_states, torch.where(attention_mask.sum() > 0, hidden_states * scale_factor, hidden_states * 2)',
    # a call's sole generator argument (the GM101 no-op guards' broadcast check): no trailing comma
    'if torch.compiler.is_compiling() and all(a in (1, b) for a, b in zip(mask[:, :, None].shape[::-1], h.shape[::-1])) '
    'and not mask.requires_grad:',
    'ok = all(a in (1, b) for a, b in zip(attention_mask[:, :, None].shape[::-1], hidden_states.shape[::-1]) if a)',
]


@pytest.mark.parametrize("line_length", [60, 79, 88, 119])
@pytest.mark.parametrize("statement", STATEMENTS)
def test_wrapped_lines_are_stable_under_ruff_format(statement, line_length):
    body = statement + ("\n            pass" if statement.endswith(":") else "")
    source = f"class M:\n    def forward(self, hidden_states):\n        {body}\n"
    module = cst.parse_module(source)
    wrapped = layout.wrap(module, set(range(1, 10)), line_length).code
    assert layout.same_ast(source, wrapped)
    assert ruff_formatted(wrapped, line_length) == wrapped, wrapped
    if len(source.splitlines()[2]) > line_length:
        assert wrapped != source


def test_wrap_leaves_untouched_lines_alone():
    long = "x = foo(aaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbb, cccccccccccccccccccccccc, ddddddddddddddddd)\n"
    module = cst.parse_module(long + long)
    assert layout.wrap(module, {2}, 88).code.startswith(long)


MODEL = '''\
from torch import nn


class M(nn.Module):
    def forward(self, hidden_states, attention_mask):
        if torch.isnan(hidden_states).any() or torch.isinf(hidden_states).any():
            raise ValueError("the hidden states of the encoder layer contain nan or inf values, which is not allowed")
        torch._assert((hidden_states.abs() < 1e4).all(), "hidden states exploded beyond the range this model can handle")
        print("encoder input", tuple(hidden_states.shape))
        print("mask", tuple(attention_mask.shape))
        return hidden_states
'''


@pytest.mark.parametrize("line_length", [60, 88, 119])
def test_fixed_region_is_ruff_format_clean(line_length):
    source = ruff_formatted(MODEL, line_length)  # a file that was clean before
    fixed = fix(source, line_length)
    assert fixed != source and "torch._assert_async(" in fixed
    assert all(len(line) <= line_length for line in fixed.splitlines() if '"' not in line)  # strings cannot split
    assert ruff_formatted(fixed, line_length, changed_span(source, fixed)) == fixed
    assert ruff_formatted(fixed, line_length) == fixed  # here the whole file, too


def test_line_length_comes_from_the_ruff_config(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n\n[tool.ruff]\nline-length = 60\n")
    path = tmp_path / "m.py"
    path.write_text(MODEL)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["check", "--no-cache", "--fix", "--select", "GM3", "m.py"]) == 0
    finally:
        os.chdir(old)
    new = path.read_text()
    changed = layout.changed_lines(MODEL, new)
    assert all(len(new.splitlines()[n - 1]) <= 60 or '"' in new.splitlines()[n - 1] for n in changed)


def test_settings_line_length_discovery(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    assert settings.find_line_length(tmp_path) == 100
    (tmp_path / "ruff.toml").write_text("line-length = 120\n")
    assert settings.find_line_length(tmp_path) == 120
    assert settings.find_line_length(Path("/")) == 88


@pytest.mark.parametrize("imports, expected", [
    ("from torch import nn\n", "import torch\nfrom torch import nn\n"),
    ("import os\n\nfrom torch import nn\n", "import os\n\nimport torch\nfrom torch import nn\n"),
    ("import numpy as np\nfrom torch import nn\n", "import numpy as np\nimport torch\nfrom torch import nn\n"),
    ("import numpy as np\nimport torch.nn as nn\nimport zarr\n",
     "import numpy as np\nimport torch\nimport torch.nn as nn\nimport zarr\n"),
    ("import os\n\nfrom torch import nn\n\nfrom .x import y\n",
     "import os\n\nimport torch\nfrom torch import nn\n\nfrom .x import y\n"),
    ("from __future__ import annotations\n\nimport os\n\nfrom torch import nn\n",
     "from __future__ import annotations\n\nimport os\n\nimport torch\nfrom torch import nn\n"),
])
def test_import_torch_goes_where_isort_puts_it(imports, expected):
    tail = "\n\nclass M(nn.Module):\n    def forward(self, x):\n        print(x)\n        return x\n"
    source = imports + tail
    fixed = fix(source, compiled_scope="all")
    assert fixed.startswith(expected), fixed
    assert ruff("check", "--isolated", "--select", "I001", "--stdin-filename", "x.py", "-", stdin=fixed).returncode == 0
    assert ruff_formatted(fixed, 88) == fixed


@pytest.mark.parametrize("imports", ["", "import numpy as np\nimport zarr\n", "import os\n\nfrom .x import nn\n",
                                     "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import torch\n",
                                     "import typing\n\nif typing.TYPE_CHECKING:\n    import torch as th\n"])
def test_no_import_torch_added_to_a_module_without_one(imports):
    """A module with no unconditional module-level torch import stays importable without torch
    (issue 24): the fix that would need `import torch` is not offered. An import under
    `if TYPE_CHECKING:` binds nothing at run time: a guard spelled with it raised NameError
    (transformers 5.18's utils/import_utils.py, fixed with the 6b12397 linter)."""
    source = f'"""Doc."""\n\n{imports}\n\nclass M:\n    def forward(self, x):\n        print(x)\n        return x\n'
    assert fix(source, compiled_scope="all") == source


def test_adjacent_guards_are_merged():
    source = textwrap.dedent("""\
        import torch
        from torch import nn


        class M(nn.Module):
            def forward(self, x):
                print("a", x.shape)
                print("b")

                print("c")
                return x
        """)
    fixed = fix(source, log_strategy="guard")  # the guards' layout (the deferred form has an `else`)
    assert fixed.count("is_compiling()") == 2, fixed
    assert ("        if not torch.compiler.is_compiling():\n            print(\"a\", x.shape)\n"
            "            print(\"b\")\n\n        if not torch.compiler.is_compiling():\n            print(\"c\")\n") in fixed


def test_guard_merges_with_an_existing_guard_next_to_it():
    source = textwrap.dedent("""\
        import torch
        from torch import nn


        class M(nn.Module):
            def forward(self, x):
                if not torch.compiler.is_compiling():
                    print("a")
                print("b")
                return x
        """)
    fixed = fix(source, log_strategy="guard")
    assert fixed.count("is_compiling()") == 1 and '            print("a")\n            print("b")\n' in fixed


TRANSFORMERS_STYLE = """\
import torch
from torch import nn

from ...utils import is_torchdynamo_compiling, logging

logger = logging.get_logger(__name__)


class M(nn.Module):
    def forward(self, x):
        logger.warning_once("x")
        if not is_torchdynamo_compiling() and x.shape[0] > 2:
            print("already guarded")
        return x
"""


def test_the_files_own_guard_helper_is_used():
    fixed = fix(TRANSFORMERS_STYLE, log_strategy="guard")
    assert "        if not is_torchdynamo_compiling():\n            logger.warning_once(\"x\")\n" in fixed
    assert "torch.compiler" not in fixed


def test_no_second_guard_inside_an_existing_one():
    s = settings.Settings()
    findings = engine.check(TRANSFORMERS_STYLE.encode(), s).findings
    assert [f.line for f in findings] == [11]  # the guarded print() on line 13 runs only in eager


GENERATED = """\
#           This file was automatically generated from src/transformers/models/gemma/modular_gemma.py.
#               Do NOT edit this file manually as any edits will be overwritten by the generation of
#             the file from the modular. If any change should be done, please apply the change to the
#                          modular_gemma.py file directly. One of our CI enforces this.
import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        print("x", x.shape)
        return x
"""


def test_generated_file_gets_no_fix_and_names_its_source():
    s = settings.Settings()
    result = engine.check(GENERATED.encode(), s, fix=True)
    assert result.fixed == 0 and result.source.decode() == GENERATED
    (finding,) = result.findings
    assert finding.replacement is None and "src/transformers/models/gemma/modular_gemma.py" in finding.message
    assert "generated" in finding.message


@pytest.mark.parametrize("header", ["# This file is autogenerated by the command `make fix-copies`, do not edit.",
                                    "# @generated by tool x"])
def test_other_generated_headers(header):
    source = header + "\n" + GENERATED.split("\n", 4)[4]
    result = engine.check(source.encode(), settings.Settings(), fix=True)
    assert result.fixed == 0 and "generated" in result.findings[0].message


def test_generated_header_after_the_module_docstring():
    """tsai (nbdev): a docstring, then `# AUTOGENERATED! DO NOT EDIT! File to edit: ../nbs/x.ipynb.`:
    lint said "generated" (the skeleton drops the docstring) while --fix fixed the file; every mode
    now reads the header after a docstring, and the project summary says the same. A `#` line
    inside the docstring is not a header."""
    body = GENERATED.split("\n", 4)[4]
    source = '"""Docs."""\n\n# AUTOGENERATED! DO NOT EDIT! File to edit: ../nbs/027_mvp.ipynb.\n\n' + body
    for skeleton in (True, False):
        result = engine.check(source.encode(), settings.Settings(skeleton=skeleton), fix=True)
        assert result.fixed == 0 and "this file is generated" in result.findings[0].message
    assert project.parse_summary(source.encode())["gen"] == ""  # generated; nbdev's notebook is not a module
    inside = '"""Docs.\n\n# AUTOGENERATED! DO NOT EDIT!\n"""\n' + body
    assert engine.check(inside.encode(), settings.Settings(), fix=True).fixed == 1
    assert "gen" not in project.parse_summary(inside.encode())


def test_a_comment_about_generation_further_down_is_not_a_header():
    source = GENERATED.split("\n", 4)[4].replace("        return x", "        # do not edit this line\n        return x")
    assert engine.check(source.encode(), settings.Settings(), fix=True).fixed == 1


def test_line_changes_turn_old_into_new():
    """The changed runs (common start and end set aside before difflib) rebuild the new lines."""
    import random

    rng = random.Random(0)
    for _ in range(2000):
        old = [rng.choice("abcde") for _ in range(rng.randint(0, 12))]
        new = list(old)
        for _ in range(rng.randint(0, 3)):
            k = rng.randint(0, len(new))
            r = rng.random()
            if r < 0.4:
                new.insert(k, rng.choice("abcdeX"))
            elif new:
                new[min(k, len(new) - 1):min(k, len(new) - 1) + 1] = [] if r < 0.7 else [rng.choice("abX")]
        out = list(old)
        for i1, i2, j1, j2 in reversed(layout.line_changes(old, new)):
            assert old[i1:i2] != new[j1:j2]
            out[i1:i2] = new[j1:j2]
        assert out == new, (old, new)
    assert layout.line_changes(list("abc"), list("abc")) == []
    assert layout.line_changes(list("abcd"), list("abXd")) == [(2, 3, 2, 3)]


@pytest.mark.parametrize("source", ["x = 1\n", "x = 1", "", "\n", "# c", "# c\n", "# h\n\nclass A:\n    pass\n# f\n"])
def test_module_parts_add_up_to_its_code(source):
    module = cst.parse_module(source)
    assert engine._Parts.of(FileContext(module, settings.Settings()))[0] == module.code


def test_deferred_form_uses_the_files_own_guard_helper():
    """With the default `log-strategy = "defer"` the branch test is the project's helper too; only
    the deferred helper's decorator and registration spell torch (the module imports it)."""
    fixed = fix(TRANSFORMERS_STYLE)
    assert "torch.compiler.is_compiling" not in fixed and "if not is_torchdynamo_compiling():" in fixed
    assert "@torch.compiler.disable\ndef _graphmend_" in fixed
