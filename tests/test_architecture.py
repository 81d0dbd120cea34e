"""The package's shape (issue 21): no import cycle, imports one way between the rooms, and no
module-level state that outlives a file.

Both checks read the source with `ast`: every `import` counts, at module level, inside functions
and under `if TYPE_CHECKING:` alike.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "graphmend_lint"
ROOT = "graphmend_lint"

# Rooms, lowest first; a module may import its own room and the rooms below it only.
# The base modules (tree walks, positions, settings, file discovery, the finding) are used by every
# room and import none of the rooms.
BASE = {"graphmend_lint.settings", "graphmend_lint.fastwalk", "graphmend_lint.positions", "graphmend_lint.files",
        "graphmend_lint.findings"}
ROOMS = ["base", "analysis", "fixes", "rules", "cli"]

# Imports made inside a function, at run time, that the checks below leave out, and why.
DEFERRED = {
    ("graphmend_lint.rules.provider", "graphmend_lint.parallel"):
        "Fixit runs the rules without our engine: its metadata provider asks the project index "
        "(parallel.facts_of) for the file's facts when Fixit hands it the file's path",
}

# Module-level mutable state that is allowed, and why. Anything else that a function mutates or
# rebinds (`global`), and any ContextVar, fails the test: per-file state goes in the file context
# (analysis/filecontext.py), per-run state in the objects of the run.
ALLOWED_STATE = {
    ("graphmend_lint.fastwalk", "_orders"): "per libcst node class: its child order, read from libcst's source",
    ("graphmend_lint.fastwalk", "_is_node"): "per Python type: whether it is a libcst node",
    ("graphmend_lint.fastwalk", "_visitor_names"): "per visitor class: its hook names",
    ("graphmend_lint.fastwalk", "_skips"): "per visitor class: the node classes its walk skips (none it hooks)",
    ("graphmend_lint.parallel", "_memo"): "per project content key (every file's digest): the facts of the "
                                          "project's files, so one process (a CLI run over several groups, the "
                                          "language server, Fixit's per-file calls) indexes a project once",
    ("graphmend_lint.parallel", "_indexes"): "the last project index built, by the same content key (one at a time)",
    ("graphmend_lint.parallel", "_tool"): "the linter's own code fingerprint, computed once per process",
    ("graphmend_lint.analysis.root", "_marker_memo"): "folder -> its nearest project marker (pyproject.toml, "
                                                      ".git...), read once per process; root.forget() drops it",
    ("graphmend_lint.workers", "_job"): "the work handed to forked workers: set just before they fork, "
                                        "cleared after it; not a memo",
    ("graphmend_lint.cstparse", "_ready"): "skeletons a worker parsed ahead (workers.py), each taken by its "
                                           "next parse; not a memo",
    ("graphmend_lint.cstparse", "_parsing"): "the threads inside a libcst parse (their nodes skip validation): "
                                             "added and removed around each parse; not a memo",
    ("graphmend_lint.cache", "_stores"): "per process and cache folder: its SQLite connection and the entries "
                                         "waiting to be written (a connection pool; not a memo)",
}
_MUTATORS = {"append", "insert", "extend", "update", "setdefault", "pop", "popitem", "clear", "remove", "add",
             "discard", "__setitem__", "__delitem__", "set", "appendleft"}
_CONTAINER_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter", "WeakKeyDictionary",
                    "WeakValueDictionary", "ContextVar"}


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = list(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _targets(name: str, node: ast.AST) -> list[str]:
    """The package modules an import statement in module `name` loads (parent packages included,
    except the root, which Python has always loaded first)."""
    found = []
    if isinstance(node, ast.Import):
        found = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            here = name if _is_package(name) else name.rsplit(".", 1)[0]
            base = ".".join(here.split(".")[:len(here.split(".")) - node.level + 1])
            base = f"{base}.{node.module}" if node.module else base
        else:
            base = node.module or ""
        found = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    out = []
    for target in found:
        while target and target not in MODULES:  # `import graphmend_lint.x.y` names a module; attributes do not
            target = target.rpartition(".")[0]
        parts = target.split(".")
        # the packages above the target load first, unless they hold `name` (then they are loading already)
        out += [p for p in (".".join(parts[:i]) for i in range(2, len(parts))) if not name.startswith(p + ".")]
        out.append(target)  # `from . import __version__`: the package itself
    return [t for t in out if t in MODULES and t != name]


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = {t for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                       for t in _targets(name, n)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), or a self-import."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def room(name: str) -> str:
    if name in BASE:
        return "base"
    parts = name.split(".")
    if len(parts) > 1 and parts[1] in ("analysis", "fixes", "rules"):
        return parts[1]
    return "cli"


def test_the_import_graph_is_read():
    graph = import_graph()
    assert "graphmend_lint.analysis.filecontext" in graph["graphmend_lint.engine"]
    assert "graphmend_lint.rules" in graph["graphmend_lint.cli"]
    assert "graphmend_lint.analysis" in graph["graphmend_lint.prefilter"]  # the package of `from .analysis import scope`
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _graph_without_deferred() -> dict[str, set[str]]:
    graph = {a: set(targets) for a, targets in import_graph().items()}
    for a, b in DEFERRED:
        assert b in graph.get(a, ()), f"DEFERRED names an import that is not there: {a} -> {b}"
        graph[a].discard(b)
    return graph


def test_no_import_cycle():
    assert cycles(_graph_without_deferred()) == []


def test_imports_go_one_way_between_rooms():
    """cli -> rules -> fixes -> analysis -> base; never back."""
    wrong = sorted(f"{a} ({room(a)}) imports {b} ({room(b)})" for a, targets in _graph_without_deferred().items()
                   for b in targets if a != ROOT and ROOMS.index(room(b)) > ROOMS.index(room(a)))
    assert wrong == []


def _module_state(tree: ast.Module) -> set[str]:
    """Names bound at module level to a mutable container or a ContextVar."""
    names = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            v = stmt.value
            mutable = isinstance(v, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp))
            if isinstance(v, ast.Call):
                f = v.func
                mutable = (f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")) in _CONTAINER_CALLS
            for t in targets:
                if mutable and isinstance(t, ast.Name):
                    names.add(t.id)
    return names


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def module_level_state(name: str, path: Path) -> set[str]:
    """Module-level names that functions rebind (`global`) or mutate, and module-level ContextVars."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    state = _module_state(tree)
    found = set()
    modules = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) for a in getattr(n, "names", ())
               if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith(ROOT))
               or isinstance(n, ast.Import) and a.name.startswith(ROOT)}  # `prefilter.ENABLED = False`: our modules'
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call) and \
                getattr(stmt.value.func, "attr", getattr(stmt.value.func, "id", "")) == "ContextVar":
            found |= {t.id for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
                      if isinstance(t, ast.Name)}
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        alias = {}  # local names bound to module state (`orders, is_node = _orders, _is_node`)
        for n in ast.walk(func):
            if isinstance(n, ast.Assign) and len(n.targets) == 1:
                pairs = [(n.targets[0], n.value)]
                if isinstance(n.targets[0], ast.Tuple) and isinstance(n.value, ast.Tuple):
                    pairs = list(zip(n.targets[0].elts, n.value.elts))
                for t, v in pairs:
                    if isinstance(t, ast.Name) and isinstance(v, ast.Name) and v.id in state:
                        alias[t.id] = v.id
        local = {**{v: v for v in state}, **alias}
        for n in ast.walk(func):
            if isinstance(n, ast.Global):
                found |= set(n.names)
            elif isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
                for t in targets:
                    if isinstance(t, (ast.Subscript, ast.Attribute)) and _root_name(t) in local:
                        found.add(local[_root_name(t)])
                    elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in modules \
                            and not isinstance(n, ast.Delete):
                        found.add(f"{t.value.id}.{t.attr}")
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MUTATORS:
                if isinstance(n.func.value, ast.Name) and n.func.value.id in local:
                    found.add(local[n.func.value.id])
    return found


