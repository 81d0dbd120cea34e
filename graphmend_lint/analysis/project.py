"""The project index: facts one file cannot give alone, read from the sources of many.

For the files of a run, and for any module they import from (the project's own files and
installed packages, found on the search path below and read as SOURCE, never imported):
  - which classes are nn.Modules through any chain of bases, imports and re-exports
    (`from .base import Base`, `from pkg import Base` re-exported by `pkg/__init__.py`,
    `from m import *`, module-level aliases), and `module-bases` from the settings;
  - which defs run compiled: the `forward` of every nn.Module class of the run (inherited ones
    too), defs decorated with or passed to `torch.compile`, `compiled-functions` from the
    settings, then every def they call, across modules (`helper()`, `mod.helper()`,
    `self.m()` and `super().m()` through the bases); a compiled def's decorator whose nested
    wrapper is `functools.wraps`-decorated (`dynamic_rope_update` on a rotary `forward`) runs its
    wrapper in its place: the decorator's nested defs run compiled, and so does what they call;
  - which defs are compile guards (every `return` gives `torch.compiler.is_compiling()` or a
    relative, or False).
Modules are looked up by hand: the top-level name in the run's own roots, then in `sys.path`,
then submodule directories (importlib's find_spec("a.b") would import `a`). torch's own source is
never read: `torch.nn.*` are modules, and no other torch name is a project function.

The run is a whole project (analysis/root.py, parallel.py): every Python file of the project of
each linted file, so a helper called compiled from anywhere in the project is compiled code
whichever file is linted. What it cannot see: calls through variables, containers or `getattr`,
bases built at run time, packages not installed in the linter's environment, callers outside the
project (another project that imports this one), and a second file with the same module name in
one project (loose scripts in several folders: the first in walk order is indexed).
`module-bases` / `compiled-functions` name what it cannot see.
"""
from __future__ import annotations

import ast
import fnmatch
import functools
import os
import re
import sys
import warnings
from pathlib import Path

from . import summary as summary_mod
from .external import FileFacts
from .tables import (AUTOGRAD_FUNCTION, COMPILE_FUNCS, DISABLE_FUNCS, IS_COMPILING, IS_COMPILING_NAMES,
                     MODULE_BASE_SUFFIXES, NOT_COMPILING, OPAQUE_FUNCS)

MAX_DEPTH = 30  # longest chain of re-exports / bases followed


@functools.lru_cache(maxsize=4096)
def _package_of(d: Path) -> tuple[tuple[str, ...], Path]:
    """(package parts, import root) of a folder: the chain of folders holding an __init__.py."""
    if (d / "__init__.py").is_file() and d.name.isidentifier() and d.parent != d:
        parts, root = _package_of(d.parent)
        return (*parts, d.name), root
    return (), d


def module_name(path: Path) -> tuple[str, Path, bool]:
    """(dotted module name, the folder it is importable from, is a package) from the __init__.py chain."""
    path = path.absolute()
    is_pkg = path.name == "__init__.py"
    parts, root = _package_of(path.parent)
    if not is_pkg:
        parts = (*parts, path.stem)
    return ".".join(parts), root, is_pkg


def parse_summary(source: bytes) -> dict | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
        return summary_mod.summarize(tree, source.decode("utf-8", "replace"))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _by_module(defs: set[tuple[str, str]]) -> dict[str, set[str]]:
    """(module, qn) pairs grouped: module -> its qns."""
    out: dict[str, set[str]] = {}
    for m, qn in defs:
        out.setdefault(m, set()).add(qn)
    return out


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)


