"""The lint-only skeleton (graphmend_lint/skeleton.py) changes no finding: same line, column,
end, message, safety, fix range and fix availability as a lint of the whole file."""
from __future__ import annotations

import ast
import json
import textwrap
from collections import Counter
from dataclasses import replace
from pathlib import Path

import libcst
import pytest

from graphmend_lint import engine, prefilter, runner, settings, skeleton
from graphmend_lint.analysis.filecontext import FileContext
from graphmend_lint.cli import main
from graphmend_lint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted(p for p in (ROOT / "tests/fixtures").rglob("*.py") if not p.name.endswith(".fixed.py"))
OWN = sorted(p for p in ROOT.rglob("*.py") if ".venv" not in p.parts and "fixtures" not in p.parts
             and not any(part.startswith(".") for part in p.relative_to(ROOT).parts))
MODELS = ["llama", "bart", "t5", "whisper", "wav2vec2", "phi3"]
S = replace(settings.Settings(), can_add_imports=True)


def _key(findings: list) -> list:
    return sorted((f.line, f.col, f.end_line, f.end_col, f.code, f.message, f.safety, f.fix_range,
                   f.replacement is None, f.needs_torch_import) for f in findings)


def _same(source: bytes, name: str) -> bool:
    """Assert equal findings; True when the skeleton differs from the source (it was exercised)."""
    try:
        tree = runner.validate(source)
    except (SyntaxError, runner.BadInput):
        return False
    if not prefilter.may_have_findings(source, S.compiled_scope, tree):
        return False
    lean = skeleton.skeleton(source, tree)
    if lean == source:
        return False
    if lean == skeleton.NOTHING:  # no def a rule may report in runs compiled (gate.py)
        assert engine.check(source, S).findings == [], name
        assert runner._check(source, tree, S, False).findings == [], name
        return True
    assert len(lean.split(b"\n")) == len(source.split(b"\n")), name  # every line keeps its number
    for new, old in zip(lean.split(b"\n"), source.split(b"\n")):
        assert new in (old, b"") or new.strip() == b"pass" or b'""' in new, (name, new)
    whole = engine.check(source, S).findings
    assert _key(runner._check(source, tree, S, False).findings) == _key(whole), name
    return True


def _transformers_models() -> list[Path]:
    t = pytest.importorskip("transformers")
    base = Path(t.__file__).parent / "models"
    return [p for m in MODELS if (p := base / m / f"modeling_{m}.py").exists()]


def test_fixtures_and_rule_examples():
    used = sum(_same(p.read_bytes(), str(p)) for p in FIXTURES)
    for rule in ALL_RULES:
        for case in [*rule.VALID, *rule.INVALID]:
            used += _same(textwrap.dedent(case.code).encode(), rule.CODE)
    assert used > 20  # the skeleton is exercised, not skipped


def test_own_source_files():
    assert sum(_same(p.read_bytes(), str(p)) for p in OWN) > 5


def test_large_transformers_models():
    paths = _transformers_models()
    assert len(paths) >= 5
    for p in paths:
        source = p.read_bytes()
        assert _same(source, str(p))
        lean = skeleton.skeleton(source, ast.parse(source))
        assert lean.count(b"\n") == source.count(b"\n") and len(lean) < 0.8 * len(source)


SAMPLE = b'''\
import torch
from torch import nn
CONST = """a
long docstring"""


def helper(x):
    """Doc."""
    return x.sum()


def unused(x):
    if x.sum() > 0:
        return x
    return -x


class M(nn.Module):
    """Doc."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        print("made")

    def extra(self):
        return "x"

    def forward(self, x):
        """Doc."""
        if x.sum() > 0:
            return self.lin(helper(x))
        return x
'''


