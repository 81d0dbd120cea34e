"""How a file imports torch: resolve local names to qualified names, and spell them back."""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from .. import fastwalk  # read-only walk without libcst's node rebuilding


_ATTRIBUTE, _NAME = cst.Attribute, cst.Name  # classes without subclasses


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` -> "a.b.c" for Name/Attribute chains, else None."""
    parts: list[str] = []
    while node.__class__ is _ATTRIBUTE:  # exact classes: libcst's isinstance goes through ABCMeta
        parts.append(node.attr.value)
        node = node.value
    if node.__class__ is _NAME:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


class ReadNames(cst.CSTVisitor):
    """The Name nodes a node reads as variables: not attribute names (`x.y` reads `x`) nor keyword
    names (`f(dim=d)` reads `f` and `d`). Module-level: a visitor class made per call is a cycle that
    keeps the nodes its methods hold until the cyclic collector runs."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[cst.Name] = []

    def visit_Name(self, n: cst.Name) -> None:
        self.names.append(n)

    def visit_Attribute(self, n: cst.Attribute) -> bool:
        fastwalk.visit(n.value, self)
        return False

    def visit_Arg(self, n: cst.Arg) -> bool:
        fastwalk.visit(n.value, self)
        return False


def _module_name(node: cst.BaseExpression) -> str:
    name = dotted(node)
    assert name is not None
    return name


class _ImportCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.top: dict[str, str] = {}  # module-level imports only, not `if TYPE_CHECKING:` (what a fix may spell)
        self._depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._depth += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._depth += 1

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._depth -= 1

    def visit_If(self, node: cst.If) -> bool:
        if dotted(node.test) not in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            return True
        self._depth += 1  # bound for type checkers only, never at run time: a fix must not spell them
        fastwalk.visit(node.body, self)
        self._depth -= 1
        if node.orelse is not None:
            fastwalk.visit(node.orelse, self)
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine | cst.SimpleStatementSuite) -> bool:
        for stmt in node.body:  # imports are small statements: their expressions need no walk
            if isinstance(stmt, cst.Import):
                self.visit_Import(stmt)
            elif isinstance(stmt, cst.ImportFrom):
                self.visit_ImportFrom(stmt)
        return False

    visit_SimpleStatementSuite = visit_SimpleStatementLine

    def _add(self, local: str, target: str) -> None:
        self.aliases[local] = target
        if self._depth == 0:
            self.top[local] = target

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._add(alias.asname.name.value, full)
            else:
                # `import torch.nn` binds `torch`
                top = full.split(".")[0]
                self._add(top, top)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = _module_name(node.module)
        for alias in node.names:
            name = _module_name(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self._add(local, f"{base}.{name}")


@dataclass
class Bindings:
    """Local name -> qualified name for every import in the file (all scopes merged)."""

    aliases: dict[str, str] = field(default_factory=dict)
    # module-level imports: a fix may only spell names bound there (None: same as aliases)
    top: dict[str, str] | None = None
    # dotted spellings, in this file, of the project's compile-guard wrappers (external.FileFacts.guards)
    guards: frozenset = frozenset()
    # dotted spellings of the project's wrappers that are False under compile (external.FileFacts.never)
    never: frozenset = frozenset()

    @classmethod
    def of(cls, module: cst.Module, guards: frozenset = frozenset(), never: frozenset = frozenset()) -> "Bindings":
        collector = _ImportCollector()
        fastwalk.visit(module, collector)
        return cls(collector.aliases, collector.top, guards, never)

    @property
    def _spellable(self) -> dict[str, str]:
        return self.aliases if self.top is None else self.top

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """Qualified name of a Name/Attribute chain through the file's imports.

        `th.where` -> "torch.where" after `import torch as th`; `F.relu` ->
        "torch.nn.functional.relu" after `import torch.nn.functional as F`.
        Names not bound by an import resolve to None.
        """
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def qualify_call(self, call: cst.Call) -> str | None:
        return self.qualify(call.func)

    def torch_name(self) -> str | None:
        """The local name bound to the `torch` module itself, if any (`torch`, `th`)."""
        if self._spellable.get("torch") == "torch":
            return "torch"
        for local, target in sorted(self._spellable.items()):
            if target == "torch":
                return local
        return None

    def spell(self, qualified: str) -> str | None:
        """How to write `qualified` (e.g. "torch.where") in this file, or None.

        Prefers a module alias (`th.where`) over a directly imported name.
        """
        torch_local = self.torch_name()
        if qualified == "torch":
            return torch_local
        if qualified.startswith("torch.") and torch_local is not None:
            return torch_local + qualified[len("torch") :]
        for local, target in sorted(self._spellable.items()):
            if target == qualified:
                return local
            if qualified.startswith(target + "."):
                return local + qualified[len(target) :]
        return None

    def spell_or_default(self, qualified: str) -> tuple[str, bool]:
        """(spelling, needs `import torch`): falls back to the plain `torch.` spelling."""
        spelled = self.spell(qualified)
        if spelled is not None:
            return spelled, False
        return qualified, True
