"""pytest plugin (entry point `pytest11`): the `no_graph_breaks` fixture and the `graphmend` marker.

    # pyproject.toml
    [tool.pytest.ini_options]
    graphmend_within = ["mypkg"]          # packages whose breaks fail a test
    graphmend_allow = ["GB0124"]          # optional: breaks to accept everywhere

    def test_forward(no_graph_breaks):
        no_graph_breaks(mypkg.Model().eval(), torch.randn(2, 16))

    @pytest.mark.graphmend(allow=["mypkg/legacy.py:*"], max_recompiles=1)
    def test_legacy(no_graph_breaks): ...

pytest loads this module in every project that installs graphmend-lint: it imports neither torch
nor the linter until the fixture is called. Fixit (`fixit --rules graphmend_lint`) imports every
module of graphmend_lint, where pytest need not be installed: then this one defines nothing.
"""
from __future__ import annotations

try:
    import pytest
except ImportError:  # imported by Fixit's rule collection, not by pytest
    pytest = None


def pytest_addoption(parser) -> None:
    parser.addini("graphmend_within", type="linelist", default=[],
                  help="graphmend-lint: packages whose graph breaks fail `no_graph_breaks` (default: the model's)")
    parser.addini("graphmend_allow", type="linelist", default=[],
                  help="graphmend-lint: breaks `no_graph_breaks` accepts (GB ids, GM codes, path:line patterns)")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "graphmend(within=None, allow=(), **options): options of the `no_graph_breaks` fixture "
                   "(graphmend_lint.testing.assert_no_graph_breaks)")


def _no_graph_breaks(request):
    """`no_graph_breaks(fn_or_module, *inputs, **options)`: compile, call, and fail the test on a graph
    break inside `graphmend_within` (see graphmend_lint.testing.assert_no_graph_breaks)."""
    defaults: dict = {}
    within = request.config.getini("graphmend_within")
    if within:
        defaults["within"] = list(within)
    allow = list(request.config.getini("graphmend_allow"))
    marker = request.node.get_closest_marker("graphmend")
    if marker is not None:
        defaults.update(marker.kwargs)
        allow += list(marker.kwargs.get("allow", ()))
    defaults["allow"] = allow

    def check(fn_or_module, *inputs, **options):
        from .testing import assert_no_graph_breaks

        opts = {**defaults, **options}
        if "allow" in options:
            opts["allow"] = [*allow, *options["allow"]]
        __tracebackhide__ = True
        return assert_no_graph_breaks(fn_or_module, *inputs, **opts)

    return check


if pytest is not None:
    no_graph_breaks = pytest.fixture(name="no_graph_breaks")(_no_graph_breaks)
