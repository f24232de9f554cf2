"""An MCP server without the SDK, writing its own bytes on stdout, for what a well-behaved
SDK server cannot send:

    python raw_server.py bad-utf8   # the answer to tools/call holds bytes that are not UTF-8
    python raw_server.py deep N     # tools/list gives a tool whose schema nests N levels deep
"""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1]
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 0


def send(raw: bytes) -> None:
    sys.stdout.buffer.write(raw + b"\n")
    sys.stdout.buffer.flush()


def schema() -> str:
    if MODE != "deep":
        return '{"type": "object", "properties": {"text": {"type": "string"}}}'
    return '{"type": "object", "properties": {"a": ' * DEPTH + "{}" + "}}" * DEPTH


for line in sys.stdin.buffer:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue  # a notification
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode())
    elif method == "tools/list":
        tool = '{"name": "echo", "description": "Say it back.", "inputSchema": ' + schema() + "}"
        send(
            b'{"jsonrpc": "2.0", "id": '
            + json.dumps(ident).encode()
            + b', "result": {"tools": ['
            + tool.encode()
            + b"]}}"
        )
    elif method == "tools/call":
        text = b"\xff\xfe not UTF-8" if MODE == "bad-utf8" else b"fine"
        body = b'{"content": [{"type": "text", "text": "' + text + b'"}]}'
        send(b'{"jsonrpc": "2.0", "id": ' + json.dumps(ident).encode() + b', "result": ' + body + b"}")
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}).encode())
