from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context
from ..analysis import explain as X
from ..fixes import Fix, build
from . import base

UNSAFE = ("unsafe fix: under torch.compile the tensor then does not require grad, so what depends on it "
          "alone does not either, and a reentrant `torch.utils.checkpoint` whose only grad-requiring input "
          "it was computes no parameter gradients")
TITLE = "set it only in eager: guard it with `not torch.compiler.is_compiling()`"
# what always makes a new tensor object (never returns its input): the flag then dies with the call
NEW_METHODS = {"view", "unsqueeze", "squeeze", "permute", "transpose", "expand", "narrow", "select", "detach",
               "clone", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
NEW_FUNCS = {f"torch.{n}" for n in ("zeros", "ones", "empty", "full", "rand", "randn", "arange", "tensor",
                                     "zeros_like", "ones_like", "empty_like", "full_like", "cat", "stack")}


class RequiresGradSetInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds assignments to a tensor's `requires_grad` (`hidden_states.requires_grad = True`) in code
    that runs under `torch.compile`. Transformers' audio encoders (wav2vec2, hubert, speecht5, sew,
    unispeech) and the T5 family do it so that gradient checkpointing sees an input that needs grad.

    ## Why it breaks the graph
    Dynamo does not trace it: GB0206 "setattr() on Tensor.requires_grad" (mutating `requires_grad`
    can turn a non-leaf into a leaf in the middle of the graph, which AOTAutograd cannot handle).
    Measured on torch 2.13, aot_eager, on a view of the input in front of a `Conv1d`: 1 break;
    `h.requires_grad_(True)` and `h.detach().requires_grad_(True)` break as well (GB8985).

    ## Example
    ```python
    class FeatureEncoder(nn.Module):
        def forward(self, input_values):
            hidden_states = input_values[:, None]
            if self._requires_grad and self.training:
                hidden_states.requires_grad = True
            return self.conv(hidden_states)
    ```

    ## Fix
    Set it only in eager: `if not torch.compiler.is_compiling(): hidden_states.requires_grad = True`.
    Under compile the graph then stays whole.

    ## Fix safety
    Unsafe (applied only with `--unsafe-fixes`). Values and the gradients of parameters that require
    grad do not change; but under compile the tensor no longer requires grad, so an output that
    required grad only through it stops requiring it, and reentrant `torch.utils.checkpoint`
    (`use_reentrant=True`) of a block whose only grad-requiring input it was computes no gradients
    for that block's parameters. It is exact when gradient checkpointing is off, or non-reentrant,
    and the layers after it have parameters that require grad (transformers' default).

    ## When no fix is offered
    When the tensor is not a local name (`self.weights.requires_grad = False` on a parameter the
    call creates: the flag outlives the call) or not one that a statement before it makes anew
    (an argument of the call, or `h = x.to(...)`, which may return `x` itself), when the value is
    not `True`, when the assignment
    shares its line with other statements or is the body of a one-line compound statement, when it
    has several targets, and when it runs only under compile already.
    """

    CODE = "GM916"
    NAME = "requires-grad-set-in-compiled-code"
    FIX = "unsafe"
    MESSAGE = ("setting `{target}.requires_grad` in compiled code breaks the graph (GB0206); "
               "set it outside the compiled code, or only in eager")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    h = x[:, None]
                    if not torch.compiler.is_compiling():
                        h.requires_grad = True
                    return h * 2

            def prepare(x):
                x.requires_grad = True
                return x
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    h = x[:, None]
                    if self.training:
                        h.requires_grad = True
                    return h * 2
            """
        ),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            attr = target.target
            if not (isinstance(attr, cst.Attribute) and attr.attr.value == "requires_grad"):
                continue
            name = X.dotted(attr.value) or "..."
            if name == "self" or X.value(self, node, attr.value) is None:
                continue
            message = self.MESSAGE.format(target=name)
            why = self._refusal(node)
            if why is not None:
                self.report(node, f"{message}; no fix: {why}", at=attr)
                continue
            line = self.parent(node)
            spelled, needs_import = self.spell("torch.compiler.is_compiling")
            fix = Fix(build.guard_statement(line, spelled), applicability=base.Safety.UNSAFE, title=TITLE,
                      needs_torch_import=needs_import, node=line)
            self.report(node, f"{message}; {UNSAFE}", fix=fix, at=attr)

    def _refusal(self, node: cst.Assign) -> str | None:
        if len(node.targets) != 1:
            return "it has several targets"
        receiver = node.targets[0].target.value  # type: ignore[attr-defined]
        if not isinstance(receiver, cst.Name):
            return ("it sets a flag of a tensor that outlives the call (a module attribute, a parameter): "
                    "skipping it under compile would change later calls too")
        if not (isinstance(node.value, cst.Name) and node.value.value == "True"):
            return "only `= True` on a local tensor is offered a fix"
        if build.sole_line(node, self.parent) is None:
            up = self.parent(node)
            return ("it is the body of a one-line compound statement" if isinstance(up, cst.SimpleStatementSuite)
                    else "it shares its line with other statements")
        if not self._made_here(receiver.value, node):
            return (f"`{receiver.value}` is not made by a statement before it (an argument, or a name that may "
                    "share its object), so the flag may outlive the call")
        only = context.runs_only_compiled(node, self.parent, self.facts.bindings)
        if only is not None:
            return f"it runs only under torch.compile (the test `{only}` chooses this arm)"
        return None

    def _made_here(self, name: str, node: cst.CSTNode) -> bool:
        """The statement that last binds `name` before `node`, in `node`'s block or one around it,
        makes a new tensor (`x[:, None]`, `torch.zeros(...)`, `a + b`, `x.view(...)`)."""
        for child, up in context.ancestors(node, self.parent):
            if isinstance(up, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if not isinstance(up, cst.IndentedBlock):
                continue
            for stmt in reversed(up.body[: up.body.index(child)]):
                value = _binding(stmt, name)
                if value is not None:
                    return self._new_tensor(value)
                if name in _bound_in(stmt):
                    return False  # bound in a way this does not follow
        return False

    def _new_tensor(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, (cst.Subscript, cst.BinaryOperation, cst.UnaryOperation)):
            return True
        if not isinstance(value, cst.Call):
            return False
        if isinstance(value.func, cst.Attribute) and value.func.attr.value in NEW_METHODS:
            return True
        return X.qualified(self, value.func) in NEW_FUNCS


def _binding(stmt: cst.BaseStatement, name: str) -> cst.BaseExpression | None:
    """The value of `stmt` when it is `name = <value>` alone on its line."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        assign = stmt.body[0]
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) and \
                assign.targets[0].target.value == name:
            return assign.value
    return None


def _bound_in(stmt: cst.CSTNode) -> set[str]:
    """Names `stmt` may bind: assignment, `for`, `with ... as`, `:=`, `del`, `import` targets."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def _add(self, target: cst.CSTNode) -> None:
            for n in _target_names(target):
                found.add(n)

        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            self._add(n.target)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            self._add(n.target)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            self._add(n.target)

        def visit_For(self, n: cst.For) -> None:
            self._add(n.target)

        def visit_AsName(self, n: cst.AsName) -> None:
            self._add(n.name)

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            self._add(n.target)

        def visit_Del(self, n: cst.Del) -> None:
            self._add(n.target)

        def visit_ImportAlias(self, n: cst.ImportAlias) -> None:
            if n.asname is None:
                self._add(n.name)

    stmt.visit(V())
    return found


def _target_names(target: cst.CSTNode) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []
