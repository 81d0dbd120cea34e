"""Compiled scope: which functions run under torch.compile.

Roots: `forward` of nn.Module subclasses (through import aliases, module-level
aliases and same-file base classes), functions decorated with `torch.compile`,
and functions passed to `torch.compile(...)`. Then, transitively, same-file
functions and methods they call, and the `functools.wraps` wrappers of their
same-file decorators (the wrapper runs in place of the function it decorates; for
decorators in other files, the project index's `wrapped`). Functions marked `torch.compiler.disable`
(or `torch._dynamo.disable`) are never in scope: Dynamo does not trace them.
"""
from __future__ import annotations

import functools

import libcst as cst

from .. import fastwalk  # read-only walk without libcst's node rebuilding
from . import external
from .bindings import Bindings, dotted
from .context import calls_below, compile_value, runs_only_in_eager
from .tables import AUTOGRAD_FUNCTION, COMPILE_FUNCS, DISABLE_FUNCS, INIT_METHODS, MODULE_BASE_SUFFIXES, OPAQUE_FUNCS


def is_wrapper(f: cst.FunctionDef) -> bool:
    """Decorated with `wraps(g)` / `functools.wraps(g)`: runs in place of `g` when called."""
    return any(isinstance(d.decorator, cst.Call) and (dotted(d.decorator.func) or "").split(".")[-1] == "wraps"
               for d in f.decorators)


def _attr_ctors(init: cst.FunctionDef, b: Bindings) -> dict[str, set[str]]:
    """attr -> the constructors `init` binds `self.<attr>` to (`self.attr = Ctor(...)`, also through
    a local name: `head = FCOSHead(...)` then `self.head = head`), as written (summary's attrs);
    "=f" for `functools.partial(f, ...)`."""
    local: dict[str, set[str]] = {}
    stored: list[tuple[str, cst.BaseExpression]] = []
    todo: list = [init.body]
    while todo:  # statements only (blocks of if/for/with/try), not the expressions below them
        block = todo.pop()
        for stmt in getattr(block, "body", ()):
            if isinstance(stmt, cst.SimpleStatementLine):
                for node in stmt.body:
                    if not isinstance(node, cst.Assign):
                        continue
                    ctor = dotted(node.value.func) if isinstance(node.value, cst.Call) else None
                    for t in node.targets:
                        if ctor and isinstance(t.target, cst.Name):
                            local.setdefault(t.target.value, set()).add(ctor)
                        else:
                            name = dotted(t.target)
                            if name is not None and name.startswith("self.") and name.count(".") == 1:
                                stored.append((name[5:], node.value))
            elif isinstance(stmt, cst.BaseCompoundStatement) and not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                todo.append(stmt.body)
                for part in ("orelse", "finalbody"):
                    extra = getattr(stmt, part, None)
                    while extra is not None:
                        todo.append(extra.body)
                        extra = getattr(extra, "orelse", None) if isinstance(extra, cst.If) else None
                todo.extend(h.body for h in getattr(stmt, "handlers", ()))
    found: dict[str, set[str]] = {}
    for attr, value in stored:
        got = found.setdefault(attr, set())
        if isinstance(value, cst.Call) and value.args and dotted(value.args[0].value) \
                and b.qualify(value.func) == "functools.partial":
            got.add("=" + dotted(value.args[0].value))  # type: ignore[operator]
        elif isinstance(value, cst.Call) and dotted(value.func):
            got.add(dotted(value.func))  # type: ignore[arg-type]
        elif isinstance(value, cst.Name):
            got |= local.get(value.value, set())
        else:  # `self.forward_fn = self.forward_once` (or `self.a if c else self.b`): the methods
            parts = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
            names = [dotted(p) for p in parts]
            if all(n and n.startswith("self.") and n.count(".") == 1 for n in names):
                got |= {f"={n}" for n in names}  # type: ignore[misc]
    return found