def test_what_is_kept():
    lean = skeleton.skeleton(SAMPLE, ast.parse(SAMPLE)).decode()
    assert 'CONST = ""' in lean and "long docstring" not in lean  # a string constant keeps its name
    assert "def helper" in lean and "return x.sum()" in lean  # called from forward
    assert "def unused" not in lean and "def extra" not in lean
    assert "self.lin = nn.Linear(2, 2)" in lean and 'print("made")' not in lean  # attribute stores stay
    assert "Doc." not in lean and "if x.sum() > 0:" in lean
    lines, old = lean.split("\n"), SAMPLE.decode().split("\n")
    assert len(lines) == len(old)
    assert lines.index("        if x.sum() > 0:") == old.index("        if x.sum() > 0:")
    assert _same(SAMPLE, "sample")


@pytest.mark.parametrize("source", [
    b"import torch\nfrom torch import compile as c\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    b"def f(x):\n    '''d'''\n    return x\n",
    b"import torch\r\nclass M(torch.nn.Module):\r\n    def forward(self, x):\r\n        return x\r\ndef f():\r\n    pass\r\n",
    b"# -*- coding: latin-1 -*-\nclass M(object):\n    def forward(self, x):\n        return x\ndef f():\n    pass\n",
])
def test_unusual_files_are_left_whole(source):
    assert skeleton.skeleton(source, ast.parse(source)) == source


