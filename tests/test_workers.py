"""The run's workers (parallel.Workers): forked once, at the index's first pass, and kept for the
index's reads ahead and the lint; none of it changes an answer. And the text test of the files
that may hold a compiled root (read up front)."""
from __future__ import annotations

import multiprocessing.context
import re
import textwrap
from pathlib import Path

import pytest

from graphmend_lint import parallel, settings

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
    index_project, prefetch, pool = parallel._index_project, parallel._Reader.prefetch, \
        multiprocessing.context.ForkContext.Pool

    def spy_index(*a):
        got = index_project(*a)
        read.append(sorted(got[2]))
        return got

    def spy_prefetch(self, paths):
        before = len(self.ahead)
        prefetch(self, paths)
        ahead.append(len(self.ahead) - before)

    def spy_pool(self, *a, **k):
        pools.append(1)
        return pool(self, *a, **k)

    monkeypatch.setattr(parallel, "_index_project", spy_index)
    monkeypatch.setattr(parallel._Reader, "prefetch", spy_prefetch)
    monkeypatch.setattr(multiprocessing.context.ForkContext, "Pool", spy_pool)
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