def _decorator_target(dec: cst.Decorator, b: Bindings) -> str | None:
    expr = dec.decorator
    if isinstance(expr, cst.Call):
        expr = expr.func
    return b.qualify(expr)


class _Index(cst.CSTVisitor):
    """One walk: classes, their methods, top-level functions, calls, module-level aliases."""

    def __init__(self) -> None:
        self.classes: dict[str, cst.ClassDef] = {}
        self.nested_classes: list[cst.ClassDef] = []  # classes defined in a def or another class
        self.class_of: dict[cst.FunctionDef, cst.ClassDef] = {}
        self.functions: dict[str, cst.FunctionDef] = {}  # module-level functions
        self.all_functions: list[cst.FunctionDef] = []
        self.nested_in: dict[cst.FunctionDef, cst.FunctionDef] = {}
        self.calls: dict[cst.FunctionDef, list[cst.Call]] = {}
        self.module_calls: list[cst.Call] = []  # calls outside any function
        self.module_aliases: dict[str, cst.BaseExpression] = {}
        self.forward_sets: set[str] = set()  # names assigned to some `X.forward`
        self.iterated: dict[cst.FunctionDef, list[str]] = {}  # `for ... in self.<attr>` per function
        self._stack: list[cst.CSTNode] = []

    def _func(self) -> cst.FunctionDef | None:
        for n in reversed(self._stack):
            if isinstance(n, cst.FunctionDef):
                return n
        return None

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not self._stack:
            self.classes[node.name.value] = node
        else:
            self.nested_classes.append(node)
        self._stack.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.all_functions.append(node)
        if not self._stack:
            self.functions[node.name.value] = node
        elif isinstance(self._stack[-1], cst.ClassDef):
            self.class_of[node] = self._stack[-1]
        elif (outer := self._func()) is not None:
            self.nested_in[node] = outer
        self.calls.setdefault(node, [])
        self._stack.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._stack.pop()

    def visit_Call(self, node: cst.Call) -> None:
        func = self._func()
        (self.calls[func] if func is not None else self.module_calls).append(node)

    def visit_For(self, node: cst.For) -> None:
        name = dotted(node.iter)
        func = self._func()
        if func is not None and name is not None and name.startswith("self.") and name.count(".") == 1:
            self.iterated.setdefault(func, []).append(name[5:])

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self._stack and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self.module_aliases[node.targets[0].target.value] = node.value
        for t in node.targets:  # `Llama.forward = fast_forward`, `m.forward = MethodType(new_forward, m)`
            if isinstance(t.target, cst.Attribute) and t.target.attr.value == "forward":
                value = node.value
                if isinstance(value, cst.Call) and (dotted(value.func) or "").split(".")[-1] == "MethodType" \
                        and value.args:
                    value = value.args[0].value
                name = dotted(value)
                if name is not None:
                    self.forward_sets.add(name)


