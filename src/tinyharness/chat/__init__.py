"""The interactive agent in a terminal (``tinyharness chat``): a prompt with history and
multi-line input, replies streamed and rendered as Markdown, tool calls shown inline, slash
commands, Ctrl-C that stops a turn, a diff before each write and an undo of the last turn's
file changes.

``review`` (diff approval and undo snapshots), ``render`` (what the terminal shows while a turn
runs) and ``repl`` (the prompt, the turns and the slash commands). The command line builds the
agents (model, tools, context, memory) and hands the REPL a function that makes one.

May import ``agent``, ``safefs``, ``messages``, ``history``, ``events``, ``errors``, ``paths``,
``models``, ``tools``, ``context``, ``session``, ``terminal`` and ``anchors``.
"""

from .repl import ChatSetup, run_chat
from .review import WriteReview

__all__ = ["ChatSetup", "WriteReview", "run_chat"]