class ProjectIndex:
    """`run`: module name -> path of the run's files; `summaries`: those already read (the files that
    may hold roots); `read(path)` -> summary for any other file (the caller caches it); `grep`: see
    `_overrides`.
    `module_bases` / `compiled_functions`: settings patterns."""

    def __init__(self, run: dict[str, Path], summaries: dict[str, tuple[Path, dict | None]], roots: list[Path],
                 read, module_bases: tuple[str, ...] = (), compiled_functions: tuple[str, ...] = (),
                 grep=None, ahead=None) -> None:
        self.run = run
        self.read = read
        self.grep = grep  # (bytes pattern) -> the run's modules not read up front whose text matches it
        self.ahead = ahead  # (module names) -> None: a hint, modules about to be read (read together)
        self.module_bases = module_bases
        self.compiled_functions = compiled_functions
        self.project_roots = [r.resolve() for r in roots]
        self.search = list(dict.fromkeys([*self.project_roots, *(Path(p).resolve() for p in sys.path if p)]))
        self.mods: dict[str, dict | None] = {m: s for m, (_, s) in summaries.items()}
        self.rooted = list(summaries)  # run modules read up front: where roots are looked for
        self.paths: dict[str, Path] = dict(run)
        self.is_pkg: dict[str, bool] = {m: p.name == "__init__.py" for m, p in run.items()}
        self.external: dict[str, Path] = {}  # modules read from outside the run
        self._tops: dict[str, list[Path]] = {}
        self._qualified: dict[tuple[str, str], str | None] = {}
        self._project_tops = {m.split(".")[0] for m in run}
        self._lookups: dict[str, tuple | None] = {}
        self._module_class: dict[tuple[str, str], bool] = {}
        self._methods: dict[tuple[str, str, str, bool], tuple[str, str] | None] = {}  # method()'s answers
        self._guard: dict[tuple[str, str], bool] = {}
        self._never: dict[tuple[str, str], bool] = {}  # is_never's answers
        self._compiled: set[tuple[str, str]] | None = None
        self._entries: set[tuple[str, str]] = set()  # the roots that are compiled: frames Dynamo enters
        self._wrapped: set[tuple[str, str]] = set()  # decorators whose wrappers run compiled
        self._by_module: dict[str, set[str]] | None = None
        self._ancestors_memo: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}
        self._grepped: set[str] = set()  # method names looked for in the files not read up front
        self._grep_hits: list[str] = []  # those files' modules that define one
        self._wrapped_by_module: dict[str, set[str]] = {}
        self._entries_by_module: dict[str, set[str]] = {}
        self._copies: dict[str, tuple] = {}  # generated files: a source module's renames and class modules
        self._listed: dict[str, frozenset[str]] = {}  # folder -> its file names (`_find`)
        # import roots that are folders without __init__.py: a namespace package's portion when the
        # project imports through their name (megatron-core's `megatron/`: `from megatron.core.x import f`)
        self._namespaces = {r.name: r for r in self.project_roots
                            if r.name.isidentifier() and not (r / "__init__.py").is_file()}

    # -- finding modules -----------------------------------------------------
    def _top(self, name: str) -> list[Path]:
        if name not in self._tops:
            found = []
            for d in self.search:
                if (d / name).is_dir() or (d / f"{name}.py").is_file():
                    found.append(d)
            self._tops[name] = found
        return self._tops[name]

    def _files(self, folder: str) -> frozenset[str]:
        """The names of the regular files (links followed) in `folder`, read once a run."""
        got = self._listed.get(folder)
        if got is None:
            try:
                with os.scandir(folder) as it:
                    got = frozenset(e.name for e in it if e.is_file())
            except OSError:
                got = frozenset()
            self._listed[folder] = got
        return got

    def _find(self, name: str) -> Path | None:
        parts = name.split(".")
        if not all(p.isidentifier() for p in parts):
            return None
        for d in self._top(parts[0]):
            folder = os.path.join(d, *parts[:-1])
            if "__init__.py" in self._files(os.path.join(folder, parts[-1])):
                return d.joinpath(*parts, "__init__.py")
            if parts[-1] + ".py" in self._files(folder):
                return d.joinpath(*parts[:-1], parts[-1] + ".py")
        return None

    def module(self, name: str) -> dict | None:
        if name in self.mods:
            return self.mods[name]
        s = None
        if name in self.run:
            s = self.read(self.run[name])
        elif not (name == "torch" or name.startswith("torch.")):
            path = self._find(name)
            if path is not None:
                s = self.read(path)
                self.paths[name] = path
                self.is_pkg[name] = path.name == "__init__.py"
                self.external[name] = path
        self.mods[name] = s
        return s

    def in_project(self, qual: str) -> bool:
        """`qual` may name something of the run or the project (not of an installed package)."""
        top = qual.split(".")[0]
        if top not in self._project_tops:
            if not any(d in self.project_roots for d in self._top(top)):
                return False
            self._project_tops.add(top)
        return True

    def traversable(self, mod: str) -> bool:
        """Calls are followed into the run's files and the project's own (not installed packages)."""
        if mod in self.run:
            return True
        path = self.paths.get(mod)
        return path is not None and any(path.is_relative_to(r) for r in self.project_roots) \
            and "site-packages" not in path.parts

    # -- names ---------------------------------------------------------------
    def absolute(self, mod: str, target: str) -> str:
        level = len(target) - len(target.lstrip("."))
        if not level:
            return target
        parts = mod.split(".")
        if not self.is_pkg.get(mod, False):
            parts = parts[:-1]
        parts = parts[:len(parts) - (level - 1)] if level > 1 else parts
        rest = target[level:]
        return ".".join([*parts, rest] if rest else parts)

    def qualify(self, mod: str, name: str, depth: int = 0) -> str | None:
        """The qualified name `name` (dotted, as written in `mod`) refers to, or None."""
        key = (mod, name)
        if key not in self._qualified:
            self._qualified[key] = self._qualify(mod, name, depth)
        return self._qualified[key]

    def _qualify(self, mod: str, name: str, depth: int) -> str | None:
        s = self.module(mod)
        if s is None or depth > MAX_DEPTH:
            return None
        head, _, rest = name.partition(".")
        if head in s["imports"]:
            target = self._in_namespace(self.absolute(mod, s["imports"][head]))
        elif head in s["classes"] or head in s["defs"]:
            target = f"{mod}.{head}"
        elif head in s["aliases"] and s["aliases"][head] != name:
            return self.qualify(mod, s["aliases"][head] + (f".{rest}" if rest else ""), depth + 1)
        else:
            for star in s["star"]:
                m = self.absolute(mod, star)
                if m != mod and self.lookup(f"{m}.{head}", depth + 1) is not None:
                    target = f"{m}.{head}"
                    break
                if m != mod and not head.startswith("_"):  # a name the module imports: `nn` (tsai's
                    q = self.qualify(m, head, depth + 1)   # `from ..imports import *`, `import torch.nn as nn` there)
                    if q is not None and not q.startswith(f"{m}."):
                        target = q
                        break
            else:
                return None
        return f"{target}.{rest}" if rest else target

    def _in_namespace(self, qual: str) -> str:
        """`megatron.core.x` -> `core.x` where `megatron` is an import root of the project without
        __init__.py (a namespace package portion) that holds `core`: the run's name of that module."""
        head, _, rest = qual.partition(".")
        root = self._namespaces.get(head) if rest else None
        if root is None or head in self._project_tops:
            return qual
        top = rest.split(".")[0]
        if top in self._project_tops or "__init__.py" in self._files(os.path.join(root, top)) \
                or top + ".py" in self._files(str(root)):
            return rest
        return qual

    def lookup(self, qual: str, depth: int = 0) -> tuple | None:
        """("class", mod, name) | ("def", mod, "f" or "C.m") | ("mod", mod) | None for a qualified name."""
        if qual in self._lookups:
            return self._lookups[qual]
        self._lookups[qual] = None  # cycles end here
        out = self._lookup(qual, depth)
        self._lookups[qual] = out
        return out

    def _lookup(self, qual: str, depth: int) -> tuple | None:
        if depth > MAX_DEPTH or qual == "torch" or qual.startswith("torch."):
            return None
        parts = qual.split(".")
        for i in range(len(parts), 0, -1):
            mod = ".".join(parts[:i])
            s = self.module(mod)
            if s is None:
                continue
            rest = parts[i:]
            if not rest:
                return ("mod", mod)
            head = rest[0]
            if head in s["classes"]:
                if len(rest) == 1:
                    return ("class", mod, head)
                qn = f"{head}.{rest[1]}"
                if len(rest) == 2 and rest[1] == "apply" and qn not in s["defs"] and self.is_autograd_function(mod, head):
                    m = self.method(mod, head, "forward")  # `MyFunction.apply(x)`: Dynamo traces its forward
                    return ("def", *m) if m is not None else None
                return ("def", mod, qn) if len(rest) == 2 and qn in s["defs"] else None
            if head in s["defs"]:
                return ("def", mod, head) if len(rest) == 1 else None
            q = self.qualify(mod, ".".join(rest), depth + 1)
            if q is not None and q != qual:
                return self.lookup(q, depth + 1)
            return None
        return None

    # -- classes ---------------------------------------------------------------
    def bases(self, mod: str, cls: str) -> list[tuple[str | None, str]]:
        """(qualified name or None, as written) of each base of mod.cls."""
        s = self.module(mod)
        return [(self.qualify(mod, b), b) for b in (s["classes"].get(cls, []) if s else [])]

    def is_module_class(self, mod: str, cls: str, depth: int = 0) -> bool:
        key = (mod, cls)
        if key in self._module_class:
            return self._module_class[key]
        self._module_class[key] = False  # cycles
        found = False
        if depth <= MAX_DEPTH:
            for q, written in self.bases(mod, cls):
                if q is None:
                    found = written.split(".")[-1].endswith(MODULE_BASE_SUFFIXES)
                elif q.startswith("torch.nn.") or _matches(q, self.module_bases):
                    found = True
                else:
                    r = self.lookup(q)
                    found = r is not None and r[0] == "class" and self.is_module_class(r[1], r[2], depth + 1)
                if found:
                    break
        self._module_class[key] = found
        return found

    def method(self, mod: str, cls: str, name: str, skip_self: bool = False, depth: int = 0) -> tuple[str, str] | None:
        """The def `name` that `cls` (or its first base that has one) provides, through the bases."""
        if depth:
            return self._method(mod, cls, name, skip_self, depth)
        key = (mod, cls, name, skip_self)  # the answers from the top, kept (the traversal asks again and again)
        if key not in self._methods:
            self._methods[key] = self._method(mod, cls, name, skip_self, 0)
        return self._methods[key]

    def _method(self, mod: str, cls: str, name: str, skip_self: bool, depth: int) -> tuple[str, str] | None:
        s = self.module(mod)
        if s is None or depth > MAX_DEPTH:
            return None
        if not skip_self and f"{cls}.{name}" in s["defs"]:
            return (mod, f"{cls}.{name}")
        for base in self._base_classes(mod, cls):
            found = self.method(*base, name, False, depth + 1)
            if found is not None:
                return found
        return None

    def _base_classes(self, mod: str, cls: str):
        """(module, class) of each base of `mod.cls` that the index finds to be a class, in order."""
        for q, _ in self.bases(mod, cls):
            r = self.lookup(q) if q else None
            if r is not None and r[0] == "class":
                yield r[1], r[2]

    # -- compiled defs -----------------------------------------------------------
    def _info(self, mod: str, qn: str) -> dict | None:
        s = self.module(mod)
        return s["defs"].get(qn) if s else None

    def _disabled(self, mod: str, qn: str, kinds: frozenset[str] | set[str] = DISABLE_FUNCS) -> bool:
        info = self._info(mod, qn)
        return info is not None and any(self.qualify(mod, d) in kinds for d in info["deco"])

    def callee(self, mod: str, qn: str, call: str) -> tuple[str, str] | None:
        cls = qn.split(".")[0] if "." in qn else None
        head, _, rest = call.partition(".")
        if head in ("self", "cls") and cls and rest and "." not in rest:
            found = self.method(mod, cls, rest)
            if found is None and head == "self":  # `self.fg_bg_sampler(labels)`: the object's __call__
                found = self._attr_method(mod, cls, rest, "__call__")
            return found
        if head == "self" and cls and rest.count(".") == 1:
            return self._attr_method(mod, cls, *rest.split("."))
        if head == "super()" and cls and rest and "." not in rest:
            return self.method(mod, cls, rest, skip_self=True)
        q = self.qualify(mod, call)
        r = self.lookup(q) if q and self.in_project(q) else None  # installed packages: not followed
        if r is not None and r[0] == "class" and not self.is_module_class(r[1], r[2]):
            return self.method(r[1], r[2], "__init__")  # `Coupling(mask)`: Dynamo traces its __init__ (zuko)
        return (r[1], r[2]) if r is not None and r[0] == "def" else None

    def _attr_method(self, mod: str, cls: str, attr: str, name: str, depth: int = 0) -> tuple[str, str] | None:
        """`self.attr.name(...)` where `__init__` of `cls` (or of a base) binds `self.attr = Ctor(...)`
        (also through a local name), Ctor a class of the project with that method (momentfm's
        `self.mask_generator.generate_mask`; `__call__` for `self.attr(...)`, `__iter__` for
        `for x in self.attr`: fairseq's LayerDropModuleList); of several constructors, the first one
        of the project that has it."""
        s = self.module(mod)
        if s is None or depth > MAX_DEPTH:
            return None
        ctor = s.get("attrs", {}).get(cls, {}).get(attr)
        if ctor is None:
            for base in self._base_classes(mod, cls):
                found = self._attr_method(*base, attr, name, depth + 1)
                if found is not None:
                    return found
            return None
        for one in ctor.split("|"):  # several: the first class of the project that has the method
            if one.startswith("=self.") and name == "__call__":  # `self.fn = self.forward_once`
                found = self.method(mod, cls, one[6:])
                if found is not None:
                    return found
                continue
            if one.startswith("="):  # `functools.partial(f, ...)`: calling it calls `f`
                q = self.qualify(mod, one[1:]) if name == "__call__" else None
                r = self.lookup(q) if q and self.in_project(q) else None
                if r is not None and r[0] == "def":
                    return r[1], r[2]
                continue
            q = self.qualify(mod, one)
            r = self.lookup(q) if q and self.in_project(q) else None
            found = self.method(r[1], r[2], name) if r is not None and r[0] == "class" else None
            if found is not None:
                return found
        return None

    def is_autograd_function(self, mod: str, cls: str, depth: int = 0) -> bool:
        """`cls` derives from torch.autograd.Function (through project classes)."""
        for q, _ in self.bases(mod, cls):
            if q in AUTOGRAD_FUNCTION:
                return True
            r = self.lookup(q) if q and depth < MAX_DEPTH else None
            if r is not None and r[0] == "class" and self.is_autograd_function(r[1], r[2], depth + 1):
                return True
        return False

    def _base_modules(self) -> list[str]:
        """The run's modules, not read yet, that the rooted modules' class bases come from through an
        import (`_roots` reads them next)."""
        out: list[str] = []
        for mod in self.rooted:
            s = self.mods.get(mod)
            for bases in s["classes"].values() if s else ():
                for b in bases:
                    head, _, rest = b.partition(".")
                    if head not in s["imports"]:
                        continue
                    parts = self.absolute(mod, s["imports"][head]).split(".") + (rest.split(".") if rest else [])
                    for i in range(len(parts), 0, -1):
                        m = ".".join(parts[:i])
                        if m in self.run:
                            if m not in self.mods:
                                out.append(m)
                            break
        return out

    def _roots(self) -> set[tuple[str, str]]:
        roots: set[tuple[str, str]] = set()
        if self.ahead is not None:
            self.ahead(self._base_modules())
        for mod in self.rooted:
            s = self.mods.get(mod)
            if s is None:
                continue
            for cls in s["classes"]:
                if self.is_module_class(mod, cls):
                    f = self.method(mod, cls, "forward")
                    if f is not None:
                        roots.add(f)
            for qn, info in s["defs"].items():
                if any(self.qualify(mod, d) in COMPILE_FUNCS for d in info["deco"]) or \
                        _matches(f"{mod}.{qn}", self.compiled_functions):
                    roots.add((mod, qn))
            for name in s.get("fwd", ()):  # `Llama.forward = fast_forward`: a forward installed by assignment
                r = self.lookup(self.qualify(mod, name) or "")
                if r is not None and r[0] == "def":
                    roots.add((r[1], r[2]))
            for entry in s["compile"]:
                func, arg = entry.split(" ")
                if self.qualify(mod, func) in COMPILE_FUNCS:
                    r = self.lookup(self.qualify(mod, arg) or "")
                    if r is not None and r[0] == "def":
                        roots.add((r[1], r[2]))
        return roots

    def compiled(self) -> set[tuple[str, str]]:
        if self._compiled is None:
            seen: set[tuple[str, str]] = set()
            roots = self._roots()
            on_self: dict[tuple[str, str], set[str]] = {}  # (module, class) -> m of `self.m()` in its compiled methods
            todo = list(roots)
            while todo:
                self._traverse(todo, seen, on_self)
                todo = [o for o in self._overrides(on_self) if o not in seen]
            self._compiled = seen
            self._entries = roots & seen
        return self._compiled

    def _traverse(self, todo: list[tuple[str, str]], seen: set[tuple[str, str]],
                  on_self: dict[tuple[str, str], set[str]]) -> None:
        while todo:
            mod, qn = item = todo.pop()
            if item in seen or self._disabled(mod, qn, DISABLE_FUNCS | OPAQUE_FUNCS) or not self.traversable(mod):
                continue
            seen.add(item)
            info = self._info(mod, qn)
            cond = info.get("cond", {}) if info else {}
            for call in info["calls"] if info else []:
                if call in cond and all(self._never_call(mod, g) for g in cond[call]):
                    continue  # only under `if torchvision._is_tracing():`, never true under compile
                head, _, rest = call.partition(".")
                if head == "self" and rest and "." not in rest and "." in qn \
                        and self.method(mod, qn.split(".")[0], rest) is not None:  # a method, not a layer
                    on_self.setdefault((mod, qn.split(".")[0]), set()).add(rest)
                t = self.callee(mod, qn, call)
                if t is not None and t not in seen:
                    todo.append(t)
                if t is not None and call.endswith(".apply") and t[1].endswith(".forward"):
                    back = (t[0], t[1][:-len("forward")] + "backward")  # Dynamo traces an autograd.Function's backward too
                    if self._info(*back) is not None and back not in seen:
                        todo.append(back)
            for d in info["deco"] if info else []:
                t = self.callee(mod, qn, d)
                w = self._info(*t) if t is not None else None
                if w is not None and w.get("wraps") and t not in self._wrapped:
                    self._wrapped.add(t)  # its wrapper, not its body, runs compiled
                    for call in w["calls"]:
                        c = self.callee(t[0], t[1], call)
                        if c is not None and c not in seen:
                            todo.append(c)

    def _overrides(self, on_self: dict[tuple[str, str], set[str]]) -> list[tuple[str, str]]:
        """Methods `m` of project classes whose base (in any module) calls `self.m()` in a compiled
        method: on their instances theirs runs (pytorch-metric-learning's losses define `compute_loss`,
        which `BaseMetricLossFunction.forward` calls, in files without a forward). Looked for in the
        files read up front and in the other files of the run whose text defines such a name
        (`grep`), so the answer is the project's, not the run's."""
        names = set().union(*on_self.values()) if on_self else set()
        new = names - self._grepped
        if new and self.grep is not None:
            self._grepped |= new
            pattern = re.compile(rb"def\s+(?:" + b"|".join(re.escape(n.encode()) for n in sorted(new)) + rb")\s*[(\[]")  # `def m[T](` too
            self._grep_hits.extend(m for m in self.grep(pattern) if m not in self._grep_hits)
        out = []
        for mod in [*self.rooted, *self._grep_hits]:
            s = self.module(mod)
            for qn in s["defs"] if s else ():
                cls, _, m = qn.partition(".")
                if m in names and "." not in m and any(
                        m in on_self.get(a, ()) for a in self._ancestors(mod, cls)):
                    out.append((mod, qn))
        return out

    def _ancestors(self, mod: str, cls: str, depth: int = 0) -> frozenset[tuple[str, str]]:
        """(module, class) of every project class `mod.cls` derives from, itself not included."""
        key = (mod, cls)
        got = self._ancestors_memo.get(key)
        if got is None:
            self._ancestors_memo[key] = frozenset()  # cycles
            found: set[tuple[str, str]] = set()
            if depth <= MAX_DEPTH:
                for base in self._base_classes(mod, cls):
                    found.add(base)
                    found |= self._ancestors(*base, depth + 1)
            got = self._ancestors_memo[key] = frozenset(found)
        return got

    # -- guards --------------------------------------------------------------------
    def is_guard(self, mod: str, qn: str, depth: int = 0) -> bool:
        key = (mod, qn)
        if key in self._guard:
            return self._guard[key]
        self._guard[key] = False
        info = self._info(mod, qn)
        ok = False
        if info and info["ret"] and depth <= MAX_DEPTH:
            kinds = []
            for r in info["ret"]:
                if r in ("F", "?"):
                    kinds.append(r)
                    continue
                parts = []  # "a|b": `a() or b()`, True under compile when either part is
                for part in r.split("|"):
                    q = self.qualify(mod, part) if part not in ("F", "?") else None
                    t = self.lookup(q) if q else None
                    parts.append(q in IS_COMPILING or bool(t and t[0] == "def" and self.is_guard(t[1], t[2], depth + 1)))
                kinds.append("G" if any(parts) else "?")
            ok = "G" in kinds and "?" not in kinds
        self._guard[key] = ok
        return ok

    # -- per file ----------------------------------------------------------------
    def file_facts(self, mod: str) -> FileFacts:
        if self._by_module is None:
            self._by_module = _by_module(self.compiled())  # reads the modules it reaches
            self._wrapped_by_module = _by_module(self._wrapped)
            self._entries_by_module = _by_module(self._entries)
        s = self.module(mod)  # read on demand: the same facts whichever modules were read up front
        if s is None:
            return FileFacts()
        classes = frozenset(c for c in s["classes"] if self.is_module_class(mod, c))
        compiled = frozenset(self._by_module.get(mod, ()))
        wrapped = frozenset(self._wrapped_by_module.get(mod, ()))
        entries = frozenset(self._entries_by_module.get(mod, ()))
        guards, disabled, never = set(), set(), set()
        if compiled or classes or wrapped:
            calls = {c for qn in compiled | wrapped for c in s["defs"][qn]["calls"]} if compiled or wrapped else \
                {c for info in s["defs"].values() for c in info["calls"]}
            for c in calls:
                if c.split(".")[0] in ("self", "cls", "super()"):
                    continue
                q = self.qualify(mod, c)
                if q is None or q in IS_COMPILING or c in IS_COMPILING_NAMES or not self.in_project(q):
                    continue  # what the file alone already takes for a guard; installed packages
                t = self.lookup(q)
                if t is not None and t[0] == "def" and self.is_guard(t[1], t[2]):
                    guards.add(c)
                elif t is not None and t[0] == "def" and t[1] != mod and self._disabled(t[1], t[2]) \
                        and not self._reorderable(t[1], t[2]):
                    disabled.add(c)
                elif t is not None and t[0] == "def" and self.is_never(t[1], t[2]):
                    never.add(c)
        origins = frozenset(self._origins(mod, compiled | wrapped)) if s.get("gen") else frozenset()
        loggers = frozenset(n for n in s["imports"] if "log" in n.lower() and self._is_logger(self.qualify(mod, n)))
        buffers = frozenset(f"{c}\t{b}" for c in s["classes"] for m, base in self._ancestors(mod, c) if m != mod
                            for b in (self.module(m) or {}).get("bufs", {}).get(base, ()))
        return FileFacts(classes, compiled, frozenset(guards), wrapped, origins, entries, frozenset(disabled),
                         frozenset(never), loggers, buffers)

    def _is_logger(self, q: str | None, depth: int = 0) -> bool:
        """`q` names a module-level logger of a project module (`logger = get_logger(__name__)` there),
        followed through re-exports (`from .logging import logger` in a package's __init__)."""
        if q is None or depth > MAX_DEPTH or not self.in_project(q):
            return False
        mod, _, name = q.rpartition(".")
        s = self.module(mod) if mod else None
        if s is None:
            return False
        if name in s.get("log", ()):
            return True
        again = self.qualify(mod, name)
        return again is not None and again != q and self._is_logger(again, depth + 1)

    def _never_call(self, mod: str, spelled: str, depth: int = 0) -> bool:
        """`spelled()` in `mod` is False under compile (a NOT_COMPILING call or an `is_never` def)."""
        q = self.qualify(mod, spelled)
        if q in NOT_COMPILING:
            return True
        t = self.lookup(q) if q and self.in_project(q) else None
        return bool(t and t[0] == "def" and self.is_never(t[1], t[2], depth + 1))

    def is_never(self, mod: str, qn: str, depth: int = 0) -> bool:
        """Every `return` of def `qn` gives False or None, or a call that is False under compile
        (`torch.jit.is_scripting()`, `torch._C._get_tracing_state()`, another such def), one at least
        a call: torchvision's `_is_tracing()`. Remembered, like `is_guard` (a cycle is not one)."""
        key = (mod, qn)
        if key in self._never:
            return self._never[key]
        self._never[key] = False
        info = self._info(mod, qn)
        rets = info["ret"] if info and depth <= MAX_DEPTH else []
        parts = [p for r in rets for p in r.split("|") if p != "F"]
        ok = bool(parts) and "?" not in parts and all(self._never_call(mod, p, depth) for p in parts)
        self._never[key] = ok
        return ok

    def _reorderable(self, mod: str, qn: str) -> bool:
        """`qn` is added to `torch._dynamo.config.reorderable_logging_functions` in its module: Dynamo
        defers its calls instead of breaking (scope.reorderable, for a def of the file itself)."""
        s = self.module(mod)
        return s is not None and any(e.split(" ")[0].endswith("reorderable_logging_functions.add")
                                     and e.split(" ")[1] == qn for e in s["compile"])

    # -- generated files ---------------------------------------------------------
    def _source_module(self, mod: str) -> str | None:
        """The module that generated `mod` is made from: the file its header names, beside it."""
        gen = (self.module(mod) or {}).get("gen")
        if not gen:
            return None
        stem = gen.rsplit("/", 1)[-1][:-len(".py")]
        src = f"{mod.rpartition('.')[0]}.{stem}".lstrip(".")
        return src if src != mod and self.module(src) is not None else None

    def home(self, mod: str, qn: str, depth: int = 0) -> tuple[str, str] | None:
        """(module, qn) where the code of def `qn` of `mod` is written: `mod` itself when it is
        hand-written; for a generated module, its source module when that has the def, else the
        def that its class there inherits (or that it imports), followed to where that is written.
        None when not known (a class the generator copied under another name)."""
        s = self.module(mod)
        if s is None or depth > MAX_DEPTH:
            return None
        if "gen" not in s:
            return (mod, qn) if qn in s["defs"] else None
        src = self._source_module(mod)
        source = self.module(src) if src is not None else None
        if source is None:
            return None
        if qn in source["defs"]:
            return src, qn
        cls, _, name = qn.rpartition(".")
        if cls in source["classes"]:
            found = self.method(src, cls, name, skip_self=True)
        elif cls:
            found = self._copied(src, source, cls, name)
        else:
            t = self.lookup(self.qualify(src, qn) or "")
            found = (t[1], t[2]) if t is not None and t[0] == "def" else None
        return self.home(*found, depth=depth + 1) if found is not None else None

    def _copied(self, src: str, source: dict, cls: str, name: str) -> tuple[str, str] | None:
        """The def `name` of the class that the generator copied (renamed) as `cls`: a class that
        the source module does not define, found by `cls` itself or renamed the way the source
        renames its bases (`PLBartEncoder(BartEncoder)`: `PLBart...` from `Bart...`), in the
        modules of the classes the source imports; None when not found or not one."""
        renames, modules = self._copy_sources(src, source)
        found = set()
        for new, old in renames:
            if cls.startswith(new):
                was = old + cls[len(new):]
                for m in modules:
                    if was in (self.module(m) or {}).get("classes", ()):
                        hit = self.method(m, was, name)
                        if hit is not None:
                            found.add(hit)
        return found.pop() if len(found) == 1 else None

    def _copy_sources(self, src: str, source: dict) -> tuple[list[tuple[str, str]], list[str]]:
        """(the source module's renames (new prefix, old prefix), the modules of the classes it
        imports), computed once per source module."""
        got = self._copies.get(src)
        if got is None:
            renames = {("", "")}
            for own, bases in source["classes"].items():
                for b in bases:
                    base = b.rsplit(".", 1)[-1]
                    n = 0
                    while n < min(len(own), len(base)) and own[-1 - n] == base[-1 - n]:
                        n += 1
                    tail = own[len(own) - n:]
                    cut = next((i for i, ch in enumerate(tail) if ch.isupper()), None)
                    if cut is not None and len(tail) - cut < len(own):
                        k = len(tail) - cut
                        renames.add((own[:-k], base[:-k]))
            modules = set()
            for local in source["imports"]:
                t = self.lookup(self.qualify(src, local) or "")
                if t is not None and t[0] == "class":
                    modules.add(t[1])
            got = self._copies[src] = (sorted(renames), sorted(modules))
        return got

    def _origins(self, mod: str, defs: frozenset) -> list[str]:
        """FileFacts.origins of generated `mod`: its compiled defs not written in its source module."""
        src = self._source_module(mod)
        if src is None:  # not in the project: nothing to tell beyond the header
            return []
        out = []
        for qn in sorted(defs):
            where = self.home(mod, qn)
            if where != (src, qn):
                out.append("\t".join((qn, *(where or ("", "")))))
        return out