def test_module_level_state_check_finds_memos(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("import contextvars\n_last = None\n_memo: list = []\n_table = {'a': 1}\n"
                 "_var = contextvars.ContextVar('v')\n"
                 "_cache = {}\n"
                 "def f(m):\n    global _last\n    _last = m\n    _memo[:] = [m]\n    return _table['a']\n"
                 "def g(k):\n    c = _cache\n    c[k] = 1\n"
                 "from . import prefilter\ndef h():\n    prefilter.ENABLED = False\n")
    assert module_level_state("m", p) == {"_last", "_memo", "_var", "_cache", "prefilter.ENABLED"}


def test_no_module_level_mutable_state():
    found = {(name, var) for name, path in MODULES.items() for var in module_level_state(name, path)}
    assert sorted(found - ALLOWED_STATE.keys()) == []
    assert sorted(ALLOWED_STATE.keys() - found) == []  # the allowed list names what is there


def test_no_long_function_in_analysis():
    """Functions in analysis/ stay readable: 80 lines at most (docstring and comments included)."""
    long = []
    for path in sorted((PACKAGE / "analysis").rglob("*.py")):
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 80:
                long.append(f"{path.name}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)")
    assert long == []


def test_each_shared_table_is_bound_once():
    """analysis/tables.py is read by the rules, the analysis and gate.py: a name bound twice there
    silently replaces a table some module relies on."""
    tree = ast.parse((PACKAGE / "analysis" / "tables.py").read_text(encoding="utf-8"))
    names = [t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
             for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)]
    assert sorted({n for n in names if names.count(n) > 1}) == []
