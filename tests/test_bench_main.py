"""``python -m bench`` writes RESULTS.md with the machine, the command and each part's table."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def main_module() -> ModuleType:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("bench.__main__")


def test_small_token_part_writes_results(main_module: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    assert main_module.main(["--small", "--only", "tokens", "--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "Command: `python -m bench --small --only tokens`" in text
    assert "Machine: " in text and " cores, " in text and "Python 3." in text
    assert "## 2. Token economy on a long task" in text
    for strategy in ("none", "offload", "summarize", "default"):
        assert f"\n{strategy} " in text
    assert str(Path.home()) not in text and str(ROOT) not in text  # no paths


def test_memory_part_reports_pending_when_missing(
    main_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(name: str) -> ModuleType:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(main_module.importlib, "import_module", missing)
    assert main_module._memory(True).startswith("Pending: bench/memory_bench.py is not importable yet")


def test_unknown_part_is_a_usage_error(main_module: ModuleType) -> None:
    with pytest.raises(SystemExit):
        main_module.main(["--only", "nope"])


def test_the_secrets_part_is_wired_and_its_peer_redactor_works(main_module: ModuleType) -> None:
    assert "secrets" in main_module.PARTS and "secrets" in main_module.SECTIONS
    from bench import secrets_bench

    plain = "nothing secret here\n"
    assert secrets_bench.detect_secrets_redact(plain) == plain
    leaked = 'aws_secret = "' + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" + '"\n'
    assert "wJalrXUtnFEMI" not in secrets_bench.detect_secrets_redact(leaked)


def _fake_sections(main_module: ModuleType, monkeypatch: pytest.MonkeyPatch, tag: str) -> None:
    """Every part replaced by one that writes a table naming ``tag``: no benchmark runs."""
    fake = {
        part: (
            title,
            alone,
            lambda small, part=part: f"| part | run | value |\n| --- | --- | ---: |\n| {part} | {tag} | 3 |",
        )
        for part, (title, alone, _) in main_module.SECTIONS.items()
    }
    monkeypatch.setattr(main_module, "SECTIONS", fake)


def test_notes_are_linked_never_included_nor_written(
    main_module: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    reading = "### Reading\n\nHand-written: the *loop* row is 3x the tokens row.\n"
    (notes / "loop.md").write_text(reading, encoding="utf-8")
    monkeypatch.setattr(main_module, "NOTES", notes)
    _fake_sections(main_module, monkeypatch, "first")
    out = tmp_path / "RESULTS.md"
    assert main_module.main(["--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "Hand-written" not in text  # the results file holds the run's tables only
    link = "[bench/notes/loop.md](notes/loop.md)"
    loop_at, link_at = text.index("| loop | first |"), text.index(link)
    assert loop_at < link_at < text.index("## 2. Token economy")
    assert "notes/tokens.md" not in text  # no link to notes that do not exist
    assert (notes / "loop.md").read_text(encoding="utf-8") == reading  # the bench never writes it
    assert "Whole run: `python -m bench` on " in text
    assert "Re-run: `python -m bench --only loop`" in text


def test_every_section_with_numbers_gets_its_chart_beside_the_results(
    main_module: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_sections(main_module, monkeypatch, "first")
    out = tmp_path / "RESULTS.md"
    assert main_module.main(["--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    for part in main_module.PARTS:
        chart = tmp_path / "charts" / f"{part}.png"
        assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", part
        assert f"](charts/{part}.png)" in text, part


def test_long_tables_move_to_details_and_render_rewrites_without_running(
    main_module: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rows = "\n".join(f"| row {i} | {i} |" for i in range(main_module.LONG_FIRST_TABLE + 5))
    long_table = f"Every row:\n\n| name | value |\n| --- | ---: |\n{rows}\n"
    _fake_sections(main_module, monkeypatch, "first")
    monkeypatch.setitem(
        main_module.SECTIONS,
        "grep",
        (main_module.SECTIONS["grep"][0], "python -m bench.grep_bench", lambda small: long_table),
    )
    out = tmp_path / "RESULTS.md"
    assert main_module.main(["--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "| row 0 | 0 |" not in text and "[bench/details/grep.md](details/grep.md)" in text
    details = (tmp_path / "details" / "grep.md").read_text(encoding="utf-8")
    assert all(f"| row {i} | {i} |" in details for i in range(main_module.LONG_FIRST_TABLE + 5))
    # --render runs no part: a part that would raise is never called, and the file is the same
    for part in main_module.PARTS:
        monkeypatch.setitem(main_module.SECTIONS, part, (*main_module.SECTIONS[part][:2], _never))
    (tmp_path / "charts" / "loop.png").unlink()
    assert main_module.main(["--render", "--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == text
    assert (tmp_path / "charts" / "loop.png").is_file()  # charts are redrawn


def _never(small: bool) -> str:
    raise AssertionError("--render ran a part")


def test_only_rewrites_its_parts_and_keeps_the_others(
    main_module: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    monkeypatch.setattr(main_module, "NOTES", notes)
    (notes / "memory.md").write_text("Old reading of memory.\n", encoding="utf-8")
    out = tmp_path / "RESULTS.md"
    _fake_sections(main_module, monkeypatch, "first")
    assert main_module.main(["--output", str(out)]) == 0
    # The notes change by hand; then only two parts run again.
    (notes / "memory.md").write_text("New reading of memory.\n", encoding="utf-8")
    (notes / "grep.md").write_text("A note on grep.\n", encoding="utf-8")
    _fake_sections(main_module, monkeypatch, "second")
    assert main_module.main(["--only", "loop,memory", "--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    for part in main_module.PARTS:
        tag = "second" if part in ("loop", "memory") else "first"
        assert text.count(f"| {part} |") == 1 and f"| {part} | {tag} |" in text, part
    titles = [main_module.SECTIONS[part][0] for part in main_module.PARTS]
    positions = [text.index(f"## {title}\n") for title in titles]
    assert positions == sorted(positions)  # still in the parts' order
    # the notes are linked for every part that has them, run or kept, never copied in
    assert "reading of memory" not in text and "A note on grep." not in text
    assert text.index("| grep | first |") < text.index("(notes/grep.md)")
    assert "Whole run: `python -m bench` on " in text
    assert "Run since: `python -m bench --only loop,memory` on " in text
    assert "Command: `python -m bench --only loop,memory` (alone: " in text
    # A third run of one part keeps the second run's parts too.
    assert main_module.main(["--only", "grep", "--output", str(out)]) == 0
    again = out.read_text(encoding="utf-8")
    assert "| loop | second |" in again and "| grep | second |" in again and "| tokens | first |" in again


def test_only_refuses_a_results_file_without_markers(
    main_module: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "RESULTS.md"
    out.write_text("# Benchmark results\n\n## 1. Loop overhead\n\nwritten by hand\n", encoding="utf-8")
    _fake_sections(main_module, monkeypatch, "x")
    with pytest.raises(SystemExit) as stopped:
        main_module.main(["--only", "loop", "--output", str(out)])
    assert stopped.value.code == 2
    assert "no section markers" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8").endswith("written by hand\n")  # untouched


def test_the_committed_results_file_parses_into_every_part(main_module: ModuleType) -> None:
    """bench/RESULTS.md as committed: `--only` can update it without losing a section."""
    header, generated = main_module.parse_results((ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8"))
    assert header.startswith("# Benchmark results")
    assert set(generated) == set(main_module.PARTS)
    for part, text in generated.items():
        assert text.startswith(f"## {main_module.SECTIONS[part][0]}\n"), part
