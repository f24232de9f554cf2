"""Build-time hooks of the documentation site (mkdocs.yml names this file).

- ``reference/cli.md`` gets the CLI reference generated from the argparse parser itself, so the page
  never drifts from ``--help``: every command and subcommand, its usage and every option.
- ``results.md`` is bench/RESULTS.md as the bench last wrote it, with the charts, notes and details
  pages it links, so the
  site shows the same numbers as the repository without a copy to keep in step.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
CLI_MARKER = "<!-- cli-reference -->"


def _commands(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.extend(_commands(sub, f"{path} {name}"))
    return found


def cli_reference() -> str:
    from tinyharness.cli import build_parser

    parts = []
    for path, parser in _commands(build_parser(), "tinyharness"):
        parser.prog = path
        level = "##" if path.count(" ") <= 1 else "###"
        parts.append(f"{level} `{path}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
    return "\n".join(parts)


def on_files(files: Files, config: Any) -> Files:
    results = ROOT / "bench" / "RESULTS.md"
    text = results.read_text(encoding="utf-8")
    files.append(File.generated(config, "results.md", content=text))
    for chart in sorted((ROOT / "bench" / "charts").glob("*.png")):
        files.append(File.generated(config, f"charts/{chart.name}", content=chart.read_bytes()))
    for folder in ("notes", "details"):  # what RESULTS.md links: the readings, the long tables
        for page in sorted((ROOT / "bench" / folder).glob("*.md")):
            files.append(File.generated(config, f"{folder}/{page.name}", content=page.read_text("utf-8")))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if CLI_MARKER in markdown:
        return markdown.replace(CLI_MARKER, cli_reference())
    return markdown
