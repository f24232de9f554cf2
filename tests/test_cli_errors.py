"""Every user mistake ends as one line on stderr with exit code 2, never a traceback: paths the
user gave that cannot be written, configuration errors (which must win over a scripted model's
"responses left unused"), windows too small to hold any request, a closed stdout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hardening_support import answer, write_script
from tinyharness.runlog import RunLog

CASES = {
    "events-missing-folder": (["--events", "{tmp}/missing/events.jsonl"], "cannot write the event stream"),
    "events-full-disk": (["--events", "/dev/full"], "No space left on device"),
    "log-under-a-file": (["--log", "{tmp}/afile/runs.db"], "is a file, not a folder"),
    "memory-under-a-file": (["--memory", "{tmp}/afile/memory.db"], "is a file, not a folder"),
    "memory-unwritable": (["--memory", "{tmp}/readonly/memory.db"], "memory store"),
    "ratio-and-buffer": (["--compact-ratio", "0.5", "--compact-buffer", "100"], "not both"),
    "bogus-strategy": (["--strategy", "bogus"], "bogus"),
    "bad-option-value": (["--max-iterations", "zero"], "--max-iterations"),
    "tiny-window": (["--context-window", "300"], "--context-window 300 is too small"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    if case == "memory-unwritable" and os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    extra, expected = CASES[case]
    (tmp_path / "afile").write_text("a file, not a folder\n")
    (tmp_path / "readonly").mkdir()
    (tmp_path / "readonly").chmod(0o500)
    (tmp_path / "ws").mkdir()
    # One response too many: with the old code, "left unused" hid the real error.
    script = write_script(tmp_path / "script.json", [answer("done", None), answer("spare", None)])
    argv = [sys.executable, "-m", "tinyharness", "run", "--model", f"scripted:{script}", "--quiet"]
    argv += ["--workspace", str(tmp_path / "ws"), "--log", str(tmp_path / "runs.db"), "--memory"]
    argv += [str(tmp_path / "m.db"), *(a.format(tmp=tmp_path) for a in extra), "the task"]
    env = {**os.environ, "TINYHARNESS_HOME": str(tmp_path / "home")}
    run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("tinyharness"), run.stderr
    assert expected in run.stderr and "left unused" not in run.stderr


def test_a_closed_stdout_ends_the_listing_quietly(tmp_path: Path) -> None:
    with RunLog(tmp_path / "runs.db") as log:
        for i in range(1500):  # far more than a pipe buffer of output
            log.emit({"type": "run_start", "seq": 1, "ts": float(i), "run_id": f"r{i}", "task": "t" * 40})
    argv = [sys.executable, "-m", "tinyharness", "runs", "-n", "1500", "--log", str(tmp_path / "runs.db")]
    listing = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert listing.stdout is not None and listing.stderr is not None
    assert listing.stdout.readline().startswith(b"id")
    listing.stdout.close()  # what `| head -1` does
    err = listing.stderr.read().decode()
    listing.stderr.close()
    assert listing.wait(timeout=60) == 0 and err == ""


# A bug inside the harness (here: the loop raising an error no one expects, patched in because no
# input reaches such a bug on purpose) must not print a Python traceback at the user.
CRASHING = """
import sys
from tinyharness import agent
async def arun(self, *args, **kwargs):
    raise RuntimeError("the loop broke on purpose (token=ghp_" + "a" * 36 + ")")
agent.Agent.arun = arun
from tinyharness.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("debug", [False, True])
def test_an_unexpected_error_is_one_line_naming_the_file_with_its_trace(tmp_path: Path, debug: bool) -> None:
    (tmp_path / "ws").mkdir()
    script = write_script(tmp_path / "script.json", [answer("done", None)])
    argv = [sys.executable, "-c", CRASHING, "run", "--model", f"scripted:{script}", "--quiet", "--no-memory"]
    argv += ["--workspace", str(tmp_path / "ws"), "--log", str(tmp_path / "runs.db"), "the task"]
    env = {**os.environ, "TINYHARNESS_HOME": str(tmp_path / "home")}
    env.pop("TINYHARNESS_DEBUG", None)
    if debug:
        env["TINYHARNESS_DEBUG"] = "1"
    run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 1, run.stderr
    if debug:  # asked for: the trace itself
        assert "Traceback (most recent call last)" in run.stderr and "on purpose" in run.stderr
        return
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert "RuntimeError: the loop broke on purpose" in run.stderr and "ghp_aaaa" not in run.stderr
    crashes = list((tmp_path / "home" / "crashes").iterdir())
    assert len(crashes) == 1 and str(crashes[0]) in run.stderr
    trace = crashes[0].read_text()
    assert "Traceback (most recent call last)" in trace and "in arun" in trace
    assert "ghp_aaaa" not in trace  # the trace file is redacted like every log
    assert crashes[0].stat().st_mode & 0o777 == 0o600
