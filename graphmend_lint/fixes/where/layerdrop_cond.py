"""LayerDrop with p > 0.0: the compiled path skips or runs the layer with `torch.cond` (unsafe, issue 23).

Where the p <= 0.0 guard of layerdrop.py is a no-op (layerdrop_noop.py: an enclosing test or the
default keeps p above 0.0), the draw decides on every call which layers run. The loop body's end,
from the draw to the layer call, then gets a compile-only form; eager runs it unchanged:

    for layer in self.layers:
        if torch.compiler.is_compiling() and <static tests>:
            dropout_probability = torch.rand([])
            h = torch.cond(dropout_probability < p, lambda h: h.clone(), lambda h: layer(h, m)[0], (h,))
        else:
            <the original: draw, test, skip, layer call>

Recognised ends of the loop body (each followed by nothing else; `h = layer(...)` or `h =
layer(...)[0]` reading `h`, or `h, b = layer(...)` reading both, as wavlm's position bias):
  - `if S: draw = torch.rand([]); if draw < p: continue`, then `h = layer(h, ...)` (bart decoder);
  - `draw = torch.rand([])`, `if S and draw < p: continue`, then the call (the draw may be inline);
  - `draw = torch.rand([])`, `skip = S and draw < p`, `if not skip: h = layer(h, ...)` (wav2vec2);
  - `skip = False`, `if S: draw = torch.rand([]); if draw < p: skip = True`, `if not skip: <call>`;
  - `skip = False`, `if S: draw = torch.rand([]); skip = draw < p`, `if not skip or X: <call>`
    (transformers 5.x's wav2vec2 family; X decided while tracing, such as `synced_gpus`, joins S
    as `not X`: where X holds the original runs, which runs the layer either way).
S is static (`self.training`, `self.layerdrop > 0.0`): it becomes part of the compile-only test, so
under compile a False S runs the original, which then neither draws nor skips, as in eager.

What changes (measured, torch 2.13 CPU, aot_eager and inductor with fallback_random, train mode):
outputs equal the eager original's under the same seed, the draw stays in place (later random
numbers unchanged), one graph instead of a skipped frame. But the skipped layer's parameters get
zero gradients instead of None (AdamW's weight decay and moments then move them), and the backward
of `torch.cond` re-runs the taken branch: a layer that draws random numbers (dropout in training)
gets gradients computed with new random numbers, not the ones its forward used. The layer must
return a tensor of its input's shape and dtype, or compilation fails (torch.cond checks it).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import libcst as cst

from ... import fastwalk
from ...analysis.bindings import dotted
from ..fix import Fix
from ..safety import Safety
from ..syntax import code, flatten, names_in
from .layerdrop_draw import draw_part, is_name, rand_call, the_draw


@dataclass(frozen=True)
class _Drop:
    start: int  # index in the loop body of the first statement the compile-only form replaces
    static: list[cst.BaseExpression]  # the static tests that gate the draw
    draw: cst.BaseExpression  # the draw (a name bound to torch.rand([]), or the call itself)
    draw_value: cst.BaseExpression | None  # what the name is bound to, None for an inline draw
    prob: cst.BaseExpression
    skips: cst.Comparison  # the comparison that skips the layer (`draw < p`, `draw <= p`, ...), as written
    flag: str | None  # the name a later `if not flag:` reads (wav2vec2), else None (`continue`)


def _stmt(s: cst.CSTNode) -> cst.BaseSmallStatement | None:
    if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1:
        return s.body[0]
    return None


def _assign(s: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    small = _stmt(s)
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value, small.value
    return None


def _block(s: cst.CSTNode) -> list[cst.BaseStatement] | None:
    """The statements of an `if` without `elif`/`else`."""
    if isinstance(s, cst.If) and s.orelse is None and isinstance(s.body, cst.IndentedBlock):
        return list(s.body.body)
    return None


def _layer_call(s: cst.CSTNode) -> tuple[list[str], cst.BaseExpression] | None:
    """`h = <call>(..., h, ...)`, `h = <call>(...)[0]`, or `h, b = <call>(..., h, ..., b, ...)`
    (wavlm: the layer returns its position bias too): the names and the value."""
    small = _stmt(s)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return None
    target, call = small.targets[0].target, small.value
    if isinstance(target, cst.Name):
        names = [target.value]
        if isinstance(call, cst.Subscript) and len(call.slice) == 1 and isinstance(call.slice[0].slice, cst.Index) \
                and isinstance(call.slice[0].slice.value, cst.Integer) and call.slice[0].slice.value.value == "0":
            call = call.value
    elif isinstance(target, cst.Tuple) and len(target.elements) > 1 and \
            all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements):
        names = [e.value.value for e in target.elements]
    else:
        return None
    if not isinstance(call, cst.Call) or not set(names) <= names_in(call) or len(set(names)) != len(names):
        return None
    return names, small.value


def _one_line(value: cst.BaseExpression) -> str | None:
    """The layer call on one line (the layout pass wraps it again), or None when an argument spans lines."""
    call = value.value if isinstance(value, cst.Subscript) else value
    args = ", ".join(code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace("")))
                     for a in call.args)
    text = f"{code(call.func)}({args})" + (code(value)[len(code(call)):] if value is not call else "")
    return None if "\n" in text else text


def _decided(ff, test: cst.BaseExpression) -> bool:
    """Not a tensor: decided while tracing (a static test, or one of unknown kind such as
    `self.layerdrop > 0.0`; were it a tensor after all, the compiled path would break there, as before)."""
    return ff.value(test).kind in ("static", "unknown")


def _test(rule, ff, test: cst.BaseExpression):
    """(static conjuncts, draw, prob, comparison) of `S and draw < p` (or `<=`), else None."""
    got = draw_part(rule, ff, test, inclusive=True)
    if got is None:
        return None
    parts, atom, prob = got
    if any(p is not atom and not _decided(ff, p) for p in parts):
        return None
    return [p for p in parts if p is not atom], the_draw(rule, ff, atom), prob, atom


def _draw_at(rule, ff, head: list, at: int, static, draw, prob, skips, flag) -> _Drop | None:
    """The draw bound by `head[at - 1]` (a name) or inline: the form starts there, else None."""
    if isinstance(draw, cst.Name):
        bound = _assign(head[at - 1]) if at >= 1 else None
        if bound is None or bound[0] != draw.value or not rand_call(rule, bound[1]):
            return None
        return _Drop(at - 1, static, draw, bound[1], prob, skips, flag)
    return _Drop(at, static, draw, None, prob, skips, flag)


def _nested(rule, ff, stmt, then, flag: str | None = None) -> _Drop | None:
    """`if S: draw = torch.rand([]); if draw < p: <then>` (then: `continue` or `flag = True`), or
    with a flag, `if S: draw = torch.rand([]); flag = draw < p` (transformers 5.x's wav2vec2)."""
    block = _block(stmt)
    if block is None or len(block) != 2 or not _decided(ff, stmt.test):
        return None
    bound = _assign(block[1]) if flag is not None else None
    if bound is not None and bound[0] == flag:
        got = _test(rule, ff, bound[1])
    else:
        inner = _block(block[1])
        if inner is None or len(inner) != 1 or not then(inner[0]):
            return None
        got = _test(rule, ff, block[1].test)
    if got is None:
        return None
    static, draw, prob, skips = got
    form = _draw_at(rule, ff, block, 1, [*flatten(stmt.test, cst.And), *static], draw, prob, skips, None)
    return None if form is None or form.start != 0 else form


def _is_continue(s) -> bool:
    return isinstance(_stmt(s), cst.Continue)


def _continue_form(rule, ff, head: list) -> _Drop | None:
    """The draw and `continue` (bart's decoder, transformers 5.x) before the layer call."""
    if not head:
        return None
    last = head[-1]
    nested = _nested(rule, ff, last, _is_continue)
    if nested is not None:
        return replace(nested, start=len(head) - 1)
    block = _block(last)
    if block is None or len(block) != 1 or not _is_continue(block[0]):
        return None
    got = _test(rule, ff, last.test)
    return None if got is None else _draw_at(rule, ff, head, len(head) - 1, *got, None)


def _flag_form(rule, ff, head: list, flag: str) -> _Drop | None:
    """`skip = S and draw < p` (wav2vec2), or `skip = False; if S: ...; if draw < p: skip = True`
    (or `skip = draw < p` in the `if S:`)."""
    if not head:
        return None
    bound = _assign(head[-1])
    if bound is not None and bound[0] == flag:
        got = _test(rule, ff, bound[1])
        return None if got is None else _draw_at(rule, ff, head, len(head) - 1, *got, flag)
    first = _assign(head[-2]) if len(head) >= 2 else None
    if first is None or first[0] != flag or not is_name(first[1], "False"):
        return None

    def sets_flag(s) -> bool:
        got = _assign(s)
        return got is not None and got[0] == flag and is_name(got[1], "True")

    nested = _nested(rule, ff, head[-1], sets_flag, flag)
    if nested is None:
        return None
    return replace(nested, start=len(head) - 2, flag=flag)


def _recognise(rule, ff, body: list):
    """(the form, the layer call's name and value) of a loop body's end, else None."""
    if not body:
        return None
    last = body[-1]
    call = _layer_call(last)
    if call is not None:
        form = _continue_form(rule, ff, body[:-1])
        return None if form is None else (form, *call)
    block = _block(last)
    test, also = _skip_test(ff, getattr(last, "test", None))
    if block is None or len(block) != 1 or test is None:
        return None
    call = _layer_call(block[0])
    form = _flag_form(rule, ff, body[:-1], test.expression.value) if call is not None else None
    if form is None:
        return None
    if also:  # `if not skip or X:` runs the layer when X holds: the compiled path needs `not X`
        form = replace(form, static=[*form.static, *(cst.parse_expression(f"not {_piece(x)}") for x in also)])
    return form, *call


def _skip_test(ff, test) -> tuple[cst.UnaryOperation | None, list[cst.BaseExpression]]:
    """`not flag`, or `not flag or X or ...` with every X a name or attribute read decided while
    tracing (`synced_gpus`; the compiled path reads it even when `not flag` holds): the `not flag`
    and the Xs."""
    parts = flatten(test, cst.Or) if test is not None else []
    first = parts[0] if parts else None
    if not (isinstance(first, cst.UnaryOperation) and isinstance(first.operator, cst.Not)
            and isinstance(first.expression, cst.Name)) or \
            not all(dotted(x) is not None and _decided(ff, x) for x in parts[1:]):
        return None, []
    return first, parts[1:]


def _count(node: cst.CSTNode, names: set[str]) -> int:
    v = _Count(names)
    fastwalk.visit(node, v)
    return v.n


class _Count(cst.CSTVisitor):  # module-level: a class made per call is a cycle holding its nodes
    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names, self.n = names, 0

    def visit_Name(self, name: cst.Name) -> None:
        self.n += name.value in self.names


def _loop(rule, node: cst.CSTNode) -> tuple[cst.For, int] | None:
    """The `for` loop whose body holds `node`, and the index of the statement holding it."""
    child, up = node, rule.parent(node)
    while up is not None and not isinstance(up, (cst.FunctionDef, cst.Lambda)):
        if isinstance(up, cst.IndentedBlock):
            owner = rule.parent(up)
            if isinstance(owner, cst.For) and owner.body is up:
                return (owner, list(up.body).index(child)) if owner.orelse is None else None
        child, up = up, rule.parent(up)
    return None


def _piece(node: cst.BaseExpression) -> str:
    text = code(node)
    return f"({text})" if isinstance(node, (cst.BooleanOperation, cst.IfExp, cst.Lambda)) else text


def not_offered(rule, node: cst.CSTNode) -> str:
    """What a no-fix reason adds, in a `for` loop, on why the torch.cond form was not offered."""
    if _loop(rule, node) is None:
        return ""
    return ("; the unsafe torch.cond form needs a loop body that ends with the draw, the skip and one layer "
            "call `h = layer(h, ...)`, `h = layer(h, ...)[0]` or `h, b = layer(h, b, ...)` (nothing after it)")


def message(prob: str) -> str:
    return (f"unsafe fix: under torch.compile only, `torch.cond` skips or runs the layer in the graph, on the same draw "
            f"(with `{prob}` > 0.0 the draw decides on every call; eager runs the loop body unchanged). What changes: "
            "a skipped layer's parameters get zero gradients instead of None (optimizers with weight decay or "
            "momentum, AdamW, then move them), and the backward of torch.cond re-runs the layer, so a layer that "
            "draws random numbers (dropout in training) gets gradients computed with new random numbers, not its "
            "forward's; the layer must return its input's shape and dtype, or compilation fails")


def fix(rule, node: cst.CSTNode, func: cst.FunctionDef) -> Fix | None:
    """The unsafe torch.cond form of the loop body around `node`, when it ends in a recognised LayerDrop."""
    found = _loop(rule, node)
    if found is None:
        return None
    loop, at = found
    ff = rule.facts.function(func)
    body = list(loop.body.body)
    got = _recognise(rule, ff, body)
    if got is None:
        return None
    form, names, value = got
    text = _one_line(value)
    if text is None:
        return None
    name = ", ".join(names)
    kept = f"{names[0]}.clone()" if len(names) == 1 else "(" + ", ".join(f"{n}.clone()" for n in names) + ")"
    if at < form.start:
        return None
    here = sum(_count(s, {form.flag}) for s in body[form.start:])
    if form.flag and _count(func, {form.flag}) != here:
        return None  # the flag is read elsewhere: the compiled path does not bind it
    if isinstance(form.draw, cst.Name) and _count(loop.body, {form.draw.value}) != \
            sum(_count(s, {form.draw.value}) for s in body[form.start:]):
        return None  # the draw is read earlier in the loop body
    is_compiling, n1 = rule.spell("torch.compiler.is_compiling")
    cond, n2 = rule.spell("torch.cond")
    draw = code(form.draw)
    lines = [f"if {' and '.join([f'{is_compiling}()', *map(_piece, form.static)])}:"]
    if form.draw_value is not None:
        lines.append(f"    {draw} = {code(form.draw_value)}")
    lines.append(f"    {name} = {cond}({code(form.skips.with_changes(lpar=[], rpar=[]))}, lambda {name}: {kept}, "
                 f"lambda {name}: {text}, ({name}{',' if len(names) == 1 else ''}))")
    lines.append("else:\n    pass")
    head = cst.parse_statement("\n".join(lines) + "\n")
    new = head.with_changes(orelse=cst.Else(body=cst.IndentedBlock(body=body[form.start:])))
    block = loop.body.with_changes(body=[*body[:form.start], new])
    return Fix(block, Safety.UNSAFE, message(code(form.prob)), needs_torch_import=n1 or n2, node=loop.body)
