"""`graphmend-lint server` in-process: initialize, didOpen -> publishDiagnostics, codeAction -> the fix."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("pygls")

from graphmend_lint import server  # noqa: E402

MODEL = """import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        print("x", x.shape)
        n = x.sum().item()  # noqa: GM901
        return x
"""


class Client:
    """Feeds JSON-RPC messages to the server's protocol and collects what it sends back."""

    def __init__(self) -> None:
        self.ls = server.make_server()
        self.sent: list[dict] = []
        self.ls.protocol.set_writer(self, include_headers=False)
        self.next_id = 0

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    def send(self, method: str, params: dict, request: bool = True):
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            msg["id"] = self.next_id
        self.ls.protocol.handle_message(self.ls.protocol.structure_message(msg))
        if request:
            return next(m for m in self.sent if m.get("id") == self.next_id)
        return None

    def notifications(self, method: str) -> list[dict]:
        return [m["params"] for m in self.sent if m.get("method") == method]


@pytest.fixture()
def client(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n")
    c = Client()
    reply = c.send("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})
    caps = reply["result"]["capabilities"]
    assert caps["codeActionProvider"]["codeActionKinds"] == ["quickfix"]
    c.send("initialized", {}, request=False)
    c.uri = (tmp_path / "model.py").as_uri()
    c.folder = tmp_path
    return c


def open_doc(c: Client, text: str) -> list[dict]:
    c.send("textDocument/didOpen", {"textDocument": {"uri": c.uri, "languageId": "python", "version": 1,
                                                     "text": text}}, request=False)
    published = c.notifications("textDocument/publishDiagnostics")
    assert published and published[-1]["uri"] == c.uri
    return published[-1]["diagnostics"]


def apply(text: str, edits: list[dict]) -> str:
    lines = text.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: e["range"]["start"]["line"], reverse=True):
        start, end = e["range"]["start"], e["range"]["end"]
        assert start["character"] == 0 and end["character"] == 0
        lines[start["line"]:end["line"]] = [e["newText"]]
    return "".join(lines)


def test_diagnostics_and_quick_fix(client):
    diagnostics = open_doc(client, MODEL)
    assert [d["code"] for d in diagnostics] == ["GM201"]  # GM901 is suppressed by its noqa
    d = diagnostics[0]
    assert d["range"] == {"start": {"line": 6, "character": 8}, "end": {"line": 6, "character": 27}}
    assert d["source"] == "graphmend-lint" and d["codeDescription"]["href"].endswith("rules/GM201.md")
    reply = client.send("textDocument/codeAction", {"textDocument": {"uri": client.uri}, "range": d["range"],
                                                    "context": {"diagnostics": [d]}})
    actions = reply["result"]
    assert len(actions) == 1 and actions[0]["kind"] == "quickfix" and actions[0]["isPreferred"] is True
    fixed = apply(MODEL, actions[0]["edit"]["changes"][client.uri])
    assert "        if not torch.compiler.is_compiling():\n            print(\"x\", x.shape)\n" in fixed


def test_no_action_away_from_the_finding(client):
    open_doc(client, MODEL)
    far = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
    reply = client.send("textDocument/codeAction", {"textDocument": {"uri": client.uri}, "range": far,
                                                    "context": {"diagnostics": []}})
    assert reply["result"] == []


def test_unsafe_fix_needs_the_setting(client):
    # unsafe even under compile: when the branch is not taken, `h.mul_` doubles the caller's tensor
    src = ("import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, g, h):\n"
           "        if g.sum() > 0:\n            h = torch.clamp(h, min=-1.0, max=1.0)\n        h.mul_(2)\n"
           "        return g + h\n")
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": 20, "character": 0}}
    req = {"textDocument": {"uri": client.uri}, "range": everything, "context": {"diagnostics": []}}
    diagnostics = open_doc(client, src)
    assert [d["code"] for d in diagnostics] == ["GM101"]
    assert client.send("textDocument/codeAction", req)["result"] == []  # unsafe: not offered
    (client.folder / "pyproject.toml").write_text("[tool.graphmend]\nunsafe-fixes = true\n")
    open_doc(client, src)
    actions = client.send("textDocument/codeAction", req)["result"]
    assert len(actions) == 1 and actions[0]["isPreferred"] is False and "unsafe" in actions[0]["title"]


def test_syntax_error_is_one_diagnostic(client):
    diagnostics = open_doc(client, "def f(:\n")
    assert len(diagnostics) == 1 and diagnostics[0]["severity"] == 1 and "syntax error" in diagnostics[0]["message"]


def test_server_subcommand_starts():
    """The console entry point answers `initialize` over stdio and exits on `exit`."""
    def frame(msg: dict) -> bytes:
        body = json.dumps(msg).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    messages = frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    messages += frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    messages += frame({"jsonrpc": "2.0", "method": "exit"})
    proc = subprocess.run([sys.executable, "-m", "graphmend_lint", "server"], input=messages,
                          capture_output=True, timeout=120)
    assert b'"codeActionProvider"' in proc.stdout, proc.stderr.decode()
