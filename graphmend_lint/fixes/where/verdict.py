"""What a GM1xx proof found: a `Verdict` (refusal, missing proofs, double-where guard), the kinds
of trace-time check a missing proof may have, and `Gap`, a missing proof with what it is about."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

FLOAT_DTYPES = {"float16", "float32", "float64", "bfloat16", "half", "float", "double"}
FINFO_ATTRS = {"max", "min", "eps", "tiny", "resolution", "smallest_normal"}
SHAPES = "shapes"  # Prover.checks value: compare shapes and dtypes of the bound branch values
# Prover.checks value: a proof only the eager path needs. Printing a tensor shows its grad_fn
# (WhereBackward0 after torch.where); under torch.compile a value handed across a break carries the
# compiled graph's grad_fn (CompiledFunctionBackward) either way, and a print guarded by
# `if not is_compiling()` does not run there at all.
EAGER_ONLY = "eager only"
GRAD_OFF = "gradients off"  # holds with gradients off: the compiled form checks `not torch.is_grad_enabled()`
SYMBOLS = {"Add": "`+`", "Subtract": "`-`", "Multiply": "`*`", "Divide": "`/`", "Power": "`**`"}


@dataclass
class Verdict:
    refuse: str | None = None
    missing: list[str] = field(default_factory=list)
    # double where: (base name, guard side a, guard side b) -- the side's base is replaced by
    # torch.where(c, base, 1.0) so its untaken evaluation has finite derivatives
    guard: tuple[str, bool, bool] | None = None
    logged: list[str] = field(default_factory=list)  # missing proofs: print/logging calls left to eager

    def add(self, other: Verdict) -> Verdict:
        if self.refuse is None:
            self.refuse = other.refuse
        self.guard = self.guard or other.guard
        for m in other.missing:
            if m not in self.missing:
                self.missing.append(m)
        return self


@dataclass
class Chain:
    """`expr` is a chain of shape-preserving ops applied to the name `base`."""

    base: str
    needs_float: bool  # some op keeps the dtype only for floating tensors
    ops: list[str]  # op names, outermost first
    bad_grad: list[str]  # ops whose derivative is not finite everywhere
    autocast: list[str] = field(default_factory=list)  # ops CUDA autocast runs in float32 (Op.autocast)


class GapKind(enum.Enum):
    """What a missing proof about the code after the statement is about."""

    SHOWN = "shown"  # printed, logged or formatted later: only eager shows the grad_fn (EAGER_ONLY)
    GRAD_FN_READ = "grad_fn read"  # `.grad_fn` is read: compiled code reads it too
    MUTATED = "mutated"  # modified in place later


@dataclass(frozen=True)
class Gap:
    why: str  # the missing proof, as the user reads it
    kind: GapKind
