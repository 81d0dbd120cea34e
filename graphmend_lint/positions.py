"""libcst's PositionProvider mapping (a CodeRange per node), computed only for what is asked.

libcst computes positions by generating the code of the whole module. Most files have no
finding and never ask; a file with findings asks for a few nodes. With the module's source, the
code is generated only for the innermost statement that holds the node among the top-level
statements and those in the body of a class or def whose own line is known (a method, a
statement of a function or method). Its first line comes from Python's `ast` of
the same source (`lineno` is where libcst's syntactic position of a statement starts: its first
token after the decorators), and every position in it is shifted by the difference. Statements
start at column 0 with only their blocks' indents before them, so columns need no shift.
When the two trees do not pair up statement for statement, the whole module's code is generated,
as without a source. tests/test_speed_walk.py compares both ways with libcst's PositionProvider.
"""
from __future__ import annotations

import ast
import re
import warnings

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

_NEWLINE = re.compile(r"\r\n?|\n")  # libcst's position_provider.NEWLINE_RE


class _Record:
    """`state.record_syntactic_position(...)` without a generator per node."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: object) -> bool:
        st, computed = self.state, self.state.computed
        start = computed[self.start_node][0] if self.start_node is not None else self.start
        end = computed[self.end_node][1] if self.end_node is not None else (st.line, st.column)
        computed[self.node] = (start, end)
        return False


class _PositionState:
    """libcst's PositionProvidingCodegenState, step for step, with tuples for positions."""

    __slots__ = ("default_indent", "default_newline", "indent_tokens", "tokens", "line", "column", "stack",
                 "computed", "provider")

    def __init__(self, module: cst.Module) -> None:
        self.default_indent, self.default_newline = module.default_indent, module.default_newline
        self.indent_tokens: list[str] = []
        self.tokens: list[str] = []
        self.line, self.column = 1, 0
        self.stack: list[tuple[int, int]] = []
        self.computed: dict = {}
        self.provider = None

    def increase_indent(self, value: str) -> None:
        self.indent_tokens.append(value)

    def decrease_indent(self) -> None:
        self.indent_tokens.pop()

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.stack.pop()
        if node not in self.computed:
            self.computed[node] = (start, (self.line, self.column))

    def pop_trailing_newline(self) -> None:
        if self.tokens:
            self.tokens.pop()

    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> _Record:
        return _Record(self, node, start_node, end_node)


class LazyPositions:
    """PositionProvider's mapping for `module`, computed on first use.

    `parents`: child -> parent for the module's nodes (fastwalk.parents); with it and `source`
    (the module's code), one statement's code is generated at a time."""

    def __init__(self, module: cst.Module, parents: dict | None = None, source: bytes | str | None = None) -> None:
        self.module = module
        self._map: dict | None = None
        self._parents = parents
        self._source = source
        self._starts: dict | None = None  # statement -> line of its first token (after decorators)
        self._units: dict = {}  # statement -> its nodes' positions
        self._lines: list[str] | None = None  # the source's lines (to check a statement's place)

    def _get(self) -> dict:
        if self._map is None:
            state = _PositionState(self.module)
            self.module._codegen(state)  # type: ignore[arg-type]
            self._map = state.computed
        return self._map

    def _unit_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost statement whose code holds `node`'s and whose line is known: a top-level
        one, one in the body of a top-level class, or one in the body of such a def."""
        up, chain, n = self._parents, [], node
        while n is not self.module:
            chain.append(n)
            n = up.get(n)  # type: ignore[union-attr]
            if n is None:
                return None  # not in this module
        if not chain:
            return None  # the module itself
        starts = self._start_lines()
        return next((n for n in chain[:-1] if n in starts), chain[-1])

    def _start_lines(self) -> dict:
        if self._starts is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tree = ast.parse(self._source)  # type: ignore[arg-type]
                self._starts = _pair(self.module.body, tree.body, {})
            except (SyntaxError, ValueError, MemoryError, RecursionError, TypeError):
                self._starts = {}
        return self._starts

    def _unit(self, unit: cst.CSTNode) -> dict | None:
        if unit not in self._units:
            line = self._start_lines().get(unit)
            got = None
            if line is not None:
                state = _PositionState(self.module)
                n = self._parents[unit]  # type: ignore[index]
                while n is not self.module:  # the indents of the blocks around it, outermost first
                    if isinstance(n, cst.IndentedBlock):
                        state.indent_tokens.insert(0, self.module.default_indent if n.indent is None else n.indent)
                    n = self._parents[n]  # type: ignore[index]
                unit._codegen(state)  # type: ignore[arg-type]
                shift = line - state.computed[unit][0][0]
                text = "".join(state.tokens)
                if self._text_at(shift, text):  # the statement's code is where the shift puts it
                    got = {n: ((a + shift, b), (c + shift, d)) for n, ((a, b), (c, d)) in state.computed.items()}
            self._units[unit] = got
        return self._units[unit]

    def _text_at(self, shift: int, text: str) -> bool:
        if self._lines is None:
            source = self._source.decode("utf-8", "replace") if isinstance(self._source, bytes) else self._source
            self._lines = source.splitlines(keepends=True)  # type: ignore[union-attr]
        return shift >= 0 and "".join(self._lines[shift:shift + len(text.splitlines())]) == text

    def _find(self, node: cst.CSTNode):
        if self._map is None and self._parents is not None and self._source is not None:
            unit = self._unit_of(node)
            got = self._unit(unit) if unit is not None else None
            if got is not None and node in got:
                return got[node]
        return self._get().get(node)

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._find(node)
        if found is None:
            raise KeyError(node)
        (a, b), (c, d) = found
        return CodeRange(CodePosition(a, b), CodePosition(c, d))

    def get(self, node: cst.CSTNode, default=None):
        return self[node] if self._find(node) is not None else default

    def __contains__(self, node: object) -> bool:
        return self._find(node) is not None  # type: ignore[arg-type]


_PAIRS = {cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef), cst.ClassDef: (ast.ClassDef,),
          cst.If: (ast.If,), cst.For: (ast.For, ast.AsyncFor), cst.While: (ast.While,),
          cst.With: (ast.With, ast.AsyncWith), cst.Try: (ast.Try,), cst.Match: (ast.Match,)}
if hasattr(cst, "TryStar") and hasattr(ast, "TryStar"):
    _PAIRS[cst.TryStar] = (ast.TryStar,)


def _pair(body, stmts: list, out: dict) -> dict:
    """libcst statements -> the line of their first token, from the `ast` statements of the same
    block (a SimpleStatementLine holds one ast statement per small statement); {} if they differ."""
    i = 0
    for node in body:
        if isinstance(node, cst.SimpleStatementLine):
            k = len(node.body)
            if i + k > len(stmts) or any(isinstance(s, _COMPOUND) for s in stmts[i:i + k]):
                return {}
            out[node] = stmts[i].lineno
            i += k
            continue
        kinds = _PAIRS.get(type(node))
        if kinds is None or i >= len(stmts) or not isinstance(stmts[i], kinds):
            return {}
        out[node] = stmts[i].lineno
        if isinstance(node, (cst.ClassDef, cst.FunctionDef)) and isinstance(node.body, cst.IndentedBlock):
            out.update(_pair(node.body.body, stmts[i].body, {}))  # {} when they differ: one unit
        i += 1
    return out if i == len(stmts) else {}


_COMPOUND = tuple(k for kinds in _PAIRS.values() for k in kinds)


def positions(module: cst.Module) -> dict:
    """The same mapping as libcst's PositionProvider (for tests)."""
    lazy = LazyPositions(module)
    return {n: lazy[n] for n in lazy._get()}
