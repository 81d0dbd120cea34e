"""GM3xx details the fixtures do not pin down: message reduction, idempotence, layouts, imports."""
from __future__ import annotations

import re

import textwrap

import libcst as cst
import pytest
from fixture_io import FIXTURES

from fixit.testing import generate_lint_rule_test_cases

from graphmend_lint import engine
from graphmend_lint.fixes import trap as _trap
from graphmend_lint.rules import ALL_RULES
from graphmend_lint.settings import Settings

GM3 = Settings(select=("GM3",))
GM3_RULES = [r for r in ALL_RULES if r.CODE.startswith("GM3")]

# The rules' own VALID/INVALID cases (Fixit wants rule instances, not classes).
for _case in generate_lint_rule_test_cases([r() for r in GM3_RULES]):
    _case.__module__ = __name__
    globals()[f"Test{_case.__name__}"] = _case
del _case

def unwrap(text: str) -> str:
    """Fixed lines are wrapped as `ruff format` would: their one-line form, for substring checks."""
    text = re.sub(r"\(\n\s*", "(", text)
    text = re.sub(r",?\n\s*\)", ")", text)
    return re.sub(r",\n\s*", ", ", text)



def test_gm3_rules_are_collected():
    assert [r.CODE for r in GM3_RULES] == ["GM301", "GM302", "GM303", "GM304"]
    assert sum(len(r.VALID) + len(r.INVALID) for r in GM3_RULES) >= 12


@pytest.mark.parametrize("source,compiled,full", [
    ('"plain"', "plain", True),
    ('"a" "b"', "ab", True),
    ('f"vocab_size: {n}"', "vocab_size: ", False),
    ('f"{{literal braces}} {x!r:>5} end"', "{literal braces}  end", False),
    ('f"tab\\t{x}\\n"', "tab\t\n", False),
    ('rf"\\d+ {x}"', "\\d+ ", False),
    ('"a " f"{x} b"', "a  b", False),
    ("f'''multi\nline {x}'''", "multi\nline ", False),
])
def test_message_under_compile(source, compiled, full):
    assert _trap.message_value(cst.parse_expression(source)) == (compiled, full)
    assert eval(_trap.literal(compiled)) == compiled  # noqa: S307 - the emitted literal round-trips


@pytest.mark.parametrize("source", ['"a" + str(x)', "msg", '"%d" % n', 'b"bytes"'])
def test_other_messages_are_not_reduced(source):
    assert _trap.message_value(cst.parse_expression(source)) is None


def fix(source: str, settings: Settings = GM3) -> engine.Result:
    return engine.check(textwrap.dedent(source).encode(), settings, fix=True)


def test_fixed_fixtures_are_clean_and_stable():
    """Linting a fixed file finds nothing more to fix, and fixing it again changes nothing."""
    fixed = sorted(p for d in ("GM301", "GM302", "GM303") for p in (FIXTURES / d).glob("*.fixed.py"))
    assert len(fixed) >= 10
    for path in fixed:
        source = path.read_bytes()
        again = engine.check(source, Settings(select=("GM3",), unsafe_fixes=True), fix=True)
        assert again.source == source, path.name
        assert all(f.replacement is None for f in again.findings), path.name


def test_two_space_indentation_and_added_import():
    result = fix(
        """
        from torch import nn


        class M(nn.Module):
          def forward(self, x):
            if x.sum() > 0:  # positive sums are invalid
              raise ValueError("positive")
            return x
        """
    )
    text = result.source.decode()
    assert text.startswith("import torch\n") or "\nimport torch\n" in text
    assert (
        "  def forward(self, x):\n"
        "    if not torch.compiler.is_compiling():\n"
        "      if x.sum() > 0:  # positive sums are invalid\n"
        "        raise ValueError(\"positive\")\n"
        "    else:\n"
        "      torch._assert_async(torch.logical_not(x.sum() > 0), \"positive\")\n"
        "    return x\n"
    ) in text
    compile(text, "<fixed>", "exec")


def test_aliases_are_respected():
    text = fix(
        """
        import torch as th
        from torch import nn


        class M(nn.Module):
            def forward(self, a, b):
                if not th.equal(a, b):
                    raise RuntimeError("a != b")
                return a
        """
    ).source.decode()
    assert "if not th.compiler.is_compiling():" in text
    assert "th._assert_async((a == b).all(), \"a != b\")" in text
    assert "import torch\n" not in text


def test_multiline_condition_keeps_valid_syntax():
    text = fix(
        """
        import torch
        from torch import nn


        class M(nn.Module):
            def forward(self, labels):
                if (labels is not None
                        and labels.max()
                        >= 10):
                    raise ValueError(
                        f"labels must be < 10, got {labels.max()}"
                    )
                return labels
        """
    ).source.decode()
    compile(text, "<fixed>", "exec")
    assert '"labels must be < 10, got <labels.max(): not available under torch.compile>"' in text


def test_unsafe_fix_only_with_unsafe_fixes():
    source = """
        import torch
        from torch import nn

        from mylib import MaskError


        class M(nn.Module):
            def forward(self, m):
                if m.max() > 1:
                    raise MaskError("mask values must be 0 or 1")
                return m
        """
    safe = fix(source)
    assert safe.fixed == 0 and safe.findings[0].safety.value == "unsafe"
    assert "not a builtin exception" in safe.findings[0].message
    assert fix(source, Settings(select=("GM3",), unsafe_fixes=True)).fixed == 1


def test_shadowed_builtin_exception_is_not_trusted():
    result = fix(
        """
        import torch
        from torch import nn


        class ValueError(Exception):
            def __str__(self):
                return "custom"


        class M(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    raise ValueError("positive")
                return x
        """
    )
    assert result.fixed == 0 and result.findings[0].safety.value == "unsafe"


def test_llava_style_count_check_is_fixed():
    """`mask.sum() != features.shape[:-1].numel()` compares a 0-d tensor with an int."""
    text = fix(
        """
        import torch
        from torch import nn


        class M(nn.Module):
            def forward(self, image_to_overwrite, image_features):
                if image_to_overwrite.sum() != image_features.shape[:-1].numel():
                    raise ValueError(f"{image_to_overwrite.sum()} tokens but {image_features.shape[:-1].numel()} features")
                return image_features
        """
    ).source.decode()
    flat = " ".join(text.split()).replace("( ", "(").replace(" )", ")")  # long lines are wrapped
    assert "torch.logical_not(image_to_overwrite.sum() != image_features.shape[:-1].numel())" in flat


def test_unknown_operands_are_not_assumed_scalar():
    """`torch.min(x) < bound` with `bound` of unknown type may broadcast: no fix."""
    result = fix(
        """
        import torch
        from torch import nn


        class M(nn.Module):
            def forward(self, inputs, tail_bound):
                if torch.min(inputs) < -tail_bound:
                    raise ValueError("out of domain")
                return inputs
        """
    )
    assert result.fixed == 0 and "not provably a single value" in result.findings[0].message


def test_zero_dim_against_an_unproved_attribute_is_an_unsafe_fix():
    """`labels.max() >= self.vocab_size`: one value only if the attribute is a number (not proved)."""
    source = """
        import torch
        from torch import nn


        class Head(nn.Module):
            def forward(self, logits, labels):
                if labels.max() >= self.vocab_size:
                    raise ValueError("label out of range")
                return logits
        """
    safe = fix(source)
    assert safe.fixed == 0 and safe.findings[0].safety.value == "unsafe"
    assert "`self.vocab_size` is not provably a Python number" in safe.findings[0].message
    unsafe = fix(source, Settings(select=("GM3",), unsafe_fixes=True))
    assert unsafe.fixed == 1
    assert 'torch._assert_async(torch.logical_not(labels.max() >= self.vocab_size), "label out of range")' \
        in unwrap(unsafe.source.decode())


