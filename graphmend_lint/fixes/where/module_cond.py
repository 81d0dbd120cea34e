"""A module call in one arm with gradients on: the unsafe torch.cond form (issue 23).

The safe compile-only form of a module arm (modules.py) waits for gradients off, because torch.where
gives the module's parameters zero gradients where the `if` gave none. With gradients on its `elif`,
the original `if`, still breaks the graph. This second step, offered on the form the safe fix wrote,
adds a compiled path for gradients on that runs the module only where its branch is taken:

    if torch.compiler.is_compiling() and <checks> and not torch.is_grad_enabled():
        ...                                    # the safe torch.where form
    elif torch.compiler.is_compiling() and <checks> and self.proj.out_features == self.proj.in_features:
        h = torch.cond(h.sum() > 0, lambda h: self.proj(h), lambda h: h.clone(), (h,))
    elif h.sum() > 0:                          # the original, unchanged
        h = self.proj(h)

It keeps the safe form's trace-time checks (torch.cond traces both branches while compiling: an
input the layer rejects, a hook or a subclass would fail there, as a hard error, not a break), plus
an output of the input's shape (torch.cond requires it). What changes: the module's parameters get
zero gradients instead of None where its branch is not taken (optimizers with weight decay or
momentum then move them). Measured (torch 2.13 CPU, aot_eager, a Linear and a LayerNorm arm):
0 breaks, outputs and input gradients equal to the eager original on both branches, parameter
gradients equal except None -> zeros. Dropout is excluded (the backward of torch.cond re-runs the
branch: new random numbers); it passes the safe form's checks only in eval mode anyway.
"""
from __future__ import annotations

import libcst as cst

from ...analysis import context
from ...analysis.bindings import dotted
from ..fix import Fix
from ..safety import Safety
from ..syntax import code, flatten
from .modules import LAYERS


def _arm(rule, func, orig: cst.If) -> tuple[str, str, str] | None:
    """(name, module, class) of an `if <test>: name = self.x(name)` with nothing else."""
    if orig.orelse is not None or not isinstance(orig.body, cst.IndentedBlock) or len(orig.body.body) != 1:
        return None
    line = orig.body.body[0]
    small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
    if not isinstance(small, cst.Assign) or len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
        return None
    name, call = small.targets[0].target.value, small.value
    if not isinstance(call, cst.Call) or len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
        return None
    module = dotted(call.func)
    arg = call.args[0].value
    if not module or not module.startswith("self.") or module.count(".") != 1 or \
            not (isinstance(arg, cst.Name) and arg.value == name):
        return None
    ctor = rule.facts.function(func).module_attrs.get(module[5:]) or ""
    kind = ctor.rsplit(".", 1)[-1]
    if not ctor.startswith("torch.nn.") or kind not in LAYERS or kind == "Dropout":
        return None
    return name, module, kind


def fix(rule, node: cst.If, func: cst.FunctionDef) -> Fix | None:
    """The unsafe torch.cond step for the compile-only form `node` (its head), or None."""
    b = rule.facts.bindings
    parts = flatten(node.test, cst.And)
    grad_on, _ = rule.spell("torch.is_grad_enabled")
    off = [p for p in parts if code(p) == f"not {grad_on}()"]
    if not context.is_compiling_check(parts[0], b) or len(off) != 1:
        return None
    orig = node.orelse
    if not isinstance(orig, cst.If) or context.is_compiling_check(flatten(orig.test, cst.And)[0], b):
        return None
    if isinstance(orig.test, cst.BooleanOperation) or \
            isinstance(orig.test, cst.UnaryOperation) and isinstance(orig.test.operator, cst.Not):
        return None  # torch.cond takes one tensor: `and`/`or`/`not` would need the logical_* form
    arm = _arm(rule, func, orig)
    if arm is None:
        return None
    name, module, kind = arm
    # the checks before gradients off; those after it (`not h.requires_grad`: compiled.build) hold for that form only
    checks = [code(p) for p in parts[:next(i for i, p in enumerate(parts) if p is off[0])]]
    if kind == "Linear":
        checks.append(f"{module}.out_features == {module}.in_features")
    cond, needs = rule.spell("torch.cond")
    stmt = cst.parse_statement(
        f"if {' and '.join(checks)}:\n"
        f"    {name} = {cond}({code(orig.test)}, lambda {name}: {module}({name}), lambda {name}: {name}.clone(), ({name},))\n")
    new = node.with_changes(orelse=stmt.with_changes(orelse=orig))
    if kind in ("Linear", "LayerNorm"):
        changes = (f"`{module}`'s parameters get zero gradients instead of None where the branch is not taken "
                   "(optimizers with momentum or weight decay then move them)")
    else:  # no parameters: what is left is torch.cond's own way of failing
        changes = (f"`{module}` has no parameters, so no gradient changes; but torch.cond fails compilation (an "
                   "error, not a graph break) where it cannot capture a branch")
    title = (f"unsafe fix: with gradients on, under torch.compile only, torch.cond runs `{module}` only where its branch "
             f"is taken (eager runs the `if` unchanged); what changes: {changes}")
    return Fix(new, Safety.UNSAFE, title, needs_torch_import=needs)
