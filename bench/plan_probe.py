"""The plan alone: what a local model's plan request gives for a task, in several languages.

For each task (the suite's tune half on the shop project, in English and in the Chinese and
French translations below, written for this probe; or the acceptance task in English and in
the seed's Chinese on any folder), the guide the CLI builds is started on it with the model's
own request, and the plan is printed: who chose it (``paths``, ``model``, ``flag``), its kind,
its targets, the size of its set of files, and the seconds the request took. One model
process, one short request per task; nothing else of the run.

    python -m bench.plan_probe --model local
    python -m bench.plan_probe --model local --acceptance WORKSPACE

``--suite HALVES`` plans every task of those halves of the suite (on their public projects)
whose kind is in ``--kinds``, and counts how often the plan's reads hold a file that answers it
(the task's ``targets``; a folder or glob target holding one counts): the plan's recall, the
step before any answer can be right. ``--record FILE`` keeps each model reply; ``--replay
FILE`` plans again from those replies with no model, so a change to what the guide does with a
reply is measured on the same replies.

    python -m bench.plan_probe --suite unseen,fourth,fifth,sixth,seventh --record /tmp/plans.json
    python -m bench.plan_probe --suite unseen,fourth,fifth,sixth,seventh --replay /tmp/plans.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.tasks import TASKS, build_workspace
from tinyharness.guide import PlanGuide
from tinyharness.guide.plan import expand
from tinyharness.messages import Message, TextBlock
from tinyharness.models.base import ModelRequest, ModelResponse
from tinyharness.models.factory import load_model
from tinyharness.tools.files import ReadState, text_files
from tinyharness.tools.notes import NotesFile
from tinyharness.tools.workspace import Workspace

# The tune half's tasks in Chinese and French (the probe's own translations, not suite data).
TRANSLATIONS: dict[str, tuple[str, str]] = {
    "readme": (
        "读 README.md，用一句话告诉我这个项目是什么",
        "Lis README.md et dis-moi en une phrase ce qu'est ce projet",
    ),
    "port": ("config.toml 给服务器设置的端口是多少？", "Quel port config.toml fixe-t-il pour le serveur ?"),
    "author": ("根据 README.md，这个项目是谁写的？", "Qui a écrit ce projet, d'après README.md ?"),
    "first-item": (
        "data/items.csv 里第一个商品叫什么名字？",
        "Quel est le nom du premier article de data/items.csv ?",
    ),
    "def-inventory": ("哪个文件定义了类 Inventory？", "Quel fichier définit la classe Inventory ?"),
    "def-discount": (
        "哪个文件里有函数 apply_discount？",
        "Quel fichier contient la fonction apply_discount ?",
    ),
    "count-items": (
        "data/items.csv 里列了多少个商品（不算表头那一行）？",
        "Combien d'articles sont listés dans data/items.csv, sans compter la ligne d'en-tête ?",
    ),
    "list-modules": ("列出 src/shop 文件夹里的 .py 文件。", "Liste les fichiers .py du dossier src/shop."),
    "edit-tax": (
        "在 src/shop/pricing.py 里，把 TAX_RATE 从 0.2 改成 0.25。",
        "Dans src/shop/pricing.py, change TAX_RATE de 0.2 à 0.25.",
    ),
    "notes-two": (
        "读 src/shop/cart.py 和 src/shop/pricing.py，用 note 工具给每个文件写一行总结到笔记里",
        "Lis src/shop/cart.py et src/shop/pricing.py et écris dans les notes un résumé d'une ligne de "
        "chacun avec l'outil note",
    ),
    "long-handbook": (
        "读 docs/handbook 下的每个 .md 文件，然后告诉我备份服务监听哪个端口。",
        "Lis chaque fichier .md sous docs/handbook, puis dis-moi sur quel port écoute le service de "
        "sauvegarde.",
    ),
}
ACCEPTANCE = {
    "en": "Read every .py file under src/ one by one and write a one-line summary of each into the notes "
    "with the note tool",
    "zh": "逐个读 src/ 下所有 .py 文件，总结每个的职责，写进 notes.md",
}


Ask = Callable[[ModelRequest], Awaitable[ModelResponse]]


async def plan_of(model: object, workspace: Path, task: str, may_write: bool) -> tuple[str, float]:
    guide, took = await started(model.complete, workspace, task, may_write)  # type: ignore[attr-defined]
    plan = guide.plan
    targets = ",".join(plan.targets) or "-"
    return f"{plan.source:5} {plan.kind or '-':7} {targets:40} set={len(guide.file_set.set)}", took


async def started(ask: Ask, workspace: Path, task: str, may_write: bool) -> tuple[PlanGuide, float]:
    """The guide the CLI builds, started on ``task``, and the seconds its start took."""
    guide = PlanGuide(
        workspace,
        read_state=ReadState(),
        notes=NotesFile(workspace / "NOTES.md", root=workspace),
        may_write=may_write,
        rank=_rank,
    )
    start = time.perf_counter()
    await guide.start(task, ask)
    return guide, time.perf_counter() - start


def recording(ask: Ask | None, replies: dict[str, str]) -> Ask:
    """``ask`` that keeps each reply in ``replies`` by its request's text; with no ``ask``, the
    kept replies given back (a request not kept is an error: the replay would guess)."""

    async def asked(request: ModelRequest) -> ModelResponse:
        key = json.dumps([request.system, [m.text for m in request.messages]], ensure_ascii=False)
        if ask is None:
            if key not in replies:
                raise KeyError("a request the recording does not hold; record again")
            return ModelResponse(Message("assistant", (TextBlock(replies[key]),)), "end_turn")
        response = await ask(request)
        replies[key] = response.message.text
        return response

    return asked


async def suite_recall(ask: Ask, halves: set[str], kinds: set[str]) -> None:
    """The plan of each task of ``halves`` whose kind is in ``kinds``: its reads, and whether
    they hold a file that answers it; the share, by half and by kind."""
    from bench.task_suite import TASKS as SUITE
    from bench.task_suite import build_task_workspace

    tasks = [t for t in SUITE if t.half in halves and t.kind in kinds and t.targets]
    found: dict[str, list[bool]] = {}
    with tempfile.TemporaryDirectory() as folder:
        workspaces: dict[str, Path] = {}
        for task in tasks:
            root = workspaces.get(task.project)
            if root is None:
                root = workspaces[task.project] = Path(folder) / task.project
                root.mkdir()
                build_task_workspace(task, root)
            guide, took = await started(ask, root, task.prompt, task.allow_write)
            files = text_files(Workspace(root))
            reads = expand(guide.plan.targets, files)
            # A folder target is written without its "/" ("markdown/extensions").
            folders = [t if t in files or "*" in t else t.rstrip("/") + "/" for t in task.targets]
            answers = expand(folders, files)
            hit = any(path in answers for path in reads)
            for key in (task.half, task.kind, "all"):
                found.setdefault(key, []).append(hit)
            mark = "hit " if hit else "MISS"
            plan = guide.plan
            print(f"{mark} {task.name:22} {plan.kind or '-':7} {','.join(plan.targets) or '-'} "
                  f"terms={','.join(plan.terms) or '-'} {took:.1f}s", flush=True)  # fmt: skip
    for key, hits in found.items():
        print(f"{key:10} {sum(hits)}/{len(hits)}")


def _rank(root: Path, task: str, k: int) -> list[str]:
    from tinyharness.cli import _workspace_rank

    return _workspace_rank(root, task, k)


async def main_async(model_name: str, acceptance: Path | None, only: set[str]) -> None:
    model = load_model(model_name, context_window=4096)
    try:
        if acceptance is not None:
            for lang, words in ACCEPTANCE.items():
                line, took = await plan_of(model, acceptance, words, False)
                print(f"acceptance {lang}: {line} {took:.1f}s", flush=True)
            return
        for task in TASKS:
            if task.half != "tune" or (only and task.name not in only):
                continue
            zh, fr = TRANSLATIONS.get(task.name, ("", ""))
            with tempfile.TemporaryDirectory() as folder:
                root = Path(folder)
                build_workspace(root, task.extra)
                for lang, text in (("en", task.prompt), ("zh", zh), ("fr", fr)):
                    if not text:
                        continue
                    line, took = await plan_of(model, root, text, task.allow_write)
                    print(f"{task.name:14} {lang}: {line} {took:.1f}s", flush=True)
    finally:
        await model.aclose()


async def _suite_main(args: argparse.Namespace) -> None:
    halves, kinds = set(args.suite.split(",")), set(args.kinds.split(","))
    if args.replay is not None:
        replies = json.loads(args.replay.read_text(encoding="utf-8"))
        await suite_recall(recording(None, replies), halves, kinds)
        return
    model = load_model(args.model, context_window=4096)
    replies = {}
    try:
        await suite_recall(recording(model.complete, replies), halves, kinds)
    finally:
        await model.aclose()
        if args.record is not None:
            args.record.write_text(json.dumps(replies, ensure_ascii=False, indent=1), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default="local")
    parser.add_argument("--acceptance", type=Path, help="a workspace to plan the acceptance task on")
    parser.add_argument("--only", default="", help="comma list of tune task names")
    parser.add_argument("--suite", default="", help="comma list of the suite's halves: the plan's recall")
    parser.add_argument("--kinds", default="question,find,count", help="the task kinds --suite plans")
    parser.add_argument("--record", type=Path, help="with --suite: keep the model's replies in this file")
    parser.add_argument("--replay", type=Path, help="with --suite: plan from these replies, no model")
    args = parser.parse_args(argv)
    if args.suite:
        asyncio.run(_suite_main(args))
        return
    asyncio.run(main_async(args.model, args.acceptance, set(filter(None, args.only.split(",")))))


if __name__ == "__main__":
    main()
