"""The guard keeps where warnings and log records say they come from (the harness compares
messages only): same function, same source line, same caller for `stacklevel=2`."""
from __future__ import annotations

import linecache
import logging
import warnings
from pathlib import Path

import pytest
import torch
from harness import load

FIXTURES = Path(__file__).parent / "fixtures"


def _where(path: str, line: int) -> tuple[str, str]:
    """(file name without the `.fixed` part, stripped source text of the line)."""
    return Path(path).name.replace(".fixed", ""), linecache.getline(path, line).strip()


def _build(path: Path, tag: str):
    module = load(path, f"loc_{tag}_{path.parent.name}_{path.stem.replace('.', '_')}")
    torch.manual_seed(0)
    return module.make()


@pytest.mark.parametrize("case", ["GM203/invalid_warn_forms"])
def test_warning_locations_unchanged(case):
    seen = []
    for path in (FIXTURES / f"{case}.py", FIXTURES / f"{case}.fixed.py"):
        fn, inputs = _build(path, "w")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for args in inputs:
                fn(*args)
        seen.append([(w.category.__name__, str(w.message), *_where(w.filename, w.lineno)) for w in caught])
    assert seen[0] == seen[1]
    assert any(where[2] == "module.py" for where in seen[0])  # stacklevel=2: nn.Module's caller frame
    assert any("warnings.warn(f\"helper sees" in where[3] for where in seen[0])


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelname, record.funcName, record.getMessage(),
                             *_where(record.pathname, record.lineno)))


@pytest.mark.parametrize("case", ["GM202/invalid_logger_module_level", "GM202/invalid_logger_on_self_and_local"])
def test_log_record_locations_unchanged(case):
    seen = []
    root = logging.getLogger()
    for path in (FIXTURES / f"{case}.py", FIXTURES / f"{case}.fixed.py"):
        fn, inputs = _build(path, "l")
        handler, level = _Records(), root.level
        root.addHandler(handler)
        root.setLevel(logging.DEBUG)
        try:
            for args in inputs:
                fn(*args)
        finally:
            root.removeHandler(handler)
            root.setLevel(level)
        seen.append(handler.records)
    assert seen[0] == seen[1] and len(seen[0]) >= 4
    assert {r[2] for r in seen[0]} >= {"forward"}