def test_sizes_unpacked_from_a_shape_are_scalars():
    source = """
        import torch
        from torch import nn


        class M(nn.Module):
            def forward(self, hidden, spatial_shapes):
                batch_size, sequence_length, _ = hidden.shape
                if (spatial_shapes[:, 0] * spatial_shapes[:, 1]).sum() != sequence_length:
                    raise ValueError("spatial shapes do not match the sequence length")
                return hidden
        """
    assert fix(source).fixed == 1
    # the same name bound by a loop (an arbitrary value, maybe a tensor): no fix
    looped = source.replace("batch_size, sequence_length, _ = hidden.shape",
                            "for batch_size, sequence_length in pairs:\n                    pass")
    assert fix(looped).fixed == 0


def test_sizes_rebound_by_an_augmented_assignment_are_not_trusted():
    result = fix(
        """
        import torch
        from torch import nn


        class M(nn.Module):
            def forward(self, hidden, t):
                batch_size, sequence_length, _ = hidden.shape
                for i in range(3):
                    pass
                sequence_length //= t
                if hidden.sum() != sequence_length:
                    raise ValueError("mismatch")
                return hidden
        """
    )
    assert result.fixed == 0


SKIPPED = """
import torch
from torch import nn


class M(nn.Module):
    def forward(self, label, lengths, x, y, z):
        {line}
        return x * 2
"""


@pytest.mark.parametrize("line,code,fixed", [
    # espnet2 cls `label_to_onehot`: with no labels, `label.min()` raises; Python never evaluates it there
    ('assert lengths.min() == lengths.max() or label.min() == -1, "pad"', "GM302", False),
    ('if (x > 0).all() and y.max() > 5:\n            raise ValueError("bad")', "GM301", False),
    ('if (x > 0).all() and y.sum() > 0 and y.amin() < 0:\n            raise ValueError("bad")', "GM301", False),
    ('torch._assert((x > 0).all() or y.amax() > 0, "c")', "GM303", False),
    # operands that cannot raise stay fixed
    ('assert (x > 0).all() or (z < 1).all(), f"bad {x.shape}"', "GM302", True),
    ('if (x > 0).all() and (z < 2).any():\n            raise ValueError("bad")', "GM301", True),
    # ... nor a reduction of a tensor that one in the first operand took whole (vits: empty raised there)
    ('if torch.min(x) < 0 or torch.max(x) > 1:\n            raise ValueError("range")', "GM301", True),
    ('if x.min() < 0 or y.max() > 1:\n            raise ValueError("range")', "GM301", False),
    ('if x.min(dim=0).values.sum() < 0 or x.max() > 1:\n            raise ValueError("range")', "GM301", False),
    # the first operand always runs, in both: it may raise
    ('if y.max() > 5 and (x > 0).all():\n            raise ValueError("bad")', "GM301", True),
])
def test_and_or_operand_that_python_may_skip_must_not_raise(line, code, fixed):
    """torch.logical_and/or evaluate every operand; `and`/`or` skip the later ones. A later operand
    that raises (a reduction of an empty tensor) would make the compiled check raise where the
    original ran on: no fix then."""
    (f,) = [f for f in engine.check(SKIPPED.format(line=line).encode(), GM3).findings if f.code == code]
    assert (f.replacement is not None) == fixed, f.message
    if not fixed:
        assert "which Python may skip" in f.message and "raises on an empty tensor" in f.message, f.message


def test_no_fix_reason_names_an_operand_not_known_while_tracing():
    """torchgeo's `if self.assert_range and not in_range: raise`: no fix, because `self.assert_range`
    is not provably a trace-time value (the test may be it or the tensor), not because the test
    reads tensor data (the audit found that reason misleading)."""
    from graphmend_lint import engine
    from graphmend_lint.settings import Settings

    src = b'''import torch
from torch import nn


class A(nn.Module):
    def forward(self, x: torch.Tensor):
        ok = torch.all(x.abs() <= 1.0)
        if self.assert_range and not ok:
            raise AssertionError("out of range")
        if bool(ok.any()) and not ok:
            raise AssertionError("out of range")
        return x
'''
    first, second = engine.check(src, Settings()).findings
    assert "`self.assert_range` is not provably known while tracing" in first.message
    assert "reads a Python value from tensor data" in second.message
