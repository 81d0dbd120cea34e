"""Names a rule had before issue 21 gave each rule one name (file, class, Fixit name and NAME agree).

Keyed by rule code. A former Fixit name still suppresses the rule (`# lint-ignore: ScalarConversion`,
see `base.GraphMendRule.ignore_lint`), and `graphmend-lint rule` still finds a rule by any of them.
Add a rule's old names here when renaming it; never reuse one for another rule.
"""
from __future__ import annotations

FORMER_NAMES: dict[str, tuple[str, ...]] = {
    "GM102": ("tensor-ifexp",),
    "GM904": ("ScalarConversion",),
    "GM905": ("DynamicShapeOp",),
    "GM906": ("TensorSliceBound",),
    "GM907": ("DisabledCall",),
    "GM908": ("TimeCall",),
    "GM909": ("DataPtr",),
    "GM910": ("RandomModule",),
    "GM911": ("DeepcopyTensor",),
    "GM912": ("GeneratorForward", "generator-in-compiled-code"),
}


def fixit_aliases(code: str) -> tuple[str, ...]:
    """The former Fixit names of rule `code` (those a `# lint-ignore:` comment may still use)."""
    return tuple(n for n in FORMER_NAMES.get(code, ()) if "-" not in n)
