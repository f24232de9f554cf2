"""What installed Agent Skills cost per request, and what a skill's body costs once used.

Each case runs ``tinyharness run`` (the real command line, the scripted model, ``--trace``) on
the same three-turn task (read a file, read another, answer) and counts every agent request
with the o200k tokenizer: the system prompt and the messages, as sent (the tool list, the same
in every case, is left out).

- ``0 skills``: no skill installed.
- ``20 skills, unused``: 20 skills in ``.agents/skills`` (each a SKILL.md of about 2,000
  characters and a reference file), none read. Only names and descriptions are sent.
- ``20 skills, 1 used``: the same, and the model reads one SKILL.md on its first turn.
- ``20 bodies in AGENTS.md``: the naive way, without progressive disclosure: every skill's body
  pasted into the project instructions, which reach every request.

Run at two windows (the skill list's budget is 2% of the window): 32k and 128k.

    python -m bench.skills_bench
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tinyharness.cli import main
from tinyharness.context.tokens import TiktokenCounter

SKILLS = 20
BODY_LINE = "Step {n}: check the {what} input, then run scripts/run_{what}.py with the flags below.\n"


def _body(what: str) -> str:
    return "".join(BODY_LINE.format(n=n, what=what) for n in range(25))


def _workspace(root: Path, skills: int, mode: str) -> Path:
    ws = root / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n" * 40, encoding="utf-8")
    (ws / "b.txt").write_text("beta\n" * 40, encoding="utf-8")
    bodies = []
    for n in range(skills):
        name = f"skill-{n:02d}"
        description = f"Handle {name} jobs: the checks, the scripts and the report format for them."
        body = _body(name)
        bodies.append(f"## {name}\n{body}")
        if mode == "agents-md":
            continue
        folder = ws / ".agents" / "skills" / name
        folder.mkdir(parents=True)
        front = f"---\nname: {name}\ndescription: {description}\n---\n\n"
        (folder / "SKILL.md").write_text(front + body, encoding="utf-8")
        (folder / "reference.md").write_text(body * 3, encoding="utf-8")
    if mode == "agents-md":
        (ws / "AGENTS.md").write_text("\n".join(bodies), encoding="utf-8")
    return ws


def _call(call_id: str, path: str) -> dict[str, Any]:
    use = {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": path}}
    return {"stop_reason": "tool_use", "content": [use], "usage": {"input_tokens": 100, "output_tokens": 10}}


def _case(skills: int, mode: str, window: int) -> list[int]:
    """Tokens of each agent request of the task."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["TINYHARNESS_HOME"] = str(root / "home")
        (root / "home").mkdir()
        # The naive case gets every body, uncut.
        (root / "home" / "config.json").write_text('{"project_instructions_max_bytes": 1000000}')
        ws = _workspace(root, skills, mode)
        first = ".agents/skills/skill-03/SKILL.md" if mode == "used" else "a.txt"
        answer = {"stop_reason": "end_turn", "content": [{"type": "text", "text": "done"}], "usage": {}}
        script = {"responses": [_call("c1", first), _call("c2", "b.txt"), answer]}
        (root / "script.json").write_text(json.dumps(script), encoding="utf-8")
        events = root / "events.jsonl"
        argv = ["run", "--workspace", str(ws), "--no-log", "--quiet", "--trace", "--events", str(events)]
        argv += ["--model", f"scripted:{root / 'script.json'}", "--context-window", str(window), "--no-plan"]
        argv += ["--no-subagents", "Read a.txt and b.txt, then say done."]
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        if code != 0:
            raise SystemExit(f"the run failed ({code})")
        counter = TiktokenCounter()
        out = []
        for line in events.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event["type"] == "model_call" and event.get("purpose") == "agent":
                request = event["request"]
                text = request["system"] + json.dumps(request["messages"], ensure_ascii=False)
                out.append(counter.count_text(text))
        return out


def main_bench(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__).parse_args(argv)
    cases = [
        ("0 skills", 0, "installed"),
        (f"{SKILLS} skills, unused", SKILLS, "installed"),
        (f"{SKILLS} skills, 1 used", SKILLS, "used"),
        (f"{SKILLS} bodies in AGENTS.md", SKILLS, "agents-md"),
    ]
    for window in (32_000, 128_000):
        print(f"\nwindow {window:,} tokens (skill list budget {max(300, window * 2 // 100)} tokens)")
        print(f"{'case':<26} {'request 1':>10} {'request 2':>10} {'request 3':>10} {'total':>8}")
        base: int | None = None
        for label, skills, mode in cases:
            tokens = _case(skills, mode, window)
            total = sum(tokens)
            base = total if base is None else base
            cells = " ".join(f"{t:>10,}" for t in tokens)
            print(f"{label:<26} {cells} {total:>8,}  (+{total - base:,})")


if __name__ == "__main__":
    main_bench()
