"""What the memory manager asks the model: the system prompts, the JSON schemas of the answers,
and the conversation as extraction reads it (``extraction_transcript``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..history import render_transcript
from ..messages import Message
from ..redact import redact

KINDS = ("preference", "constraint", "conclusion", "fact")
RESULT_CHARS = 500  # of one tool result shown to extraction: facts come from what was said and found

EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "kind": {"type": "string", "enum": list(KINDS)},
                    "subject": {"type": "string"},
                    "time": {"type": "string"},
                },
                "required": ["text"],
            },
        }
    },
    "required": ["facts"],
}

CONSOLIDATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "operations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": ["add", "update", "delete", "none"]},
                    "fact": {"type": "integer"},
                    "id": {"type": "integer"},
                    "text": {"type": "string"},
                },
                "required": ["op"],
            },
        }
    },
    "required": ["operations"],
}

EXTRACTION_SYSTEM = (
    "You extract long-term memories from a conversation between a user and an assistant. Keep only "
    "what will still matter in later sessions: the user's preferences, fixed constraints, goals, "
    "decisions and conclusions reached, and stable background facts. Also record briefly what the "
    "user asked for and what the answer was when it may be asked about later. Write each fact as one "
    "short self-contained sentence in the conversation's language, with names instead of pronouns "
    "and absolute dates instead of 'yesterday'. Give each fact its subject (who or what it is "
    "about: user, a person's name, a project, a file) and, when the conversation says when it "
    "happened, its time as an ISO date. Never include secrets, passwords, keys or tokens. Reply "
    'with JSON only: {"facts": [{"text": "...", "kind": "preference|constraint|conclusion|fact", '
    '"subject": "...", "time": "YYYY-MM-DD"}]}; {"facts": []} when nothing is worth keeping.'
)

CONSOLIDATION_SYSTEM = (
    "You keep a user's long-term memory consistent. You get existing memories, numbered, and new "
    "facts, numbered. For each new fact decide: add (new information), update (it refines or corrects "
    'an existing memory: give that memory\'s "id" and the merged "text"), delete (it shows an existing '
    'memory is no longer true: give its "id"), or none (already known). Reply with JSON only: '
    '{"operations": [{"op": "add", "fact": 1}, {"op": "update", "id": 2, "fact": 2, "text": "..."}, '
    '{"op": "delete", "id": 3, "fact": 3}, {"op": "none", "fact": 4}]}. Use only the numbers shown.'
)


def extraction_transcript(messages: Sequence[Message], limit: int) -> str:
    """The conversation as the summarizer sees it (tool output quoted as data), redacted, keeping
    the most recent ``limit`` characters."""
    return redact(render_transcript(messages, RESULT_CHARS))[-limit:]


def extraction_prompt(transcript: str, today: str) -> str:
    """The user message of the extraction request (today's date lets the model resolve
    "yesterday"; it is in this message, not the system prompt, so the system prompt stays fixed)."""
    return f"Today is {today}.\nConversation:\n<conversation>\n{transcript}\n</conversation>"
