"""Random small PyTorch programs mixing the three graph-break patterns with ordinary code.

`generate(chooser)` writes one module: an `nn.Module` forward, a `@torch.compile` function or a
`torch.compile(f)` target, maybe with same-file helpers, plus an uncompiled function. The
compiled body mixes data-dependent `if`/ternaries (GM1xx), print/logging/warnings (GM2xx) and
`if cond: raise`/asserts (GM3xx) with loops, static tests, module calls and aliases.
Lines marked `# fuzz:never` (code already guarded for eager) must get no finding at all.

Every tensor test reads a "control" argument `c<k>` (or a name derived from it without changing
its sign) whose value is chosen so the test is true or false; `make()` calls the program on
every combination, so every branch arm runs. Lines that must never be reported carry
`# fuzz:static`; the uncompiled function lies between `# fuzz:eager-begin/end`.

A chooser is anything with `pick(seq)`, `number(lo, hi)` and `chance(p)`: `RandomChooser`
(seeded, for the benchmark) or `DrawChooser` (a hypothesis `draw`, which shrinks failures).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field


class RandomChooser:
    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)

    def pick(self, seq):
        return seq[self.rnd.randrange(len(seq))]

    def number(self, lo: int, hi: int) -> int:
        return self.rnd.randint(lo, hi)

    def chance(self, p: float) -> bool:
        return self.rnd.random() < p


class DrawChooser:
    def __init__(self, draw) -> None:
        from hypothesis import strategies as st

        self.draw, self.st = draw, st

    def pick(self, seq):
        return seq[self.draw(self.st.integers(0, len(seq) - 1))]

    def number(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))

    def chance(self, p: float) -> bool:
        # integers shrink towards 0, i.e. towards "no": shrinking removes features
        return self.draw(self.st.integers(0, 99)) >= 100 - int(100 * p)


# Control tensors: their values make a test true or false. state -> expression building it.
STATES = {
    "pos": "{t}.rand(3, 4, generator=g) * 0.4 + 0.6",
    "neg": "-({t}.rand(3, 4, generator=g) * 0.4 + 0.6)",
    "nan": "{t}.where({t}.arange(12).reshape(3, 4) == 5, float('nan'), {t}.rand(3, 4, generator=g) + 0.6)",
    "big": "{t}.rand(3, 4, generator=g) * 10 + 20",
}
# test template on a control name {v}: (source, state making it true, state making it false)
TESTS = [
    ("{v}.sum() > 0", "pos", "neg"),
    ("{v}.mean() < 0", "neg", "pos"),
    ("({v} > 0).all()", "pos", "neg"),
    ("({v} < 0).any()", "neg", "pos"),
    ("{t}.isnan({v}).any()", "nan", "pos"),
    ("{v}.max() > 15", "big", "pos"),
    ("{v}.abs().max() < 5", "pos", "big"),
    ("not ({v} > 0).all()", "neg", "pos"),
    ("{t}.any({v} > 0)", "pos", "neg"),
    ("{v}.sum().item() > 0", "pos", "neg"),
    ("{v}.norm() > 10", "big", "pos"),
    ("{t}.all({v} >= 0)", "pos", "neg"),
    ("{v}.min() >= 0", "pos", "neg"),
    ("{v}.isfinite().all()", "pos", "nan"),
]
# sign-keeping derivations of a control (a test on the result keeps its truth table)
DERIVE = ["{v} * 2.0", "{v} + 0.0", "{v}.clone()", "{v}.detach()", "{t}.clamp({v}, -100, 100)"]
# branch values of `h` (a float tensor of shape (B, 4)); some are safe for torch.where, some not
VALUES = [
    "h * 2", "h - 1", "-h", "h / 2", "h.abs()", "{t}.tanh(h)", "h.clamp(min=-1, max=1)", "h.relu()",
    "{t}.sigmoid(h)", "h * 0.5 + 1", "{t}.sqrt(h)", "{t}.log(h.abs() + 1)", "h.exp()", "h ** 2",
    "{t}.nan_to_num(h)", "h", "h.sum(-1, keepdim=True)", "h.double()", "h[0]", "h + 1.5",
    "{t}.zeros_like(h)", "{t}.ones_like(h) * 3",
    # indexing and reductions that raise on some shapes or data (checked while tracing, index guards)
    "h[:, :2]", "h[2]", "h - h.amax(dim=-1, keepdim=True)", "h - h.amin(dim=0, keepdim=True)",
]
MODULE_VALUES = ["self.proj(h)", "helper(h)", "h[self.perm]", "h[self.far]"]
WHERE_VALUES = ["h * 2", "h - 1", "-h", "h / 2", "h.abs()", "{t}.tanh(h)", "h.clamp(min=-1, max=1)", "h.relu()",
                "{t}.sigmoid(h)", "h * 0.5 + 1", "h + 1.5", "{t}.nan_to_num(h)", "h", "h ** 2", "{t}.sqrt(h)"]
STATIC_TESTS = [
    "h.dim() == 2", "h.shape[0] > 1", "h.dtype == {t}.float32", "isinstance(h, {t}.Tensor)",
    "mask is None", "mask is not None", "h.size(-1) == 4", "len(h.shape) == 2", "h.is_floating_point()",
]
MODULE_STATIC_TESTS = ["self.training", "self.flag", "not self.training"]
EXCEPTIONS = ["ValueError", "RuntimeError", "AssertionError", "FuzzError"]


@dataclass
class Program:
    source: str  # what is linted and fixed
    harness: str  # `make()`, appended to the original and the fixed source to run them
    controls: list = field(default_factory=list)  # per control: (true_state, false_state) per use
    kind: str = "module"
    features: set = field(default_factory=set)


class _Writer:
    def __init__(self, c, t: str, kind: str) -> None:
        self.c, self.t, self.kind = c, t, kind
        self.lines: list[str] = []
        self.controls: list[set] = []  # states each control must take
        self.features: set = set()
        self.derived: list[tuple[str, int]] = []  # (name, control index)
        self.counter = 0
        self.clean = False  # `z`: a float tensor only ever updated by where-friendly branches

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def emit(self, indent: int, text: str) -> None:
        self.lines.extend("    " * indent + line for line in text.split("\n"))

    def fmt(self, template: str, v: str = "h") -> str:
        return template.format(t=self.t, v=v)

    # -- tests -------------------------------------------------------------
    def control(self, indent: int, derive: bool = True) -> tuple[str, int]:
        """A name to test and the control it follows (new controls up to 3)."""
        if self.controls and (len(self.controls) >= 3 or self.c.chance(0.5)):
            k = self.c.number(0, len(self.controls) - 1)
        else:
            k = len(self.controls)
            self.controls.append(set())
        name = f"c{k}"
        if derive and self.c.chance(0.3):
            derived = self.fresh("d")
            self.emit(indent, f"{derived} = " + self.fmt(self.c.pick(DERIVE), name))
            name = derived
        return name, k

    def tensor_test(self, indent: int, derive: bool = True) -> str:
        name, k = self.control(indent, derive)
        text, true_state, false_state = TESTS[self.c.number(0, len(TESTS) - 1)]
        self.controls[k] |= {true_state, false_state}
        test = self.fmt(text, name)
        if self.c.chance(0.2):
            other = self.tensor_test(indent, derive)
            test = f"{_paren(test)} {self.c.pick(['and', 'or'])} {_paren(other)}"
        elif self.c.chance(0.1):
            test = f"not ({test})"
        if self.c.chance(0.1):
            static = self.fmt(self.c.pick(STATIC_TESTS))
            test = f"{static} and ({test})"
        self.features.add("tensor-test")
        return test

    def value(self) -> str:
        """A branch value: half the time one torch.where can take safely (same shape and dtype)."""
        if self.c.chance(0.5):
            return self.fmt(self.c.pick(WHERE_VALUES))
        pool = VALUES + (MODULE_VALUES if self.kind == "module" else ["helper(h)"])
        return self.fmt(self.c.pick(pool))

    # -- statements ----------------------------------------------------------
    def block(self, indent: int, depth: int, size: int | None = None) -> None:
        for _ in range(size if size is not None else self.c.number(1, 3)):
            self.statement(indent, depth)

    def statement(self, indent: int, depth: int) -> None:
        kinds = ["ordinary", "tensor_if", "ternary", "log", "check", "tricky", "static_if", "loop", "layout", "closure"]
        if self.clean and self.c.chance(0.35):
            return self.s_clean_if(indent, depth)
        if self.kind == "module" and self.c.chance(0.1):
            return self.s_layerdrop(indent, depth)
        kind = self.c.pick(kinds if depth < 2 else kinds[:6])
        getattr(self, "s_" + kind)(indent, depth)

    def s_ordinary(self, indent: int, depth: int) -> None:
        options = [
            f"h = {self.value()}",
            "h = h + 1",
            self.fmt("h = {t}.relu(h) + h"),
            self.fmt("with {t}.no_grad():\n    s = h.sum()"),
            self.fmt("if not {t}.compiler.is_compiling():\n    print('eager only', h.shape)  # fuzz:never"),
            "parts = [h, h * 2]\nh = parts[0] + parts[1]",
            "h = h * mask if mask is not None else h  # fuzz:static",
        ]
        if self.kind == "module":
            options += ["self.calls += 1", "h = self.proj(h)"]
        self.emit(indent, self.c.pick(options))

    def s_tensor_if(self, indent: int, depth: int) -> None:
        test = self.tensor_test(indent)
        shape = self.c.pick(["both", "one", "elif", "nested", "hoist", "two-names", "mixed"])
        self.features.add(f"if-{shape}")
        self.emit(indent, f"if {test}:")
        if shape == "nested" and depth < 2:
            self.s_tensor_if(indent + 1, depth + 1)
        elif shape == "hoist":
            tmp = self.fresh("t")
            self.emit(indent + 1, f"{tmp} = {self.value()}\nh = {tmp} + 1")
        elif shape == "two-names":
            self.emit(indent + 1, f"h = {self.value()}\ng = {self.value()}")
        elif shape == "mixed":
            self.block(indent + 1, depth + 1)
        else:
            self.emit(indent + 1, f"h = {self.value()}")
        if shape == "elif":
            self.emit(indent, f"elif {self.tensor_test(indent, derive=False)}:")
            self.emit(indent + 1, f"h = {self.value()}")
        if shape != "one":
            self.emit(indent, "else:")
            if shape == "two-names":
                self.emit(indent + 1, f"h = {self.value()}\ng = {self.value()}")
            elif shape == "mixed":
                self.block(indent + 1, depth + 1)
            else:
                self.emit(indent + 1, f"h = {self.value()}")
        if shape == "two-names":
            self.emit(indent, "h = h + g")

    def s_clean_if(self, indent: int, depth: int) -> None:
        """An `if`/ternary on `z` that torch.where can take: the SAFE fixes under test."""
        self.features.add("clean-if")
        zv = lambda: re.sub(r"\bh\b", "z", self.fmt(self.c.pick(WHERE_VALUES)))  # noqa: E731
        test = self.tensor_test(indent)
        form = self.c.pick(["both", "one", "elif", "ternary", "nested", "ternary-nested"])
        self.features.add(f"clean-{form}")
        if form == "ternary":
            self.emit(indent, f"z = {zv()} if {test} else {zv()}")
            return
        if form == "ternary-nested":
            self.emit(indent, f"z = z * 0.5 + ({zv()} if {test} else {zv()})")
            return
        self.emit(indent, f"if {test}:\n    z = {zv()}")
        if form == "nested":
            self.emit(indent, f"else:\n    if {self.tensor_test(indent, derive=False)}:\n        z = {zv()}\n"
                              f"    else:\n        z = {zv()}")
        elif form == "elif":
            self.emit(indent, f"elif {self.tensor_test(indent, derive=False)}:\n    z = {zv()}\nelse:\n    z = {zv()}")
        elif form == "both":
            self.emit(indent, f"else:\n    z = {zv()}")

    def s_layerdrop(self, indent: int, depth: int) -> None:
        """transformers' LayerDrop in a layer loop (GM104's fix); `self.layerdrop` is 0.0 (decided while
        tracing) or 1.5 (always below: every layer skipped, the break stays), so the result is fixed."""
        self.features.add("layerdrop")
        draw = self.fresh("dropout_probability")
        form = self.c.pick(["continue", "to_drop", "joined", "false_first"])
        self.features.add(f"layerdrop-{form}")
        layer = self.c.pick(["h = h * 0.5 + 1", "h = self.proj(h)", "h = h + h.tanh()",
                             f"h = {{t}}.nn.functional.dropout(h, 0.5, self.training)"])
        layer = self.fmt(layer) if "{t}" in layer else layer
        self.emit(indent, "for _ in range(2):")
        if form == "continue":
            self.emit(indent + 1, self.fmt(f"if self.training:\n    {draw} = {{t}}.rand([])\n"
                                           f"    if {draw} < self.layerdrop:\n        continue\n{layer}"))
        elif form == "to_drop":
            self.emit(indent + 1, self.fmt(f"to_drop = False\nif self.training:\n    {draw} = {{t}}.rand([])\n"
                                           f"    if {draw} < self.layerdrop:  # skip the layer\n        to_drop = True\n"
                                           f"if not to_drop:\n    {layer}"))
        elif form == "false_first":  # a tensor in training, False otherwise (speecht5, transformers 5.x)
            skip = self.fresh("skip_the_layer")
            self.emit(indent + 1, self.fmt(f"{skip} = False\nif self.training:\n    {draw} = {{t}}.rand([])\n"
                                           f"    {skip} = {draw} < self.layerdrop\nif not {skip}:\n    {layer}"))
        else:
            self.emit(indent + 1, self.fmt(f"{draw} = {{t}}.rand([])\nif self.training and ({draw} < self.layerdrop):\n"
                                           f"    continue\n{layer}"))

    def s_tricky(self, indent: int, depth: int) -> None:
        """Shapes a torch.where rewrite gets wrong: in-place updates, aliases, Python numbers, while."""
        self.features.add("tricky")
        test = self.tensor_test(indent)
        form = self.c.pick(["inplace", "alias", "scalar", "while", "functional", "method", "masked"])
        self.features.add(f"tricky-{form}")
        if form == "masked":  # a mask test guarding a masked update, the mask maybe indexed (#23)
            name, k = self.control(indent, derive=False)
            self.controls[k] |= {"pos", "neg"}  # all True, all False
            mask = self.fresh("m")
            self.emit(indent, f"{mask} = {name} > 0")
            value = self.c.pick(["0.0", "-1.0", "2.5", "-1e9", "1"])
            if self.c.chance(0.5):
                idx = self.c.pick(["", "[0]", "[:, 0:1]", "[..., :]", "[1:]"])
                self.emit(indent, f"if {mask}.any():\n    h = h.masked_fill({mask}{idx}, {value})")
            elif self.c.chance(0.5):
                idx = self.c.pick(["", "[...]", "[:, :]", "[:2]"])
                self.emit(indent, self.fmt(f"buf = {{t}}.zeros_like(h.detach())\nif {mask}.sum() != 0:\n"
                                           f"    buf[{mask}{idx}] = {value}\nh = h + buf"))
            elif self.c.chance(0.5):  # several updates under one test, one of a view (rag's two fills, wav2vec2's logits[1:])
                self.emit(indent, self.fmt(f"buf = {{t}}.zeros_like(h.detach())\nif {mask}.any():\n"
                                           f"    buf[1:][{mask}[1:]] = {value}\n    buf.masked_fill_({mask}, 0.5)\nh = h + buf"))
            else:  # a product by a mask that is all ones where the test is False (nemotron_h, zamba)
                cast = self.c.pick(["", ".long()", ".to(h.dtype)"])
                idx = self.c.pick(["", "[...]", "[:, :]"])
                guard = self.c.pick([f"not {{t}}.all({mask} == 1)", f"({mask} != 1).any()"])
                none = self.c.pick(["", f"{mask} is not None and "])
                product = self.c.pick([f"h * {mask}{idx}", f"{mask}{idx} * h"])
                self.emit(indent, f"{mask} = {mask}{cast}")
                self.emit(indent, self.fmt(f"if {none}{guard}:\n    h = {product}"))
        elif form == "inplace":
            self.emit(indent, f"if {test}:\n    h = h.clone()\n    h.add_(1)\nelse:\n    h = h * 2")
        elif form == "alias":
            self.emit(indent, f"keep = h\nif {test}:\n    h = h * 2\nkeep.mul_(1.0)\nh = h + keep")
        elif form == "scalar":
            self.emit(indent, f"scale = 2.5 if {test} else 1\nh = h * scale")
        elif form == "while":
            self.emit(indent, self.fmt("n = 0\nwhile h.abs().max() > 4 and n < 5:\n    h = h / 2\n    n += 1"))
            self.emit(indent, f"if {test}:\n    h = h + 0.25")
        elif form == "functional":
            self.emit(indent, f"if {test}:\n    h = F.relu(h)\nelse:\n    h = F.softplus(h)")
        else:
            call = "self.scale_up(h)" if self.kind == "module" else "helper(h)"
            self.emit(indent, f"if {test}:\n    h = {call}\nelse:\n    h = h * 1.0")

    def s_ternary(self, indent: int, depth: int) -> None:
        self.features.add("ternary")
        expr = f"{self.value()} if {self.tensor_test(indent)} else {self.value()}"
        # nested in a larger expression (GM102's nested compile-only form): after arithmetic, in a list
        # a copying call takes, after a module call (bound first when the values are compared)
        nested = [f"h = h * 0.5 + ({expr}) * 2", self.fmt("h = {t}.stack([h, ") + expr + "]).sum(0)"]
        if self.kind == "module":
            nested.append(f"h = self.proj(h) + ({expr})")
        simple = [f"h = {expr}", f"h = h + ({expr})", self.fmt("h = {t}.relu(") + expr + ")"]
        if self.c.chance(0.4):
            self.features.add("ternary-nested")
            self.emit(indent, self.c.pick(nested))
        else:
            self.emit(indent, self.c.pick(simple))

    def s_log(self, indent: int, depth: int) -> None:
        self.features.add("log")
        log = self.logger
        if self.c.chance(0.15):  # a tensor `if` that only logs, maybe behind our own guard (#23)
            self.features.add("log-only-if")
            test = self.tensor_test(indent)
            inner = self.c.pick([f"{log}.warning('large')", "print('large')",
                                 self.fmt("if not {t}.compiler.is_compiling():\n        print('large')")])
            self.emit(indent, f"if {test}:\n    {inner}")
            return
        options = [
            "print('step', h.shape)", "print(f'{h.shape} rows')", "print('value', h)",
            f"{log}.info('shape %s', h.shape)", f"{log}.warning('careful')", f"{log}.debug('h=%s', h.sum())",
            f"{self.warn}('deprecated path', UserWarning)", f"{self.warn}('twice', stacklevel=2)",
            "n = print('value used')", f"if mask is None: {log}.info('no mask')  # fuzz:static",
            "print('a'); print('b')", "items = [1, 2]\nprint(items.pop())",
        ]
        if self.kind == "module":
            options += ["self.log.info('from self %s', h.shape)"]
        self.emit(indent, self.c.pick(options))

    def s_check(self, indent: int, depth: int) -> None:
        self.features.add("check")
        name, k = self.control(indent)
        # the check must pass on some states: raise only on the state that makes it true
        text, bad_state, good_state = TESTS[self.c.number(0, len(TESTS) - 1)]
        self.controls[k] |= {bad_state, good_state}
        test = self.fmt(text, name)
        exc = self.c.pick(EXCEPTIONS)
        message = self.c.pick(["'bad input'", "f'bad input {h.shape}'", "'bad ' + 'input'", ""])
        form = self.c.pick(["raise", "raise", "assert", "torch_assert", "raise-else", "assert-item"])
        if form == "raise":
            self.emit(indent, f"if {test}:\n    raise {exc}({message})")
        elif form == "raise-else":
            self.emit(indent, f"if {test}:\n    raise {exc}({message})\nelse:\n    h = h + 1")
        elif form == "assert-item":  # GM304: a Python value read from a tensor in an assert (#23)
            self.emit(indent, f"assert ({test}).logical_not().item()" + (f", {message}" if message else ""))
        elif form == "assert":
            self.emit(indent, f"assert not ({test})" + (f", {message}" if message else ""))
        elif "item()" in test or test.startswith("not "):
            self.emit(indent, f"assert not ({test})")
        else:
            self.emit(indent, self.fmt("{t}._assert({t}.logical_not(") + f"{test}), {message or repr('bad')})")

    def ending(self) -> list[str]:
        """The last statements of the compiled function: a return, maybe in both branches of a test."""
        self.lines, saved = [], self.lines
        form = self.c.pick(["plain", "plain", "both", "ternary", "tuple", "elif", "ternary-nested"])
        if form == "both" and self.c.chance(0.3):
            form = "early"  # an early return, then assignments before the last one (#23)
        self.features.add(f"return-{form}")
        if form == "early":
            self.emit(0, f"if {self.tensor_test(0)}:\n    return {self.value()}")
            tmp = self.fresh("t")
            self.emit(0, f"{tmp} = {self.value()}")
            if self.c.chance(0.5):  # rebinds `h`, which the test or the early return may read
                self.emit(0, f"h = {tmp} * 0.5 + 1\nreturn {self.value()}")
            else:
                self.emit(0, f"return {tmp} * 2")
        elif form == "plain":
            self.emit(0, "return h")
        elif form == "ternary":
            self.emit(0, f"return {self.value()} if {self.tensor_test(0)} else {self.value()}")
        elif form == "ternary-nested":
            self.emit(0, f"return h * ({self.value()} if {self.tensor_test(0)} else {self.value()}), h")
        else:
            test = self.tensor_test(0)
            values = (lambda: f"{self.value()}, h") if form == "tuple" else self.value
            self.emit(0, f"if {test}:\n    return {values()}")
            if form == "elif":
                self.emit(0, f"elif {self.tensor_test(0, derive=False)}:\n    return {values()}")
            self.emit(0, f"else:\n    return {values()}")
        lines, self.lines = self.lines, saved
        return lines

    def s_static_if(self, indent: int, depth: int) -> None:
        self.features.add("static-if")
        pool = STATIC_TESTS + (MODULE_STATIC_TESTS if self.kind == "module" else [])
        self.emit(indent, f"if {self.fmt(self.c.pick(pool))}:  # fuzz:static")
        self.block(indent + 1, depth + 1, 1)
        if self.c.chance(0.5):
            self.emit(indent, "else:")
            self.block(indent + 1, depth + 1, 1)

    def s_loop(self, indent: int, depth: int) -> None:
        self.features.add("loop")
        self.emit(indent, self.c.pick(["for i in range(2):", "for w in (1.0, 2.0):"]))
        self.emit(indent + 1, self.c.pick(["h = h + 1", "h = h * 0.5"]))
        if self.c.chance(0.3):
            self.block(indent + 1, depth + 1, 1)


    def s_layout(self, indent: int, depth: int) -> None:
        """Comments, blank lines, semicolons, `pass`, try/except around a pattern."""
        self.features.add("layout")
        form = self.c.pick(["comments", "semicolons", "try", "pass-else"])
        self.features.add(f"layout-{form}")
        if form == "comments":
            self.emit(indent, "# a comment before the test")
            self.emit(indent, f"if {self.tensor_test(indent)}:  # why")
            self.emit(indent + 1, f"# inside\nh = {self.value()}  # trailing\n")
            self.emit(indent, f"else:\n    h = {self.value()}")
        elif form == "semicolons":
            self.emit(indent, f"h = h + 1; h = h * 1.0\nif {self.tensor_test(indent)}: h = {self.value()}")
        elif form == "try":
            self.emit(indent, "try:")
            self.c.pick([self.s_check, self.s_log, self.s_tensor_if])(indent + 1, depth + 1)
            self.emit(indent, "except (ValueError, AssertionError) as e:\n    h = h * 0")
        else:
            self.emit(indent, f"if {self.tensor_test(indent)}:\n    h = {self.value()}\nelse:\n    pass")

    def s_closure(self, indent: int, depth: int) -> None:
        """A nested function called from compiled code (compiled with it)."""
        self.features.add("closure")
        name = self.fresh("inner")
        self.emit(indent, f"def {name}(h):")
        self.clean, clean = False, self.clean  # `z = ...` in the closure would make `z` local there
        self.block(indent + 1, 2, 1)
        self.clean = clean
        self.emit(indent + 1, "return h")
        self.emit(indent, f"h = {name}(h)")


def _paren(text: str) -> str:
    return f"({text})"


def generate(c) -> Program:
    t = c.pick(["torch", "torch", "th"])
    kind = c.pick(["module", "module", "decorated", "compile-call", "compiled-instance"])
    is_module = kind in ("module", "compiled-instance")
    w = _Writer(c, t, "module" if is_module else kind)
    w.logger = c.pick(["logger", "log_", "logging"])
    w.warn = c.pick(["warnings.warn", "warn"])
    body_size = c.number(1, 5)
    helper = c.chance(0.3)
    in_no_grad = c.chance(0.15)

    # the compiled body first (it decides how many controls there are)
    indent = 2 if is_module else 1
    if in_no_grad:
        w.emit(indent, f"with {t}.no_grad():")
        indent += 1
    if c.chance(0.6):
        w.clean = True
        w.emit(indent, "z = " + c.pick(["x * 1.0", "x + 0.5"] + (["self.proj(x)"] if is_module else [])))
    w.block(indent, 0, body_size)
    if w.clean:
        w.emit(indent, "h = h + z.mean()")
    w.clean = False
    body, w.lines = w.lines, []
    ending = w.ending()
    helper_lines: list[str] = []
    if helper:
        w.kind = "function"  # no `self` in a plain helper
        w.emit(1, "h = h * 1.5")
        w.block(1, 1, c.number(1, 2))
        helper_lines, w.lines, w.kind = w.lines, [], ("module" if is_module else kind)
    controls = sorted(range(len(w.controls)))
    ann = c.pick(["", f": {t}.Tensor", f": {t}.FloatTensor", f": {t}.FloatTensor"])  # annotations let rules prove more
    params = ", ".join([f"h{ann}"] + [f"c{k}{ann and f': {t}.Tensor'}" for k in controls] + ["mask=None"])
    start = c.pick(["x * 1.0", "x", "self.proj(x)"] if is_module else ["x * 1.0", "x"])

    head = ["import torch" if t == "torch" else "import torch as th", "import logging", "import warnings"]
    if w.warn == "warn":
        head.append("from warnings import warn")
    head += ["", "from torch import nn", "import torch.nn.functional as F" if t == "torch" else "from torch.nn import functional as F", ""]
    if w.logger != "logging":
        head.append(f"{w.logger} = logging.getLogger('fuzz')")
    head += ["", "", "class FuzzError(Exception):", "    pass", ""]

    out = head[:]
    out += ["", "def helper(h):", "    h = h * 0.75"]
    out += ["    return h", ""]
    if helper:
        out += ["", f"def helper_body({params}):"] + helper_lines + ["    return h", ""]
    out += ["", "def eager_util(x):  # fuzz:eager-begin", f"    if x.sum() > 0:", "        print('eager', x)",
            "        x = x * 2 if x.mean() > 0 else x", "    return x  # fuzz:eager-end", ""]
    call_helper = "h = helper_body(" + ", ".join(["h"] + [f"c{k}" for k in controls] + ["mask=mask"]) + ")"
    if is_module:
        out += ["", "class Model(nn.Module):", "    def __init__(self):", "        super().__init__()",
                "        self.proj = nn.Linear(4, 4)", "        self.flag = True", "        self.calls = 0",
                f"        self.register_buffer('perm', {t}.tensor([2, 0, 1]))",
                f"        self.register_buffer('far', {t}.tensor([0, 7, 1]))  # out of range: raises if its branch runs",
                f"        self.layerdrop = {c.pick(['0.0', '0.0', '1.5'])}",
                "        self.log = logging.getLogger('fuzz.self')", "",
                "    def scale_up(self, h):", "        return h * 3.0", "",
                f"    def forward(self, x{ann}, {params.split(', ', 1)[1]}):", f"        h = {start}"]
        out += body
        if helper:
            out.append("        " + call_helper)
        out += ["        " + line for line in ending]
        if kind == "compiled-instance":
            out += ["", f"compiled_model = {t}.compile(Model())"]
        factory = "fn = Model()"
    else:
        decorator = [f"@{t}.compile"] if kind == "decorated" else []
        out += [""] + decorator + [f"def step(x{ann}, {params.split(', ', 1)[1]}):", f"    h = {start}"]
        out += body
        if helper:
            out.append("    " + call_helper)
        out += ["    " + line for line in ending]
        if kind == "compile-call":
            out += ["", f"compiled_step = {t}.compile(step)"]
        factory = "fn = getattr(step, '_torchdynamo_orig_callable', step)"
    source = "\n".join(out) + "\n"
    # the self.log attribute and FuzzError are referenced only by some programs; fine.
    states = [sorted(w.controls[k]) for k in controls]
    return Program(source, _make(factory, states), states, kind, w.features)


def _make(factory: str, states: list[list[str]]) -> str:
    """`make()`: the callable, and inputs for every combination of control states (mask varies too)."""
    table = ", ".join(repr(STATES[s].format(t="torch")) for s in STATES)
    return f"""

def make():
    import itertools
    import torch
    g = torch.Generator().manual_seed(1)
    builders = dict(zip({list(STATES)!r}, [{table}]))
    {factory}
    inputs = []
    for i, combo in enumerate(itertools.product(*{states!r})):
        x = torch.randn(3, 4, generator=g).requires_grad_()
        controls = [eval(builders[s], {{"torch": torch, "g": g}}) for s in combo]
        mask = torch.rand(3, 4, generator=g) > 0.3 if i % 2 else None
        inputs.append((x, *controls, mask))
    return fn, inputs
"""
