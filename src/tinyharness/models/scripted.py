"""The scripted model: replays a JSON file of responses, one per request, and records requests.

File format (a public contract, see the README)::

    {"responses": [{"stop_reason": "tool_use" | "end_turn" | "max_tokens",
                    "content": [Anthropic-shaped blocks],
                    "usage": {"input_tokens": int, "output_tokens": int},
                    "purpose": "agent" | "compact" | "memory" | "flush" | "plan",  # optional
                    "agent": CALL_ID                                     # optional
                   }, ...]}

Every request consumes the next response in order. When any response carries ``purpose``, each
request takes the next response of its own purpose instead, so a script stays valid wherever a
compaction happens to fall. A response with ``"agent": CALL_ID`` is taken only by the sub-agent
that the ``task`` call with that id started (``for_agent``); responses without it belong to the
top-level run. So a script stays deterministic when sub-agents run at the same time. Running
out, or leaving responses unused, is a ``ScriptError``. An optional top-level
``"stream_delay"`` (seconds) spaces the word chunks ``stream`` yields, so a terminal shows them
arrive. Optional top-level ``"latency"`` (seconds) is waited before every answer, as a real
server takes time (benchmarks of many runs at once); ``"request_log"`` names a file (relative to
the script's folder) that gets one JSON line per request received, with its number, purpose
and the process id, so a test can count requests across processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..errors import InvalidScript, ScriptError
from ..messages import Message, block_from_dict
from ..safefs import open_append
from .base import ModelRequest, ModelResponse, StreamItem, Usage

_STOP_REASONS = ("tool_use", "end_turn", "max_tokens")
_PURPOSES = ("agent", "compact", "memory", "flush", "plan")
_CHUNK = re.compile(r"\s*\S+\s*|\s+")  # a word with the spaces around it


def _parse_response(index: int, data: Any) -> tuple[str | None, str | None, ModelResponse]:
    where = f"response #{index + 1}"
    if not isinstance(data, dict):
        raise InvalidScript(f"{where} must be an object, got {type(data).__name__}")
    stop_reason = data.get("stop_reason")
    if stop_reason not in _STOP_REASONS:
        raise InvalidScript(f"{where}: stop_reason must be one of {_STOP_REASONS}, got {stop_reason!r}")
    purpose = data.get("purpose")
    if purpose is not None and purpose not in _PURPOSES:
        raise InvalidScript(f"{where}: purpose must be one of {_PURPOSES}, got {purpose!r}")
    agent = data.get("agent")
    if agent is not None and (not isinstance(agent, str) or not agent):
        raise InvalidScript(f"{where}: agent must be the id of the task call that starts the sub-agent")
    content = data.get("content", [])
    if not isinstance(content, list):
        raise InvalidScript(f"{where}: content must be a list of blocks")
    try:
        blocks = tuple(block_from_dict(b) for b in content)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise InvalidScript(f"{where}: bad content block ({exc})") from None
    usage = data.get("usage", {})
    try:
        parsed_usage = Usage(
            int(usage.get("input_tokens", 0)),
            int(usage.get("output_tokens", 0)),
            int(usage.get("cache_read_input_tokens", 0)),
            int(usage.get("cache_creation_input_tokens", 0)),
        )
    except (TypeError, ValueError, AttributeError):
        raise InvalidScript(f"{where}: usage must hold integer input_tokens and output_tokens") from None
    return purpose, agent, ModelResponse(Message("assistant", blocks), stop_reason, parsed_usage)


class ScriptedModel:
    """A Model that answers from a script. ``requests`` records every request it received."""

    def __init__(
        self,
        script: str | Path | dict[str, Any],
        *,
        name: str = "scripted",
        context_window: int | None = None,
    ) -> None:
        self.name = name
        self._window = context_window
        self.source = str(script) if not isinstance(script, dict) else "<dict>"
        data = script if isinstance(script, dict) else self._load(Path(script))
        responses = data.get("responses") if isinstance(data, dict) else None
        if not isinstance(responses, list):
            raise InvalidScript(f"{self.source}: expected an object with a 'responses' list")
        parsed = [_parse_response(i, r) for i, r in enumerate(responses)]
        self.by_purpose = any(purpose is not None for purpose, _, _ in parsed)
        # (agent, purpose) -> responses; agent None is the top-level run
        self._queues: dict[tuple[str | None, str | None], deque[ModelResponse]] = {}
        for purpose, agent, response in parsed:
            key = (agent, (purpose or "agent") if self.by_purpose else None)
            self._queues.setdefault(key, deque()).append(response)
        self.requests: list[ModelRequest] = []
        delay = data.get("stream_delay", 0)
        if not isinstance(delay, int | float) or delay < 0:
            raise InvalidScript(f"{self.source}: stream_delay must be a number of seconds >= 0")
        self.stream_delay = float(delay)
        latency = data.get("latency", 0)
        if not isinstance(latency, int | float) or latency < 0:
            raise InvalidScript(f"{self.source}: latency must be a number of seconds >= 0")
        self.latency = float(latency)
        log = data.get("request_log")
        if log is not None and not isinstance(log, str):
            raise InvalidScript(f"{self.source}: request_log must be a file name")
        base = Path(script).parent if not isinstance(script, dict) else Path.cwd()
        self.request_log = base / log if log else None

    @staticmethod
    def _load(path: Path) -> Any:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InvalidScript(f"script file not found: {path}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidScript(f"{path}: not valid JSON ({exc})") from None
        except RecursionError:
            raise InvalidScript(f"{path}: not valid JSON (nested too deeply)") from None

    @property
    def context_window(self) -> int | None:
        return self._window

    def for_agent(self, label: str) -> ScriptedModel:
        """The model as the sub-agent started by the task call ``label`` sees it: responses
        marked ``"agent": label`` when the script has any, else the shared order."""
        if not any(agent is not None for agent, _ in self._queues):
            return self
        return _AgentView(self, label)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self.request_log is not None:
            line = {"n": len(self.requests) + 1, "purpose": request.purpose, "pid": os.getpid()}
            with open_append(self.request_log) as file:
                file.write((json.dumps(line) + "\n").encode("utf-8"))
        if self.latency:
            await asyncio.sleep(self.latency)
        return self._take(request, None)

    def replayed(self, request: ModelRequest) -> None:
        """A durable run answered ``request`` from its record (an earlier process received it):
        skip the response it took, so the next request gets the next one. Not a request: no
        latency, no line in the request log."""
        self._take(request, None)

    def _take(self, request: ModelRequest, agent: str | None) -> ModelResponse:
        self.requests.append(request)
        key = (agent, request.purpose if self.by_purpose else None)
        queue = self._queues.get(key)
        if not queue:
            which = f" with purpose {request.purpose!r}" if self.by_purpose else ""
            if agent is not None:
                which += f" for the sub-agent of task call {agent!r}"
            raise ScriptError(
                f"{self.source}: out of responses{which} at request #{len(self.requests)} "
                f"(a {request.purpose} request); add responses to the script"
            )
        return queue.popleft()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The same response as ``complete``, its text first yielded word by word."""
        response = await self.complete(request)
        for chunk in _CHUNK.findall(response.message.text):
            if self.stream_delay:
                await asyncio.sleep(self.stream_delay)
            yield chunk
        yield response

    def unused(self) -> int:
        return sum(len(q) for q in self._queues.values())

    async def aclose(self) -> None:
        left = self.unused()
        if left:
            raise ScriptError(
                f"{self.source}: {left} scripted response(s) left unused after "
                f"{len(self.requests)} request(s); the run ended earlier than the script expects"
            )


class _AgentView(ScriptedModel):
    """A sub-agent's side of a ScriptedModel: it takes the responses marked with its label;
    closing it checks nothing (the shared model checks the whole script once)."""

    def __init__(self, shared: ScriptedModel, label: str) -> None:  # no super().__init__: a view
        self.shared = shared
        self.label = label
        self.name = shared.name
        self._window = shared.context_window
        self.source = shared.source
        self.stream_delay = shared.stream_delay
        self.by_purpose = shared.by_purpose

    @property
    def requests(self) -> list[ModelRequest]:  # type: ignore[override]
        return self.shared.requests

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return self.shared._take(request, self.label)

    def for_agent(self, label: str) -> ScriptedModel:
        return self.shared.for_agent(label)

    def unused(self) -> int:
        return 0

    async def aclose(self) -> None:
        return None
