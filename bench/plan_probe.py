"""The plan alone: what a local model's plan request gives for a task, in several languages.

For each task (the suite's tune half on the shop project, in English and in the Chinese and
French translations below, written for this probe; or the acceptance task in English and in
the seed's Chinese on any folder), the guide the CLI builds is started on it with the model's
own request, and the plan is printed: who chose it (``paths``, ``model``, ``flag``), its kind,
its targets, the size of its set of files, and the seconds the request took. One model
process, one short request per task; nothing else of the run.

    python -m bench.plan_probe --model local
    python -m bench.plan_probe --model local --acceptance WORKSPACE
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from bench.tasks import TASKS, build_workspace
from tinyharness.guide import PlanGuide
from tinyharness.models.factory import load_model
from tinyharness.tools.files import ReadState
from tinyharness.tools.notes import NotesFile

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


async def plan_of(model: object, workspace: Path, task: str, may_write: bool) -> tuple[str, float]:
    guide = PlanGuide(
        workspace,
        read_state=ReadState(),
        notes=NotesFile(workspace / "NOTES.md", root=workspace),
        may_write=may_write,
        rank=_rank,
    )
    start = time.perf_counter()
    await guide.start(task, model.complete)  # type: ignore[attr-defined]
    took = time.perf_counter() - start
    plan = guide.plan
    targets = ",".join(plan.targets) or "-"
    return f"{plan.source:5} {plan.kind or '-':7} {targets:40} set={len(guide.file_set.set)}", took


def _rank(root: Path, task: str, k: int) -> list[str]:
    from tinyharness.cli import _workspace_rank

    return _workspace_rank(root, task, k)


async def main_async(model_name: str, acceptance: Path | None, only: set[str]) -> None:
    model = load_model(model_name, context_window=4096)
    try:
        if acceptance is not None:
            for lang, task in ACCEPTANCE.items():
                line, took = await plan_of(model, acceptance, task, False)
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", default="local")
    parser.add_argument("--acceptance", type=Path, help="a workspace to plan the acceptance task on")
    parser.add_argument("--only", default="", help="comma list of tune task names")
    args = parser.parse_args(argv)
    asyncio.run(main_async(args.model, args.acceptance, set(filter(None, args.only.split(",")))))


if __name__ == "__main__":
    main()