def test_switch_and_fix_paths(tmp_path, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    (tmp_path / "m.py").write_bytes(SAMPLE)
    monkeypatch.chdir(tmp_path)
    outs = []
    for extra in ([], ["--no-skeleton"], ["--no-prefilter"]):
        assert main(["check", ".", "--output-format", "json", "--exit-zero", "--no-cache", "-j", "1", *extra]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1] == outs[2] and outs[0]
    assert not hasattr(skeleton, "ENABLED")  # the switches are settings fields, not process-wide state
    fixed = runner.check_file(tmp_path / "m.py", S, fix=True)
    assert fixed.error is None
    assert b"long docstring" in (tmp_path / "m.py").read_bytes()  # --fix works on the whole source


def test_string_statements_in_compiled_code_are_kept():
    """Only a docstring (first in a module, class or def body) goes: a string statement inside a
    branch is code GM101 sees (it refuses the fix: a statement torch.where cannot express)."""
    source = textwrap.dedent('''
        """Module doc."""
        import torch
        from torch import nn


        class M(nn.Module):
            """Class doc."""

            def forward(self, x):
                """Forward doc."""
                h = x * 2
                if h.sum() > 0:
                    "keep the scale"
                    h = h * 3
                return h
        ''').encode()
    lean = skeleton.skeleton(source, ast.parse(source)).decode()
    assert '"keep the scale"' in lean
    assert "Module doc." not in lean and "Class doc." not in lean and "Forward doc." not in lean
    assert _same(source, "branch string")


def test_fuzz_programs():
    """The fuzz generator's programs (closures, helpers, eager-only code, nested ifs): same findings."""
    import fuzzgen  # tests/ is on sys.path (conftest)

    exercised = sum(_same(fuzzgen.generate(fuzzgen.RandomChooser(seed)).source.encode(), f"fuzz seed {seed}")
                    for seed in range(120))
    assert exercised >= 30


S_EDITS = replace(S, fix_edits=True, log_strategy="guard")  # a guard's edits lie in its block


def _with_edits(findings: list) -> list:
    return sorted((f.line, f.col, f.end_line, f.end_col, f.code, f.message, f.safety.value, f.fix_range,
                   f.replacement is None, f.needs_torch_import, repr(f.edits)) for f in findings)


def test_json_edits_lint_the_skeleton_first(monkeypatch):
    """With fix_edits (JSON, the server) the skeleton is linted and its fixes' edits computed
    there; the whole file is parsed only when an edit is not shown to hold on it (engine._Holds):
    findings and every fix's edits as the whole file's."""
    checked = fixable = 0
    served: list = []  # files whose edits came from the skeleton
    check = engine.check

    def counting(source, s, fix=False, ext=None, whole=None, quiet=None):
        result = check(source, s, fix, ext, whole, quiet)
        if whole is not None and any(f.edits for f in result.findings):
            served.append(source)
        return result

    monkeypatch.setattr(engine, "check", counting)
    for p in [*FIXTURES, *_transformers_models()]:
        source = p.read_bytes()
        try:
            tree = runner.validate(source)
        except (SyntaxError, runner.BadInput):
            continue
        if not prefilter.may_have_findings(source, S.compiled_scope, tree):
            continue
        got = runner._check(source, tree, S_EDITS, False).findings
        whole = check(source, S_EDITS).findings
        assert _with_edits(got) == _with_edits(whole), p
        checked += 1
        fixable += any(f.edits for f in whole)
    assert checked > 20 and fixable > 10 and len(served) > 5


@pytest.mark.parametrize("given", [False, True], ids=["generated", "source"])
def test_edits_per_part_equal_the_whole_module_way(given, monkeypatch):
    """engine._Parts (a fix's edits computed on the innermost def below the top level that holds
    it, else its top-level statement; the module's text generated, or its source) gives the edits
    of `finish` on the whole module, fix by fix (fixtures, rule examples, transformers models)."""
    sources = [p.read_bytes() for p in [*FIXTURES, *_transformers_models()]]
    sources += [textwrap.dedent(c.code).encode() for r in ALL_RULES for c in r.INVALID]
    ways: Counter = Counter()
    for name in ("_def", "_statement"):
        way = getattr(engine._Parts, name)
        monkeypatch.setattr(engine._Parts, name, lambda self, f, way=way, name=name: ways.update(
            [name if (got := way(self, f)) is not None else None]) or got)
    compared = 0
    for source in sources:
        try:
            module = libcst.parse_module(source)
        except libcst.ParserSyntaxError:
            continue
        ctx = FileContext(module, S, source=source if given else None)
        findings = engine.lint(ctx)
        engine._attach_edits(ctx, findings)
        before = module.code
        for f in findings:
            if f.replacement is not None:
                fixed = engine.apply_fixes(module, [f])
                want = engine.text_edits(before, engine.finish(FileContext(module, S), before, fixed).code)
                assert f.edits == want, (f.code, f.line)
                compared += 1
    assert compared > 100 and ways["_def"] > 50 and ways["_statement"] > 20, ways


HOLDS = b'''import torch
from torch import nn


def unused(x):
    """Dropped from the skeleton."""
    return x


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def helper_never_called(self):
        return 1

    def forward(self, x):
        """Blanked in the skeleton: the fix's block starts below it."""
        y = self.lin(x)
        print("shape", y.shape)
        return y
'''


@pytest.mark.parametrize("source,from_skeleton", [
    (HOLDS, True),
    (HOLDS.replace(b"import torch\n", b""), False),  # the fix adds `import torch` above the block
])
def test_json_edits_on_the_skeleton_or_the_whole_file(source, from_skeleton, monkeypatch):
    """A fix's edits are taken from the skeleton only when they lie in the fix's block and the
    block reads the same in both texts (engine._Holds); else the whole file is linted again."""
    tree = runner.validate(source)
    assert skeleton.skeleton(source, tree) != source
    calls: list = []
    check = engine.check
    monkeypatch.setattr(engine, "check", lambda src, *a, **k: calls.append(src) or check(src, *a, **k))
    got = runner._check(source, tree, S_EDITS, False).findings
    assert [f.code for f in got] == ["GM201"] and got[0].edits
    assert _with_edits(got) == _with_edits(check(source, S_EDITS).findings)
    assert calls[-1] != source if from_skeleton else calls[-1] == source


def _def_names(tree: ast.Module) -> set[str]:
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_a_skeleton_made_before_the_index_answers_is_the_one_made_after():
    """skeleton.lean (keep empty) gives the names of the defs it cuts: with any `keep` set that
    names none of them, the skeleton is the same bytes; with one that does, it keeps more."""
    checked = grew = 0
    for path in [*FIXTURES, *OWN[:60]]:
        source = path.read_bytes()
        try:
            tree = runner.validate(source)
        except (SyntaxError, runner.BadInput):
            continue
        lean, cut, _, _ = skeleton.lean(source, tree)
        assert lean == skeleton.skeleton(source, tree)
        names = sorted(_def_names(tree))
        for keep in ({n for n in names if n not in cut}, set(names[::3]) - cut):
            assert skeleton.skeleton(source, tree, keep=keep) == lean, path
            checked += 1
        for name in sorted(cut)[:3]:  # a def that cannot be cut stays whole anyway
            bigger = skeleton.skeleton(source, tree, keep={name})
            assert all(new in (old, b"") or new.strip() == b"pass"
                       for new, old in zip(lean.split(b"\n"), bigger.split(b"\n"))), (path, name)
            grew += bigger != lean
    assert checked > 100 and grew > 20


def test_a_linted_file_is_parsed_by_python_once(tmp_path, monkeypatch):
    """A lint-only run validates each file in the index's first pass and lints the skeleton made
    there; only a file whose cut def the index keeps (called compiled from another file) is
    parsed again. The findings are those of the file linted alone with the index's facts."""
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    (tmp_path / "a.py").write_text(
        "import torch\nfrom b import scale\n\nclass A(torch.nn.Module):\n"
        "    def forward(self, x):\n        return scale(x)\n")
    (tmp_path / "b.py").write_text(
        "import torch\n\nclass B(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n"
        "def scale(x):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n")
    (tmp_path / "c.py").write_text(
        "import torch\n\nclass C(torch.nn.Module):\n    def forward(self, x):\n        print(x)\n"
        "        return x\n\ndef tool(x):\n    print(x)\n")
    from graphmend_lint import parallel
    s = settings.load(tmp_path)
    paths = [tmp_path / n for n in ("a.py", "b.py", "c.py")]
    parses = []
    real_validate, real_parse = runner.validate, runner._parse
    monkeypatch.setattr(runner, "validate", lambda src: parses.append(("validate", src)) or real_validate(src))
    monkeypatch.setattr(runner, "_parse", lambda src: parses.append(("parse", src)) or real_parse(src))
    got = parallel.check_files(paths, s, jobs=1, use_cache=False)
    validated = [src for k, src in parses if k == "validate"]
    parsed = [src for k, src in parses if k == "parse"]  # validate parses too
    assert sorted(validated) == sorted(p.read_bytes() for p in paths)  # once each, in the first pass
    assert sorted(parsed) == sorted([*validated, paths[1].read_bytes()])  # b.scale: cut, then kept
    monkeypatch.undo()
    facts = parallel.project_facts(paths, s)
    assert "scale" in facts[paths[1]].compiled
    alone = [runner.check_file(p, s, ext=facts[p]) for p in paths]
    assert [_key(o.findings) for o in got] == [_key(o.findings) for o in alone]
    assert [bool(o.findings) for o in got] == [False, True, True]


def test_a_first_pass_skeleton_serves_only_the_bytes_it_was_made_from(tmp_path):
    """check_source trusts a first-pass skeleton (it skips validation and the pre-filter) only
    for the very bytes it was made from: a file edited between the two passes is linted anew."""
    source = PRINTING_MODULE.encode()
    path = tmp_path / "m.py"
    s = settings.Settings()
    nothing = b"x = 1\n" + b"\n" * (source.count(b"\n") - 1)  # a stand-in skeleton with no finding
    assert runner.check_source(path, source, s, write=False).findings
    assert not runner.check_source(path, source, s, write=False, lean=(source, nothing, frozenset(), frozenset(), {})).findings
    stale = (source + b"# edited\n", nothing, frozenset(), frozenset(), {})
    assert runner.check_source(path, source, s, write=False, lean=stale).findings
    fixing = runner.check_source(path, source, s, fix=True, write=False, lean=(source, nothing, frozenset(), frozenset(), {}))
    assert fixing.fixed  # a fix run never uses it


PRINTING_MODULE = """\
import torch


class M(torch.nn.Module):
    def forward(self, x):
        print(x)
        return x
"""


@pytest.mark.parametrize("fails", [False, True])
def test_the_collector_is_paused_for_one_file_and_runs_again_after(tmp_path, monkeypatch, fails):
    """gcpause.py: off while a file is parsed and analysed, on again after it, also when that fails."""
    import gc

    seen = []
    real = runner._check

    def spy(*args):
        seen.append(gc.isenabled())
        if fails:
            raise ValueError("boom")
        return real(*args)

    monkeypatch.setattr(runner, "_check", spy)
    assert gc.isenabled()
    out = runner.check_source(tmp_path / "m.py", PRINTING_MODULE.encode(), settings.Settings(), write=False)
    assert seen == [False]
    assert gc.isenabled()
    assert (out.error is not None) == fails and bool(out.findings) != fails


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_a_linted_file_leaves_its_trees_to_reference_counting(tmp_path, output_format):
    """gcpause.py: the collector is off while a file is analysed; if the file's trees sat in cycles,
    the collection after each file would walk all of them (about 6% of a cold run's CPU). A lint
    leaves none of their nodes to the collector (a visitor class made per call is a cycle too, and
    it keeps the nodes its methods' closures hold: the visitors on this path are module-level)."""
    import ast
    import gc

    import libcst as cst

    path = tmp_path / "m.py"
    path.write_text(CYCLES_MODULE)
    s = replace(settings.Settings(), fix_edits=output_format == "json")
    runner.check_file(path, s)  # the engine loaded, its caches filled
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        out = runner.check_file(path, s)
        assert out.findings and out.error is None
        del out
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, (cst.CSTNode, ast.AST))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert left == []


