"""A tool result from an MCP server, as the text the model reads.

Text content is kept; an image or audio clip is described (type, size, PNG dimensions) and, when
a folder is given, saved there with its path in the description: the neutral message type
carries text only, so no model is sent the bytes. Embedded resources keep their text (binary
ones are described), resource links give their URI. Structured content is used as JSON when the
server sent no text. The client then quotes the whole as data, attributed to its server and
tool (``history.quoted``): an MCP server is someone else's code, and what it returns must not
read as instructions.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

import mcp_types as types

from ..safefs import write_file

_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "audio/wav": ".wav",
    "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg",
}


def result_text(
    result: types.CallToolResult, *, save_dir: Path | None = None, root: Path | None = None
) -> str:
    """The content of ``result`` as text (not yet quoted). Images, audio and binary resources
    are saved under ``save_dir`` when given, named in the text relative to ``root``."""
    saver = _Saver(save_dir, root)
    parts = [_block_text(block, saver) for block in result.content]
    if not any(parts) and result.structured_content is not None:
        parts = [json.dumps(result.structured_content, ensure_ascii=False, default=str)]
    return "\n".join(part for part in parts if part)


def _block_text(block: Any, save: _Saver) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return _describe_binary(kind, block.mime_type, block.data, save)
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        mime = resource.mime_type or "unknown type"
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri} ({mime})]\n{resource.text}"
        return _describe_binary("resource", mime, resource.blob, save, uri=str(resource.uri))
    if isinstance(block, types.ResourceLink):
        details = ", ".join(str(x) for x in (block.name, block.mime_type, block.description) if x)
        return f"[resource link {block.uri}{f' ({details})' if details else ''}]"
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"


class _Saver:
    def __init__(self, folder: Path | None, root: Path | None) -> None:
        self.folder, self.root = folder, root

    def __call__(self, raw: bytes, mime: str) -> str:
        """Where ``raw`` was saved, or "" when it was not."""
        if self.folder is None:
            return ""
        path = self.folder / (hashlib.sha256(raw).hexdigest()[:16] + _EXTENSIONS.get(mime, ".bin"))
        try:
            # Beneath the workspace: a planted link (the folder, a predictable name) cannot lead out.
            path = write_file(path, raw, self.root)
        except OSError:
            return ""
        return shown_path(path, self.root)


def shown_path(path: Path, root: Path | None) -> str:
    """``path`` relative to the workspace when it is inside it, else as it is."""
    if root is not None:
        for spelling in (root, Path(os.path.realpath(root))):
            if path.is_relative_to(spelling):
                return str(path.relative_to(spelling))
    return str(path)


def _describe_binary(kind: str, mime: str, data: str, save: _Saver, *, uri: str = "") -> str:
    try:
        raw = base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return f"[{kind} {uri} ({mime}): undecodable base64 data, not shown]"
    details = [mime, f"{len(raw):,} bytes"]
    if raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        details.append(f"{width}x{height} pixels")
    saved = save(raw, mime)
    where = f"; saved to {saved}" if saved else ""
    label = f"{kind} {uri}" if uri else kind
    return f"[{label} ({', '.join(details)}): not shown, this model reads text only{where}]"
