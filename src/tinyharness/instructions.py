"""Project instructions: the AGENTS.md files (CLAUDE.md where a folder has no AGENTS.md).

At the start of a run: ``$TINYHARNESS_HOME/AGENTS.md`` (the user's own, for every project), then
the one at the workspace root. During the run, when a tool works on a path in a sub-folder, the
instruction files of the folders between the root and that path that were not loaded yet (as
Codex and Claude Code do for nested files). Each file is loaded once, redacted like everything
else the harness handles, and kept by ``anchors.Anchors``: the context manager puts the texts
back word for word after every compaction and audits that they are there.

All files together are capped at ``max_bytes`` (32 KiB by default, as Codex's
``project_doc_max_bytes``); a file that does not fit is cut at a line and says so, in its text and
in ``notices``. Files are read through ``safefs`` beneath their folder: a link leading out of the
workspace is not followed.

May import ``anchors``, ``events``, ``messages``, ``paths``, ``redact`` and ``safefs``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath

from .anchors import Anchors, Instruction
from .events import EventBus
from .messages import ToolResultBlock, ToolUseBlock
from .paths import HOME_ENV, data_home
from .redact import redact
from .safefs import Folder

FILE_NAMES = ("AGENTS.md", "CLAUDE.md")  # the first one a folder has is its instruction file
DEFAULT_MAX_BYTES = 32 * 1024
USER_SOURCE = f"${HOME_ENV}/AGENTS.md"


class ProjectInstructions:
    """The instruction files of one run. ``initial()`` gives the user's and the root's; then
    ``for_path(path)`` gives those of the sub-folders on the way to ``path`` not loaded yet.
    ``notices`` collects one line per file that was cut to fit ``max_bytes``."""

    def __init__(
        self,
        workspace: Path,
        *,
        home: Path | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        self.workspace = Folder(workspace)
        self.home = home if home is not None else data_home()
        self.left = max_bytes
        self.max_bytes = max_bytes
        self.notices: list[str] = []
        self.on_notice = on_notice
        self._seen: set[str] = set()  # folders (relative to the root) already looked at

    def initial(self) -> list[Instruction]:
        found = []
        home = self.home / "AGENTS.md"
        if home.is_file():  # the user's own file: a link to their dotfiles is followed
            item = self._load(Folder(home.resolve().parent), home.resolve().name, USER_SOURCE)
            if item is not None:
                found.append(item)
        self._seen.add(".")
        root = self._in_folder(".")
        if root is not None:
            found.append(root)
        return found

    def for_path(self, path: str) -> list[Instruction]:
        """The instruction files of the folders from the root down to ``path`` (a path the
        model gave, relative to the workspace) not loaded yet, outermost first; [] for a path
        outside the workspace or a spelling the tools refuse anyway."""
        if not isinstance(path, str) or not path.strip() or path.startswith(("/", "\\", "~")):
            return []
        parts = PurePosixPath(path.replace("\\", "/")).parts
        if any(part in ("..", "") for part in parts):
            return []
        try:
            real = self.workspace.real_parts(path.replace("\\", "/"))
        except OSError:
            real = parts  # a new file: the folders the path names
        if not self._is_folder(real):
            real = real[:-1]
        found = []
        for depth in range(1, len(real) + 1):
            folder = "/".join(real[:depth])
            if folder in self._seen:
                continue
            self._seen.add(folder)
            item = self._in_folder(folder)
            if item is not None:
                found.append(item)
        return found

    def _is_folder(self, parts: tuple[str, ...]) -> bool:
        try:
            info = self.workspace.stat("/".join(parts) or ".")
        except OSError:
            return False
        return info is not None and (info.st_mode & 0o170000) == 0o040000

    def _in_folder(self, folder: str) -> Instruction | None:
        for name in FILE_NAMES:
            rel = name if folder == "." else f"{folder}/{name}"
            try:
                info = self.workspace.stat(rel)
            except OSError:
                continue
            if info is not None and (info.st_mode & 0o170000) == 0o100000:
                return self._load(self.workspace, rel, rel)
        return None

    def _load(self, folder: Folder, rel: str, source: str) -> Instruction | None:
        if self.left <= 0:
            self._notice(f"{source} not loaded: the instruction files already fill {self.max_bytes} bytes")
            return None
        try:
            data, size = folder.read(rel, self.left)
        except OSError:
            return None
        text = data.decode("utf-8", errors="replace")
        if size > len(data):
            cut = text.rfind("\n")
            text = text[:cut] if cut > 0 else text
            note = (
                f"[... {source} is {size} bytes; only its first {len(text.encode())} are loaded: the "
                f"instruction files may take {self.max_bytes} bytes in all]"
            )
            text = f"{text}\n{note}"
            self._notice(
                f"{source} is {size} bytes; only the first {len(data)} reach the model (set "
                "project_instructions_max_bytes in config.json to change the limit)"
            )
        self.left -= len(data)
        text = redact(text).strip("\n")
        return Instruction(source, text) if text.strip() else None

    def _notice(self, line: str) -> None:
        self.notices.append(line)
        if self.on_notice is not None:
            self.on_notice(line)


NESTED_HEADER = "[project instructions for this folder, loaded now; they hold from here on]"


class InstructionFinder:
    """A registry hook (``tools.base.CallHook``): when a call names a ``path`` in a sub-folder
    with instruction files not loaded yet, their texts are added to the call's result (the model
    reads them at once) and to ``anchors`` (kept through every compaction from then on)."""

    def __init__(self, loader: ProjectInstructions, anchors: Anchors, events: EventBus | None = None) -> None:
        self.loader = loader
        self.anchors = anchors
        self.events = events

    async def before(self, call: ToolUseBlock) -> str | None:
        return None

    async def after(self, call: ToolUseBlock, result: ToolResultBlock) -> ToolResultBlock:
        path = call.input.get("path") if isinstance(call.input, dict) else None
        if result.is_error or not isinstance(path, str):
            return result
        found = [item for item in self.loader.for_path(path) if self.anchors.add_instruction(item)]
        if not found:
            return result
        if self.events is not None:
            for item in found:
                self.events.emit("instructions_loaded", source=item.source, chars=len(item.text))
        added = "\n\n".join(item.shown for item in found)
        return ToolResultBlock(result.tool_use_id, f"{result.content}\n\n{NESTED_HEADER}\n{added}")