def test_linting_file_after_file_keeps_nothing_of_them(tmp_path):
    """fastwalk's per-class memo once kept every visitor class made per call, and with it the nodes its
    methods' closures hold: a worker's heap grew with every file (and its full collections with it)."""
    import gc

    import libcst as cst

    path = tmp_path / "m.py"
    path.write_text(CYCLES_MODULE)
    s = settings.Settings()

    def live_nodes() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, cst.CSTNode))

    runner.check_file(path, s)
    before = live_nodes()
    for _ in range(5):
        runner.check_file(path, s)
    assert live_nodes() <= before


CYCLES_MODULE = """\
import logging

import torch

logger = logging.getLogger(__name__)


def helper(x):
    return x * 2


def unused(y):
    return y + 1


class M(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        else:
            x = x - 1
        if (x < 0).any():
            raise ValueError("negative")
        logger.warning("shape %s", x.shape)
        print(x)
        return helper(x)
"""


QUIET = b'''import torch
from torch import nn


def unused(x):
    """Never compiled: cut from the skeleton."""
    return x


if True:
    def helper(x):
        return x * 2


class M(nn.Module):
    def scale(self, x):
        return helper(x) + 1

    def forward(self, x):
        y = self.scale(x)
        print(y.shape)
        if y.sum() > 0:
            y = y + 1
        return y
'''


