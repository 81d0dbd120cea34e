"""The run's workers (parallel.Workers): forked once, at the index's first pass, and kept for the
index's reads ahead and the lint; none of it changes an answer. And the text test of the files
that may hold a compiled root (read up front)."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from graphmend_lint import parallel, settings, workers

# The text test, as one regex (slower than parallel._root_text, which must say the same).
ROOT_REGEX = re.compile(rb"\bdef\s+forward\b|\.forward\b|(?<!\bre\.)compile|optimize")


@pytest.mark.parametrize("text, rooted", [
    (b"class M(nn.Module):\n    def forward(self, x):\n        return x\n", True),
    (b"    async def  forward(self):\n", True),
    (b"Llama.forward = fast_forward\n", True),
    (b"m.forward = types.MethodType(f, m)\n", True),
    (b"model = torch.compile(model)\n", True),
    (b"from torch import compile as tc\n", True),
    (b"@torch._dynamo.optimize('eager')\ndef f(x):\n    return x\n", True),
    (b'"""intermediate_size: the feed-forward layer."""\n', False),
    (b"# This method forwards all its arguments to the tokenizer.\n", False),
    (b"PATTERN = re.compile(r'\\d+')\n", False),
    (b"def forward_pre_hook(m, x):\n    return x\n", False),
    (b"from .utils import *\n\n\n@compile_fn\ndef step(x):\n    return x\n", True),  # a name bound to torch.compile
    (b"fast = torch_compile(step)\n", True),
    (b"x.forwards = 1\nforward_fn = None\n", False),
    (b"", False),
])
def test_root_text(text, rooted):
    assert parallel._root_text(text) is rooted
    assert bool(ROOT_REGEX.search(text)) is rooted


def test_root_text_is_the_regex_on_every_arrangement_of_its_words():
    import itertools

    atoms = [b"def", b" ", b"\n", b"forward", b".", b"re", b"compile", b"optimize", b"x", b"_", b"("]
    for n in range(1, 5):
        for parts in itertools.product(atoms, repeat=n):
            text = b"".join(parts)
            assert parallel._root_text(text) == bool(ROOT_REGEX.search(text)), text


def _project(root: Path, n: int = 10) -> None:
    """A model file whose classes derive from bases in n files without a root, and n files
    overriding a method its forward calls (found by the index's text search)."""
    pkg = root / "pkg"
    pkg.mkdir()
    (root / "pyproject.toml").write_text("[tool.graphmend]\n")
    (pkg / "__init__.py").write_text("")
    for i in range(n):
        (pkg / f"base_{i}.py").write_text(f"import torch\n\n\nclass Base{i}(torch.nn.Module):\n"
                                          "    def helper(self, x):\n        print(x)\n        return x\n")
        (pkg / f"sub_{i}.py").write_text(f"from .model import M0\n\n\nclass S{i}(M0):\n"
                                         "    def step(self, x):\n        print(x)\n        return x\n")
    imports = "".join(f"from .base_{i} import Base{i}\n" for i in range(n))
    classes = "".join(textwrap.dedent(f"""

        class M{i}(Base{i}):
            def step(self, x):
                return x

            def forward(self, x):
                return self.step(self.helper(x))
        """) for i in range(n))
    (pkg / "model.py").write_text(imports + classes)


def _check(root: Path, names: list[str], jobs: int, monkeypatch) -> tuple[list, list, list[int], int]:
    """(findings, what the index read, the sizes of its reads ahead, pools forked)."""
    read, ahead, pools = [], [], []
    index_project, prefetch, fork = parallel._index_project, parallel._Reader.prefetch, workers.Workers._fork

    def spy_index(*a):
        got = index_project(*a)
        read.append(sorted(got[2]))
        return got

    def spy_prefetch(self, paths):
        before = len(self.ahead)
        prefetch(self, paths)
        ahead.append(len(self.ahead) - before)

    def spy_fork(self, n):
        pools.append(n)
        return fork(self, n)

    monkeypatch.setattr(parallel, "_index_project", spy_index)
    monkeypatch.setattr(parallel._Reader, "prefetch", spy_prefetch)
    monkeypatch.setattr(workers.Workers, "_fork", spy_fork)
    monkeypatch.chdir(root)
    monkeypatch.setenv("GRAPHMEND_CACHE_DIR", str(root / f"cache-{jobs}"))  # empty: a cold run that keeps its record
    outs = parallel.check_files([root / "pkg" / n for n in names], settings.Settings(), jobs=jobs)
    parallel._indexes.clear()
    parallel._memo.clear()
    monkeypatch.undo()
    found = sorted((Path(o.path).name, f.code, f.line) for o in outs for f in o.findings)
    assert all(o.error is None for o in outs)
    return found, read, ahead, len(pools)


def test_workers_read_ahead_and_lint_and_change_nothing(tmp_path, monkeypatch):
    _project(tmp_path)
    names = ["model.py", "sub_3.py", "base_4.py"]
    serial = _check(tmp_path, names, 1, monkeypatch)
    shared = _check(tmp_path, names, 2, monkeypatch)
    assert serial[0] == shared[0]  # the same findings
    assert ("sub_3.py", "GM201", 6) in serial[0] and ("base_4.py", "GM201", 6) in serial[0]
    assert serial[1] == shared[1] and len(serial[1][0]) > 20  # the index read the same summaries (the cache's record)
    assert serial[3] == 0 and shared[3] == 1  # one pool for the first pass, the reads ahead and the lint
    # Read ahead in the workers: the 9 bases not checked (model.py's class bases), then the 9 overriding files.
    assert shared[2] == [9, 9] and serial[2] == [0, 0]


def test_a_root_through_a_name_bound_to_torch_compile_in_another_file(tmp_path):
    """`compile_fn = torch.compile` in one file, `@compile_fn` in another that star-imports it: the
    decorated def is a root, also when the run checks that file alone."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text("import torch\n\ncompile_fn = torch.compile\n")
    (pkg / "model.py").write_text("from .utils import *\n\n\n@compile_fn\ndef step(x):\n    print(x)\n    return x\n")
    for jobs in (1, 2):
        outs = parallel.check_files([pkg / "model.py"], settings.Settings(), jobs=jobs, use_cache=False)
        assert [(f.code, f.line) for f in outs[0].findings] == [("GM201", 6)]


def _parsed_here(item) -> bool:
    """The lint's parse of `item`'s skeleton in this worker is the tree parsed ahead here."""
    from graphmend_lint import cstparse

    ahead = cstparse._ready.get(item[1])
    return ahead is not None and cstparse.parse_module(item[1]) is ahead


def _fail(item):
    raise ValueError(f"bad {item}")


def test_each_skeleton_goes_to_the_worker_that_parsed_it_ahead():
    import time

    # One a worker: each takes its own first (with more, a worker done early takes another's: no test).
    sources = [(f"f{i}.py", f"def f{i}(x):\n    return x + {i}\n".encode() * (i + 1)) for i in range(2)]
    with workers.Workers(2, lint=True) as w:
        assert w.map(str, ["a", "b", "c"]) == ["a", "b", "c"]  # forks them
        w.warm_up(sources)
        assert sorted(w.home.values()) == [0, 1]  # dealt by bytes
        for _ in range(400):  # the parses ahead end (the engine's import first); a map reads their news
            w.map(str, [1, 2])
            if not any(w.warming):
                break
            time.sleep(0.05)
        assert w.map(_parsed_here, sources, key=lambda item: item[0]) == [True] * len(sources)
        assert w.map(_parsed_here, sources, key=lambda item: item[0]) == [False] * len(sources)  # each taken once


def test_an_error_in_a_worker_is_raised_here_and_ends_the_workers():
    w = workers.Workers(2)
    assert w.map(str, [1, 2]) == ["1", "2"]
    with pytest.raises(ValueError, match="bad 3"):
        w.map(_fail, [3])
    assert not w.forked
