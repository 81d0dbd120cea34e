"""`graphmend-lint server`: a small language server (pygls) for editors.

Diagnostics on open, change and save, and each fix as a quick fix (`textDocument/codeAction`),
with the file's own settings (the nearest `[tool.graphmend]`), `# noqa`, and fix safety: a fix
is offered when `--fix` would apply it (unsafe ones only with `unsafe-fixes = true`).
Needs the `[lsp]` extra. pygls and lsprotocol are imported only when the server is made: Fixit
imports every module of graphmend_lint, also where the extra is not installed.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from . import __version__, docs, engine, parallel, runner, settings
from . import rules as rules_pkg

SOURCE = "graphmend-lint"


class _Types:
    """`lsprotocol.types`, imported on first use."""

    def __getattr__(self, name: str):
        from lsprotocol import types

        return getattr(types, name)


T = _Types()


def _range(line: int, col: int, end_line: int, end_col: int):
    """1-based lines and 0-based columns (libcst) -> an LSP range."""
    return T.Range(T.Position(max(line - 1, 0), col), T.Position(max(end_line - 1, 0), end_col))


def _edit(e: dict):
    start, end = e["location"], e["end_location"]
    return T.TextEdit(_range(start["row"], start["column"] - 1, end["row"], end["column"] - 1), e["content"])


class Linter:
    """Lints open documents and remembers the last result of each (for code actions)."""

    def __init__(self) -> None:
        self.results: dict[str, tuple[list, settings.Settings]] = {}

    def lint(self, uri: str, text: str) -> tuple[list, list, settings.Settings]:
        from pygls.uris import to_fs_path

        path = Path(to_fs_path(uri) or "untitled.py")
        found = settings.Discovery(adjust=lambda s: replace(s, fix_edits=True),  # fixes as text edits
                                   cwd=path.parent if path.parent.exists() else None,
                                   rules=tuple(r.CODE for r in rules_pkg.ALL_RULES))
        s = found.for_path(path)
        out = runner.check_source(path, text.encode("utf-8"), s, write=False, ext=parallel.facts_of(path, s))
        if out.error:
            self.results[uri] = ([], s)
            return [T.Diagnostic(_range(1, 0, 1, 0), out.error, severity=T.DiagnosticSeverity.Error,
                                 source=SOURCE)], [], s
        self.results[uri] = (out.findings, s)
        return [self.diagnostic(f) for f in out.findings], out.findings, s

    @staticmethod
    def diagnostic(f):
        return T.Diagnostic(
            _range(f.line, f.col, f.end_line, f.end_col), f.message,
            severity=T.DiagnosticSeverity.Error,  # as SARIF, `github` and the CLI ("Found 1 error.") say
            code=f.code, code_description=T.CodeDescription(href=docs.rule_url(f.code)), source=SOURCE)

    def actions(self, uri: str, wanted) -> list:
        findings, s = self.results.get(uri, ([], settings.Settings()))
        out = []
        for f in findings:
            if not (f.edits and engine.applicable(f, s)):
                continue
            if f.end_line - 1 < wanted.start.line or f.line - 1 > wanted.end.line:
                continue
            safe = f.safety is engine.Safety.SAFE
            out.append(T.CodeAction(
                title=f"Fix {f.code}{'' if safe else ' (unsafe)'}: rewrite for torch.compile",
                kind=T.CodeActionKind.QuickFix, diagnostics=[self.diagnostic(f)], is_preferred=safe,
                edit=T.WorkspaceEdit(changes={uri: [_edit(e) for e in f.edits]})))
        return out


def make_server():
    from lsprotocol import types as T  # noqa: N812 - the decorators below need the real types
    from pygls.lsp.server import LanguageServer

    ls = LanguageServer(SOURCE, __version__)
    linter = Linter()

    def publish(uri: str, version: int | None = None) -> None:
        doc = ls.workspace.get_text_document(uri)
        try:
            diagnostics, _, _ = linter.lint(uri, doc.source)
        except settings.ConfigError as e:
            diagnostics = [T.Diagnostic(_range(1, 0, 1, 0), f"configuration: {e}",
                                        severity=T.DiagnosticSeverity.Error, source=SOURCE)]
        ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri, diagnostics, version))

    @ls.feature(T.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params) -> None:
        publish(params.text_document.uri, params.text_document.version)

    @ls.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params) -> None:
        publish(params.text_document.uri, params.text_document.version)

    @ls.feature(T.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params) -> None:
        publish(params.text_document.uri)

    @ls.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params) -> None:
        linter.results.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(params.text_document.uri, []))

    @ls.feature(T.TEXT_DOCUMENT_CODE_ACTION,
                T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix]))
    def code_action(params) -> list:
        return linter.actions(params.text_document.uri, params.range)

    return ls


def serve() -> None:  # pragma: no cover - exercised through make_server in the tests
    make_server().start_io()