def test_quiet_defs_are_kept_for_the_analysis_and_not_walked_by_the_rules(monkeypatch):
    """skeleton.lean names the defs it keeps whole only for what the analysis reads in them (a
    callee of a def a rule may report in): the rules' walk does not enter them, the findings stay."""
    tree = runner.validate(QUIET)
    lean, cut, assumed, quiet = skeleton.lean(QUIET, tree)
    assert quiet == {"helper": 1, "M.scale": 1} and b"return helper(x) + 1" in lean and lean != QUIET
    module = libcst.parse_module(lean)
    names = {d.name.value for d in engine._quiet_defs(module, quiet)}
    assert names == {"helper", "scale"}
    assert not engine._quiet_defs(module, {"helper": 2})  # another count: left to the walk
    walked: list = []
    visit = engine.fastwalk.visit_batched
    monkeypatch.setattr(engine.fastwalk, "visit_batched",
                        lambda m, v, md=None, skip=frozenset(): walked.append(skip) or visit(m, v, md, skip))
    got = runner._check(QUIET, tree, S, False, None, (lean, cut, assumed, quiet)).findings
    assert [{d.name.value for d in skip} for skip in walked] == [{"helper", "scale"}]
    assert _key(got) == _key(engine.check(QUIET, S).findings) and {f.code for f in got} == {"GM101", "GM201"}