class _StoredCalls(cst.CSTVisitor):
    """The last names of the calls in the values of `self.<attr> = ...` stores."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self._depth = 0

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(isinstance(t.target, cst.Attribute) and dotted(t.target.value) == "self" for t in node.targets):
            self._depth += 1

    def leave_Assign(self, node: cst.Assign) -> None:
        if any(isinstance(t.target, cst.Attribute) and dotted(t.target.value) == "self" for t in node.targets):
            self._depth -= 1

    def visit_Call(self, node: cst.Call) -> None:
        if self._depth:
            self.names.add((dotted(node.func) or "").split(".")[-1])


class CompiledScope:
    def __init__(self, module: cst.Module, bindings: Bindings, mode: str = "reachable",
                 ext: external.FileFacts | None = None) -> None:
        self.b = bindings
        self.mode = mode
        self.ext = ext if ext is not None else external.EMPTY  # facts from other files (project index)
        self._ctor_maps: dict[cst.FunctionDef, dict[str, set[str]]] = {}  # `__init__` -> _attr_ctors
        self.index = idx = _Index()
        fastwalk.visit(module, idx)
        self.module_classes = self._module_classes()
        # `def _classes(): class Model(nn.Module): ...` (unsloth's longcat): their forward is an entry too
        self.nested_modules = {c for c in self.index.nested_classes
                               if any(self._is_module_base(a.value, self.module_classes) for a in c.bases)}
        self.disabled = {f for f in idx.all_functions if self._decorated(f, DISABLE_FUNCS | OPAQUE_FUNCS)}  # not traced
        self.roots, self.entries = self._roots()  # entries: the roots that are frames Dynamo enters
        self.compiled = self._closure(self.roots)

    # -- classes -------------------------------------------------------------
    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """Like Bindings.qualify, also through module-level aliases (`Module = nn.Module`)."""
        q = self.b.qualify(expr)
        if q is None and isinstance(expr, cst.Name) and expr.value in self.index.module_aliases:
            alias = self.index.module_aliases[expr.value]
            if not (isinstance(alias, cst.Name) and alias.value == expr.value):
                q = self.b.qualify(alias)
        return q

    def _is_module_base(self, base: cst.BaseExpression, known: set[str]) -> bool:
        q = self.qualify(base)
        if q is not None and q.startswith("torch.nn."):
            return True
        name = dotted(base)
        if name is None:
            return False
        if name in known:
            return True
        alias = self.index.module_aliases.get(name)
        if alias is not None and dotted(alias) in known:
            return True
        return name.split(".")[-1].endswith(MODULE_BASE_SUFFIXES)

    def _module_classes(self) -> set[str]:
        known: set[str] = set(self.ext.module_classes) & set(self.index.classes)
        changed = True
        while changed:
            changed = False
            for name, cls in self.index.classes.items():
                if name not in known and any(self._is_module_base(a.value, known) for a in cls.bases):
                    known.add(name)
                    changed = True
        return known

    def class_bases(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """Same-file base classes, nearest first (cls itself included)."""
        out, todo = [], [cls]
        while todo:
            c = todo.pop(0)
            if c in out:
                continue
            out.append(c)
            for a in c.bases:
                name = dotted(a.value)
                if name in self.index.classes:
                    todo.append(self.index.classes[name])
        return out

    def _autograd_function(self, cls: cst.ClassDef) -> bool:
        if any(_decorator_target(d, self.b) in OPAQUE_FUNCS for d in cls.decorators):
            return False  # `@allow_in_graph class Fn(torch.autograd.Function)`: its methods are not traced
        return any(self.b.qualify(a.value) in AUTOGRAD_FUNCTION for c in self.class_bases(cls) for a in c.bases)

    def method(self, cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
        for c in self.class_bases(cls):
            for stmt in c.body.body:
                if stmt.__class__ is cst.FunctionDef and stmt.name.value == name:
                    return stmt
        return None

    def _overrides(self, cls: cst.ClassDef, name: str) -> list[cst.FunctionDef]:
        """Methods `name` of the file's subclasses of `cls`: `self.name()` in a method of `cls` runs
        theirs on their instances (gliner: a subclass's `loss` called from the inherited forward)."""
        subs = self.__dict__.get("_subclasses")
        if subs is None:
            subs = self._subclasses = {}
            for c in self.index.classes.values():
                for base in self.class_bases(c)[1:]:
                    subs.setdefault(base, []).append(c)
        return [stmt for c in subs.get(cls, ()) for stmt in c.body.body
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name]

    def _attr_method(self, cls: cst.ClassDef, attr: str, name: str) -> cst.FunctionDef | None:
        """`self.attr.name(...)` where `__init__` binds `self.attr = Ctor(...)`, Ctor a class of the
        file (performer's `self.proj_updater.redraw_projections()`; `__call__` for `self.attr(...)`,
        `__iter__` for `for x in self.attr`); as the project index's `_attr_method`."""
        for c in self.class_bases(cls):
            ctors: set[str] = set()
            for stmt in c.body.body:
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value in INIT_METHODS:
                    got = self._ctor_maps.get(stmt)
                    if got is None:
                        got = self._ctor_maps[stmt] = _attr_ctors(stmt, self.b)
                    ctors.update(got.get(attr, ()))
            if ctors:
                for ctor in sorted(ctors):  # several: the first class of the file that has the method
                    if ctor.startswith("=self."):  # `self.fn = self.forward_once`: the method
                        m = self.method(cls, ctor[6:]) if name == "__call__" else None
                    elif ctor.startswith("="):  # `functools.partial(f, ...)`: calling it calls `f`
                        m = self.index.functions.get(ctor[1:]) if name == "__call__" else None
                    else:
                        m = self.method(self.index.classes[ctor], name) if ctor in self.index.classes else None
                    if m is not None:
                        return m
                return None
        return None

    # -- roots and closure ---------------------------------------------------
    def _decorated(self, f: cst.FunctionDef, targets: set[str]) -> bool:
        return any(_decorator_target(d, self.b) in targets for d in f.decorators)

    def _compile_targets(self, calls: list[cst.Call], owner: cst.ClassDef | None) -> list[cst.FunctionDef]:
        found = []
        for call in calls:
            if self.b.qualify(call.func) not in COMPILE_FUNCS or not call.args:
                continue
            arg = call.args[0].value
            name = dotted(arg)
            if name in self.index.functions:
                found.append(self.index.functions[name])
            elif name and name.startswith("self.") and owner is not None:
                m = self.method(owner, name.split(".", 1)[1])
                if m is not None:
                    found.append(m)
        return found

    def qualname(self, f: cst.FunctionDef) -> str | None:
        """"f" for a module-level def, "Cls.m" for a method of a module-level class (the index's names)."""
        if self.index.functions.get(f.name.value) is f:
            return f.name.value
        cls = self.index.class_of.get(f)
        if cls is not None and self.index.classes.get(cls.name.value) is cls:
            return f"{cls.name.value}.{f.name.value}"
        return None

    def top_qualname(self, f: cst.FunctionDef) -> str | None:
        """The index's name of the top-level def or method that `f` is (or is nested in)."""
        return self.qualname(self.top_def(f))

    def _roots(self) -> tuple[set[cst.FunctionDef], set[cst.FunctionDef]]:
        """(the defs compiled code starts from, and of those the frames Dynamo enters itself)."""
        idx = self.index
        roots: set[cst.FunctionDef] = set()
        explicit = set(self._compile_targets(idx.module_calls, None))  # passed to torch.compile(...)
        entries: set[cst.FunctionDef] = set()  # of the roots, the frames Dynamo enters
        for f in idx.all_functions:
            cls = idx.class_of.get(f)
            if self.ext.compiled and self.qualname(f) in self.ext.compiled:
                roots.add(f)  # called compiled from another file: traced inline, unless an entry there
                if self.qualname(f) in self.ext.entries:
                    entries.add(f)
            if cls is not None and f.name.value == "forward" and (
                    cls in self.nested_modules or cls.name.value in self.module_classes and idx.classes.get(cls.name.value) is cls):
                entries.add(f)
            if self._decorated(f, COMPILE_FUNCS):
                entries.add(f)
            if idx.forward_sets and idx.functions.get(f.name.value) is f and f.name.value in idx.forward_sets:
                entries.add(f)  # installed as a module's forward (unsloth's `Llama.forward = fast_forward`)
            if self.ext.wrapped and is_wrapper(f) and self.top_def(f).name.value in self.ext.wrapped:
                roots.add(f)  # the wrapper of a decorator that another file applies to compiled code
            explicit.update(self._compile_targets(idx.calls.get(f, []), cls))
        self.explicit_targets = explicit
        return (roots | entries | explicit) - self.disabled, (entries | explicit) - self.disabled

    @functools.cached_property
    def _children(self) -> dict[cst.FunctionDef, list[cst.FunctionDef]]:
        """def -> the defs nested directly in it, in source order."""
        out: dict[cst.FunctionDef, list[cst.FunctionDef]] = {}
        for g, parent in self.index.nested_in.items():
            out.setdefault(parent, []).append(g)
        return out

    def _enclosing(self, f: cst.FunctionDef) -> list[cst.FunctionDef]:
        """The defs `f` is nested in, innermost first."""
        out = []
        while f in self.index.nested_in:
            f = self.index.nested_in[f]
            out.append(f)
        return out

    def top_def(self, f: cst.FunctionDef) -> cst.FunctionDef:
        """The module-level def or method that `f` is, or is nested in."""
        return (self._enclosing(f) or [f])[-1]

    def _wrappers(self, f: cst.FunctionDef) -> list[cst.FunctionDef]:
        """The `wraps` wrappers nested in the same-file decorators of `f`: they run when `f` is called."""
        out = []
        for d in f.decorators:
            name = dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
            todo = [self.index.functions[name]] if name in self.index.functions else []
            while todo:  # every def nested in the decorator, at any depth
                for g in self._children.get(todo.pop(), []):
                    todo.append(g)
                    if is_wrapper(g):
                        out.append(g)
        return out

    def _callees(self, f: cst.FunctionDef) -> list[cst.FunctionDef]:
        idx = self.index
        owner = idx.class_of.get(f)
        outer = f
        while owner is None and outer in idx.nested_in:
            outer = idx.nested_in[outer]
            owner = idx.class_of.get(outer)
        out = self._wrappers(f)
        enclosing = self._enclosing(f)  # defs whose nested defs `f` can call by name
        calls = self._compiled_calls(f)
        eager = self._in_disabled_lambdas(calls) if self.disabled else set()
        for call in calls:
            name = dotted(call.func)
            if name is None or call in eager:
                continue
            local = [h for p in enclosing for h in self._children.get(p, [])
                     if h.name.value == name] if enclosing and "." not in name else []
            if local:
                out.extend(local)  # a def nested beside `f` (a wrapper's helpers)
            elif name in idx.functions:
                out.append(idx.functions[name])
            elif name in idx.classes and name not in self.module_classes:
                m = self.method(idx.classes[name], "__init__")  # `Coupling(mask)`: Dynamo traces its __init__ (zuko)
                if m is not None:
                    out.append(m)
            elif owner is not None and name.startswith("self.") and name.count(".") == 1:
                m = self.method(owner, name.split(".")[1])
                if m is None:  # `self.fg_bg_sampler(labels)`: the object's __call__ (torchvision)
                    m = self._attr_method(owner, name.split(".")[1], "__call__")
                if m is not None:
                    out.append(m)
                out.extend(self._overrides(owner, name.split(".")[1]))
            elif owner is not None and name.startswith("self.") and name.count(".") == 2:
                m = self._attr_method(owner, *name.split(".")[1:])
                if m is not None:
                    out.append(m)
            elif name.count(".") == 1 and name.split(".")[0] in idx.classes:
                cls, attr = idx.classes[name.split(".")[0]], name.split(".")[1]
                m = self.method(cls, attr)
                if m is None and attr == "apply" and self._autograd_function(cls):
                    m = self.method(cls, "forward")  # `MyFunction.apply(x)`: Dynamo traces its forward
                    back = self.method(cls, "backward")  # and its backward (fairscale's mevo: a print there breaks)
                    if back is not None:
                        out.append(back)
                if m is not None:
                    out.append(m)
        for attr in idx.iterated.get(f, []) if owner is not None else []:  # `for layer in self.layers:`
            m = self._attr_method(owner, attr, "__iter__")
            if m is not None:
                out.append(m)
        # functions defined inside f run when f calls them
        out.extend(self._children.get(f, []))
        return out

    def _compiled_calls(self, f: cst.FunctionDef) -> list[cst.Call]:
        """The calls of `f` that may run under compile: not those in `if not is_compiling():` and the
        like (context.runs_only_in_eager), looked for only where `f` calls such a check."""
        calls = self.index.calls.get(f, [])
        if not any(compile_value(c, self.b) is not None for c in calls):
            return calls
        up = fastwalk.parents(f).get
        return [c for c in calls if not runs_only_in_eager(c, up, self.b)]

    def _closure(self, roots: set[cst.FunctionDef]) -> set[cst.FunctionDef]:
        if self.mode == "all":
            return {f for f in self.index.all_functions if not self._inside_disabled(f)}
        seen: set[cst.FunctionDef] = set()
        todo = list(roots)
        while todo:
            f = todo.pop()
            if f in seen or f in self.disabled:
                continue
            seen.add(f)
            todo.extend(self._callees(f))
        return seen

    def _in_disabled_lambdas(self, calls: list[cst.Call]) -> set[cst.Call]:
        """Calls in lambdas handed to a disabled function of this file (`run_eagerly(lambda: probe(x))`):
        they run inside it, never compiled."""
        return {c for call in calls if self.is_disabled_call(call)
                for a in call.args if isinstance(a.value, cst.Lambda) for c in calls_below(a.value)}

    def _inside_disabled(self, f: cst.FunctionDef | None) -> bool:
        """`f`, or a def around it, is marked torch.compiler.disable: Dynamo traces none of it."""
        while f is not None:
            if f in self.disabled:
                return True
            f = self.index.nested_in.get(f)
        return False

    def is_compiled(self, f: cst.FunctionDef) -> bool:
        return f in self.compiled

    def frame_root(self, f: cst.FunctionDef) -> bool:
        """`f` is likely the frame `torch.compile` is applied to, not one Dynamo inlines: a def
        decorated with or passed to `torch.compile`, or the undecorated `forward` of a module that
        no other module class of this file builds in an attribute store (a submodule's forward is
        inlined into its parent's frame). Calls deferred in an inlined frame are never replayed (torch 2.13/2.14)."""
        idx = self.index
        if self._decorated(f, COMPILE_FUNCS) or f in self.explicit_targets:
            return True
        cls = idx.class_of.get(f)
        if cls is None or f.name.value != "forward" or f.decorators or cls.name.value not in self.module_classes:
            return False
        names = {c.name.value for c in idx.classes.values() if cls in self.class_bases(c)}
        return not names & self._built_by_modules

    @functools.cached_property
    def _built_by_modules(self) -> set[str]:
        """The last names of what this file's module classes call in attribute stores (`Block` in
        `self.block = Block()`, `self.layers = nn.ModuleList(Block() for ...)`): the classes they
        build as submodules. Only stores are read: the CLI's skeleton keeps them and drops other
        statements of non-compiled methods, and the answer must not depend on it."""
        built: set[str] = set()
        for name in self.module_classes:
            visitor = _StoredCalls()
            fastwalk.visit(self.index.classes[name], visitor)
            built |= visitor.names
        return built

    def reorderable(self, name: str) -> bool:
        """`name` is registered at module level in `torch._dynamo.config.reorderable_logging_functions`
        (as graphmend's deferred helpers are): Dynamo defers its calls instead of breaking."""
        for call in self.index.module_calls:
            func = dotted(call.func) or ""
            if (func.endswith("reorderable_logging_functions.add") and len(call.args) == 1
                    and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == name):
                return True
        return False

    def is_disabled_call(self, call: cst.Call) -> bool:
        """A call of a same-file function marked torch.compiler.disable."""
        name = dotted(call.func)
        return name in self.index.functions and self.index.functions[name] in self.disabled
