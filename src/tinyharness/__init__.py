"""tinyharness: the layer that keeps long-running LLM agents stable.

Subpackages: ``models`` (the Model protocol and adapters), ``tools`` (tools, the registry,
permissions), ``context`` (token accounting, compaction, the request validator), ``memory``
(long-term memory). Top-level modules: ``messages``, ``events``, ``agent`` (the loop),
``runlog``, ``report``, ``redact``, ``progress``, ``cli``, ``guide`` (what plans a run for a small
model), ``profiles`` (per-model defaults), ``front`` (``Agent`` from a model string). The names
below are the public API.

May import anything (it re-exports the public API); each part's docstring says what that part
may import, and ``tests/test_import_rules.py`` holds them to it.
"""

from .agent import AgentConfig, RunResult
from .anchors import Anchors, PlanItem
from .context.base import ContextPolicy
from .context.config import ContextConfig
from .context.manager import ContextManager, build_context
from .errors import ConfigError, ContextLengthExceeded, HarnessError, ModelError, StopRun
from .events import EventBus, EventSink, JsonlSink, ListSink
from .front import Agent
from .messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript
from .models.base import Model, ModelRequest, ModelResponse, ToolSpec, Usage
from .models.factory import load_model
from .models.scripted import ScriptedModel
from .tools.base import Tool, ToolRegistry, function_tool
from .tools.builtin import builtin_tools

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentConfig",
    "Anchors",
    "ConfigError",
    "ContextConfig",
    "ContextLengthExceeded",
    "ContextManager",
    "ContextPolicy",
    "EventBus",
    "EventSink",
    "HarnessError",
    "JsonlSink",
    "ListSink",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "PlanItem",
    "RunResult",
    "ScriptedModel",
    "StopRun",
    "TextBlock",
    "ThinkingBlock",
    "Tool",
    "ToolRegistry",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "Transcript",
    "Usage",
    "__version__",
    "build_context",
    "builtin_tools",
    "function_tool",
    "load_model",
]
