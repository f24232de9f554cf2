"""Edits and answers that find the value's line by structure (``guide.sites``), the same in
English, Chinese and French:

- an edit's old text is one of the Python file's binding lines holding what the task writes, a
  literal first: never the header of the class that holds the value (the fourth half's Chinese
  edit renamed ``class Signer:``) nor a ``def`` line whose defaults are on the next line;
- an edit that renames a definition to a name the task does not write is refused, the file
  unchanged; a rename the task writes runs;
- a question about a named Python file gets the lines holding the asked value with the request
  for its answer.

The model is scripted; each test asserts what the harness offers or does."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyharness.agent import Agent, AgentConfig
from tinyharness.guide import PlanGuide
from tinyharness.guide.plan import TERMS_KEY
from tinyharness.guide.sites import (
    assignment_lines,
    binding_lines,
    config_values,
    held_lines,
    quoted_spans,
    renamed_definitions,
    same_word,
    stated_assignment,
    stated_assignments,
    stated_release,
    stated_swap,
    unwritten_names,
    unwritten_values,
    value_sites,
    written_tokens,
)
from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.files import ReadState
from tinyharness.tools.notes import NotesFile
from tinyharness.tools.permissions import Permissions

SIGNER = '''\
"""Signing."""
import hmac


class SigningAlgorithm:
    def get_signature(self, key: bytes, value: bytes) -> bytes:
        return hmac.new(key, value).digest()


class Signer:
    """Signs values.

    The key derivation defaults to ``django-concat``.
    """

    #: The default is ``django-concat``.
    default_key_derivation: str = "django-concat"

    def __init__(
        self,
        secret_key: str,
        salt: str | None = "itsdangerous.Signer",
        key_derivation: str | None = None,
    ) -> None:
        if key_derivation is None:
            key_derivation = self.default_key_derivation
        self.key_derivation = key_derivation
        self.salt = salt

    def derive_key(self) -> str:
        if self.key_derivation == "django-concat":
            return "concat"
        return "hmac"
'''
ENCODING = """\
import struct


def want_bytes(
    s: str | bytes, encoding: str = "utf-8", errors: str = "strict"
) -> bytes:
    if isinstance(s, str):
        s = s.encode(encoding, errors)
    return s


_int64_struct = struct.Struct(">Q")
_int_to_bytes = _int64_struct.pack
"""
DEFAULT_LINE = '    default_key_derivation: str = "django-concat"'
DEFAULTS_LINE = '    s: str | bytes, encoding: str = "utf-8", errors: str = "strict"'

CHANGE_DEFAULT = {
    "en": "Change the default key derivation of Signer in signer.py from django-concat to hmac.",
    "zh": "把 signer.py 里 Signer 默认的密钥派生方式从 django-concat 改成 hmac。",
    "fr": "Dans signer.py, remplace la dérivation de clé par défaut de Signer, django-concat, par hmac.",
}
CHANGE_ERRORS = {
    "en": 'In encoding.py, make want_bytes default to errors="replace" instead of "strict".',
    "zh": '把 encoding.py 里 want_bytes 的 errors 默认值从 "strict" 改成 "replace"。',
    "fr": 'Dans encoding.py, mets la valeur par défaut errors de want_bytes à "replace" au lieu de "strict".',
}
SALT = {
    "en": "What is the default salt in signer.py?",
    "zh": "signer.py 里默认的 salt 是什么？",
    "fr": "Quel est le salt par défaut dans signer.py ?",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/signer.py").write_text(SIGNER, encoding="utf-8")
    (tmp_path / "pkg/encoding.py").write_text(ENCODING, encoding="utf-8")
    return tmp_path


def _reply(text: str) -> dict[str, Any]:
    return {"stop_reason": "end_turn", "content": [{"type": "text", "text": text}]}


def _use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
    }


def _guide(root: Path, may_write: bool) -> tuple[PlanGuide, ReadState]:
    state = ReadState()
    guide = PlanGuide(
        root,
        read_state=state,
        notes=NotesFile(root / "NOTES.md", root=root),
        run_notes=NotesFile(root / ".tinyharness" / "notes" / "run.md", root=root),
        may_write=may_write,
    )
    return guide, state


def _agent(root: Path, guide: PlanGuide, state: ReadState, model: ScriptedModel, write: bool) -> Agent:
    registry = builtin_tools(
        root,
        notes=NotesFile(root / "NOTES.md", root=root),
        permissions=Permissions(allow_write=write),
        read_state=state,
    )
    return Agent(model, registry, AgentConfig(max_iterations=6), guide=guide)


def _started(
    root: Path, task: str, kind: str, may_write: bool = True, terms: Sequence[str] | None = None
) -> PlanGuide:
    """A guide started on ``task``, its kind request answered ``kind`` (and ``terms`` as the
    words in code, when given: the grammar asks for them; a reply without them is a model's
    without a grammar)."""
    guide, _ = _guide(root, may_write)
    reply: dict[str, object] = {"kind": kind}
    if terms is not None:
        reply[TERMS_KEY] = list(terms)
    model = ScriptedModel({"responses": [_reply(json.dumps(reply))]})
    asyncio.run(guide.start(task, model.complete))
    return guide


@pytest.mark.parametrize("language", sorted(CHANGE_DEFAULT))
def test_an_edit_of_a_value_in_a_named_class_is_offered_the_line_holding_it(
    project: Path, language: str
) -> None:
    """id-zh-edit: before, the line defining the name the task writes (``class Signer:``) was the
    one choice, and the 0.5B replaced it with ``class SigningAlgorithm:``."""
    guide = _started(project, CHANGE_DEFAULT[language], "change a file")
    assert guide.plan.kind == "edit"
    choices = guide.choices("edit_file", [])
    assert list(choices["old"]) == [DEFAULT_LINE]


@pytest.mark.parametrize("language", sorted(CHANGE_ERRORS))
def test_a_keyword_default_on_its_own_line_is_the_edits_choice(project: Path, language: str) -> None:
    """id-edit-errors: before, ``def want_bytes(`` was the one choice (the defaults are on the
    next line); the 0.5B's every edit of it broke the file and the run stopped stuck."""
    guide = _started(project, CHANGE_ERRORS[language], "change a file")
    assert list(guide.choices("edit_file", [])["old"]) == [DEFAULTS_LINE]


@pytest.mark.parametrize("language", sorted(CHANGE_DEFAULT))
def test_an_edit_renaming_a_class_the_task_did_not_ask_to_rename_is_refused(
    project: Path, language: str
) -> None:
    guide = _started(project, CHANGE_DEFAULT[language], "change a file")
    call = ToolUseBlock(
        "e1", "edit_file", {"path": "pkg/signer.py", "old": "class Signer:", "new": "class SigningAlgorithm:"}
    )
    result = guide.review(call)
    assert isinstance(result, ToolResultBlock) and result.refused
    assert "SigningAlgorithm" in result.content and "unchanged" in result.content
    value = ToolUseBlock(
        "e2",
        "edit_file",
        {"path": "pkg/signer.py", "old": DEFAULT_LINE, "new": DEFAULT_LINE.replace("django-concat", "hmac")},
    )
    assert guide.review(value) is value


def test_a_rename_the_task_writes_runs(project: Path) -> None:
    guide = _started(
        project, "Rename the constant _int64_struct in encoding.py to _UINT64_STRUCT.", "change a file"
    )
    call = ToolUseBlock(
        "e1",
        "edit_file",
        {
            "path": "pkg/encoding.py",
            "old": '_int64_struct = struct.Struct(">Q")',
            "new": '_UINT64_STRUCT = struct.Struct(">Q")',
        },
    )
    assert guide.review(call) is call


def test_a_refused_rename_leaves_the_file_as_it_was(project: Path) -> None:
    guide, state = _guide(project, may_write=True)
    script = [
        _reply(json.dumps({"kind": "change a file"})),
        _use("r1", "read_file", {"path": "pkg/signer.py"}),
        _use(
            "e1",
            "edit_file",
            {"path": "pkg/signer.py", "old": "class Signer:", "new": "class SigningAlgorithm:"},
        ),
        _reply("I could not change it."),
    ]
    model = ScriptedModel({"responses": script})
    _agent(project, guide, state, model, write=True).run(CHANGE_DEFAULT["zh"])
    assert (project / "pkg/signer.py").read_text(encoding="utf-8") == SIGNER


@pytest.mark.parametrize("language", sorted(SALT))
def test_a_question_about_a_named_file_gets_the_lines_holding_the_value(project: Path, language: str) -> None:
    """id-signer-salt: the answer request showed only the read page, and the 0.5B answered a class
    name it had seen ("NoneAlgorithm"). Now the request holds the binding lines of the asked value."""
    guide, state = _guide(project, may_write=False)
    script = [
        _reply(json.dumps({"kind": "answer in words"})),
        _use("r1", "read_file", {"path": "pkg/signer.py"}),
        _reply("itsdangerous.Signer"),
    ]
    model = ScriptedModel({"responses": script})
    _agent(project, guide, state, model, write=False).run(SALT[language])
    assert model.requests[2].final_only
    ask = str(getattr(model.requests[2].messages[-1].content[-1], "text", ""))
    assert ask.startswith("[Read: pkg/signer.py]")
    assert 'salt: str | None = "itsdangerous.Signer",' in ask and "class Signer:" not in ask


# --- invariants ------------------------------------------------------------------------------

_LINES = st.lists(st.sampled_from([*SIGNER.splitlines(), *ENCODING.splitlines()]), max_size=30, unique=True)


@given(_LINES, st.text(max_size=60))
def test_value_sites_are_offered_lines_that_bind(lines: list[str], task: str) -> None:
    sites = value_sites(SIGNER, task, lines)
    bound = {SIGNER.splitlines()[n - 1] for n in binding_lines(SIGNER)}
    assert set(sites) <= set(lines) & bound


@given(st.sampled_from([*SIGNER.splitlines(), *ENCODING.splitlines()]), st.text(max_size=60))
def test_an_edit_keeping_its_line_renames_nothing(line: str, task: str) -> None:
    assert renamed_definitions(line, line, task) == []


@pytest.mark.parametrize("language", sorted(CHANGE_ERRORS))
def test_an_edit_that_would_break_the_file_is_read_as_its_one_changed_literal(
    project: Path, language: str
) -> None:
    """id-edit-errors after the right line was offered: the 0.5B wrote read_file's line number
    into the new text and dropped the annotation (``errors: "replace"``), five times, and the run
    stopped stuck. The call is now the old line with its one changed literal changed."""
    guide = _started(project, CHANGE_ERRORS[language], "change a file")
    broken = '    12    s: str | bytes, encoding: str = "utf-8", errors: "replace"'
    call = ToolUseBlock("e1", "edit_file", {"path": "pkg/encoding.py", "old": DEFAULTS_LINE, "new": broken})
    fixed = guide.review(call)
    assert isinstance(fixed, ToolUseBlock)
    assert fixed.input["new"] == DEFAULTS_LINE.replace('"strict"', '"replace"')


BUMP_META = {
    "en": "In pkg/meta.py, bump the version to 1.0.2.",
    "zh": "把 pkg/meta.py 里的版本号改成 1.0.2。",
    "es": "En pkg/meta.py, sube la versión a 1.0.2.",
}


# What setuptools_scm writes: annotations alone first, then the one line that sets the values.
SCM_VERSION = """\
# file generated by setuptools_scm
version: str
__version__: str

__version__ = version = '1.0.1'
__version_tuple__ = version_tuple = (1, 0, 1)
"""


def test_the_words_in_code_find_the_version_line_of_a_file_named_version(project: Path) -> None:
    """is-edit-version in Chinese: "version", the model's word in code, is also the word of
    ``version.py``'s own name, which kept it from naming any line; every line was offered and
    the 0.5B edited ``TYPE_CHECKING = False`` until stuck. The English task writes the name."""
    (project / "pkg/version.py").write_text(SCM_VERSION, encoding="utf-8")
    for task in ("把 pkg/version.py 里的版本号改成 1.0.2。", "In pkg/version.py, bump the version to 1.0.2."):
        guide = _started(project, task, "change a file", terms=["change", "version", "number"])
        assert list(guide.choices("edit_file", [])["old"]) == ["__version__ = version = '1.0.1'"], task


@pytest.mark.parametrize("language", sorted(BUMP_META))
def test_an_annotation_alone_is_no_line_an_edit_is_offered(project: Path, language: str) -> None:
    """is-edit-version: offered ``version: str``, the 0.5B rewrote it into ``version = '0.7.3'``
    and the assignment below still set 0.7.2 (a wrong change in the user's file). A line that
    only annotates binds no value: the assignment is the edit's one choice."""
    assert binding_lines(SCM_VERSION) == {5, 6}
    (project / "pkg/meta.py").write_text(SCM_VERSION, encoding="utf-8")
    guide = _started(project, BUMP_META[language], "change a file", terms=["version"])
    assert list(guide.choices("edit_file", [])["old"]) == ["__version__ = version = '1.0.1'"]
    # Offered that line, the 0.5B wrote ``version = '0.7.3'``: ``__version__`` left out of the
    # file. Read as the line with its one literal changed, every name kept.
    old = "__version__ = version = '1.0.1'"
    call = ToolUseBlock("e1", "edit_file", {"path": "pkg/meta.py", "old": old, "new": "version = '1.0.2'"})
    fixed = guide.review(call)
    assert isinstance(fixed, ToolUseBlock) and fixed.input["new"] == "__version__ = version = '1.0.2'"
    dropped = ToolUseBlock("e2", "edit_file", {"path": "pkg/meta.py", "old": old, "new": "version = v"})
    stated = guide.review(dropped)  # no literal to read it as: the one release the task writes
    assert isinstance(stated, ToolUseBlock) and stated.input["new"] == "__version__ = version = '1.0.2'"


@pytest.mark.parametrize("language", sorted(BUMP_META))
def test_an_edit_whose_new_text_is_only_the_value_changes_the_lines_one_literal(
    project: Path, language: str
) -> None:
    """ct-edit-version: offered ``__version__ = "8.0.2"``, the 0.5B wrote ``new="8.0.3"`` five
    times (issue 28's own example), each breaking the file, and the run stopped stuck. A new
    text that is only a value is the old line with its one literal changed, quoted as it was."""
    (project / "pkg/meta.py").write_text('__version__ = "1.0.1"\n', encoding="utf-8")
    guide = _started(project, BUMP_META[language], "change a file", terms=["version"])
    call = ToolUseBlock(
        "e1", "edit_file", {"path": "pkg/meta.py", "old": '__version__ = "1.0.1"', "new": "1.0.2"}
    )
    fixed = guide.review(call)
    assert isinstance(fixed, ToolUseBlock) and fixed.input["new"] == '__version__ = "1.0.2"'
    named = ToolUseBlock(
        "e2", "edit_file", {"path": "pkg/meta.py", "old": '__version__ = "1.0.1"', "new": "version"}
    )
    stated = guide.review(named)  # a name is no value: the one release the task writes is
    assert isinstance(stated, ToolUseBlock) and stated.input["new"] == '__version__ = "1.0.2"'


def test_an_edit_that_parses_is_left_as_the_model_wrote_it(project: Path) -> None:
    guide = _started(project, CHANGE_ERRORS["en"], "change a file")
    new = '    s: str | bytes, encoding: str = "utf-8", errors="replace"'
    call = ToolUseBlock("e1", "edit_file", {"path": "pkg/encoding.py", "old": DEFAULTS_LINE, "new": new})
    assert guide.review(call) is call


RENAME_STRUCT = {
    "en": "Rename the constant _int64_struct in pkg/structs.py to _UINT64_STRUCT.",
    "zh": "把 pkg/structs.py 里的常量 _int64_struct 改名为 _UINT64_STRUCT。",
}


@pytest.mark.parametrize("language", sorted(RENAME_STRUCT))
def test_an_edit_putting_in_a_value_the_task_does_not_write_is_refused(project: Path, language: str) -> None:
    """id-edit-rename: the 0.5B changed ``struct.Struct(">Q")`` to ``struct.Struct(00)`` and the
    run ended "Changed". A value no task wrote is a guess: refused, the file unchanged; the
    values the task writes (and an unchanged value) still pass."""
    (project / "pkg/structs.py").write_text(
        'import struct\n_int64_struct = struct.Struct(">Q")\n', encoding="utf-8"
    )
    guide = _started(project, RENAME_STRUCT[language], "change a file")
    old = '_int64_struct = struct.Struct(">Q")'
    guessed = ToolUseBlock(
        "e1", "edit_file", {"path": "pkg/structs.py", "old": old, "new": "_int64_struct = struct.Struct(00)"}
    )
    refused = guide.review(guessed)
    assert isinstance(refused, ToolResultBlock) and refused.refused and "00" in refused.content
    renamed = ToolUseBlock(
        "e2",
        "edit_file",
        {"path": "pkg/structs.py", "old": old, "new": '_UINT64_STRUCT = struct.Struct(">Q")'},
    )
    assert guide.review(renamed) is renamed


KEEP_NAME = {
    "en": 'In pyproject.toml, raise requires-python to ">=3.9".',
    "de": 'Setz in pyproject.toml requires-python auf ">=3.9".',
}


@pytest.mark.parametrize("language", sorted(KEEP_NAME))
def test_a_config_edit_putting_in_a_value_the_task_does_not_write_is_refused(
    project: Path, language: str
) -> None:
    """The 0.5B, asked to make tabulate keep whitespace and sent to pyproject.toml, changed
    ``name = "tabulate"`` to ``name = "tabulate2"``, and the run ended "Changed". A TOML/INI
    value no task wrote is refused as a Python literal is; the value the task writes passes."""
    (project / "pyproject.toml").write_text(
        '[project]\nname = "pkg"\nrequires-python = ">=3.8"\n', encoding="utf-8"
    )
    guide = _started(project, KEEP_NAME[language], "change a file")
    renamed = ToolUseBlock(
        "e1", "edit_file", {"path": "pyproject.toml", "old": 'name = "pkg"', "new": 'name = "pkg2"'}
    )
    refused = guide.review(renamed)
    assert isinstance(refused, ToolResultBlock) and refused.refused and "pkg2" in refused.content
    asked = ToolUseBlock(
        "e2",
        "edit_file",
        {"path": "pyproject.toml", "old": 'requires-python = ">=3.8"', "new": 'requires-python = ">=3.9"'},
    )
    assert guide.review(asked) is asked


def test_config_values_are_the_quoted_and_the_bare_values_after_the_key() -> None:
    assert config_values('name = "tabulate"') == {"tabulate"}
    assert config_values("max-line-length = 99") == {"99"}
    assert config_values('version = {attr = "pkg.__version__"}') == {"attr", "pkg.__version__"}
    assert (
        unwritten_values("version = 0.12.1", "version = 0.12.2", "Bump the version to 0.12.2.", python=False)
        == []
    )


@pytest.mark.parametrize(
    ("task", "tokens"),
    [
        ('Setz den Platzhalter für fehlende Werte (_DEFAULT_MISSINGVAL) auf "-".', {"_DEFAULT_MISSINGVAL"}),
        ("mets la taille de page à 40", {"40", "page"}),
        ("在keys.py里有几个函数？", {"keys.py"}),
    ],
)
def test_a_token_is_never_a_piece_of_a_word_of_a_cased_alphabet(task: str, tokens: set[str]) -> None:
    """tb-de-edit: "für" gave the tokens "f" and "r", and the line holding the literal "r" was
    the edit's one choice. An ASCII run touching a non-ASCII letter of a cased alphabet is part
    of that word; one touching CJK (uncased) is a token."""
    found = written_tokens(task)
    assert tokens <= found and not {"f", "r", "a"} & found


@given(
    st.from_regex(r"[a-z]{1,8}", fullmatch=True),
    st.sampled_from("üéàñßøçœ"),
    st.from_regex(r"[a-z]{0,8}", fullmatch=True),
)
def test_no_token_touches_a_cased_non_ascii_letter(left: str, letter: str, right: str) -> None:
    assert written_tokens(f"x {left}{letter}{right} y") == {"x", "y"}


@given(st.sampled_from(ENCODING.splitlines()), st.text(max_size=40))
def test_a_repair_keeps_all_of_the_old_line_but_one_literal_or_drops_a_number_column(
    old: str, new: str
) -> None:
    from tinyharness.guide.sites import repairs

    for line in repairs(old, new):
        assert line.startswith(old[: len(old) - len(old.lstrip())])


PYPROJECT = "\n".join(
    [
        "[project]",
        'name = "pkg"',
        'version = "2.2.0"',
        'requires-python = ">=3.8"',
        "",
        "[tool.mypy]",
        'python_version = "3.8"',
        "",
    ]
)
PYTHONS = {
    "en": "Which Python versions does pyproject.toml allow?",
    "zh": "pyproject.toml 里支持哪些 Python 版本？",
    "fr": "Quelles versions de Python pyproject.toml accepte-t-il ?",
}


@pytest.mark.parametrize("language", sorted(PYTHONS))
def test_a_question_about_a_config_file_gets_its_key_lines(tmp_path: Path, language: str) -> None:
    """id-python: the 0.5B answered the project's version (``version = "2.2.0"``) for the Python
    versions; the request for the answer now holds the key lines whose words the task writes."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    guide, state = _guide(tmp_path, may_write=False)
    script = [
        _reply(json.dumps({"kind": "answer in words"})),
        _use("r1", "read_file", {"path": "pyproject.toml"}),
        _reply(">=3.8"),
    ]
    model = ScriptedModel({"responses": script})
    _agent(tmp_path, guide, state, model, write=False).run(PYTHONS[language])
    ask = str(getattr(model.requests[2].messages[-1].content[-1], "text", ""))
    assert 'line 4 `requires-python = ">=3.8"`' in ask and 'version = "2.2.0"' not in ask


def test_a_question_naming_a_symbol_gets_only_lines_of_its_body() -> None:
    """id-get-timestamp: shown ``return_timestamp`` lines of other functions ("return" is a
    word of the task), the 0.5B answered "get_timestamp is defined in timed.py."."""
    from tinyharness.guide.focus import held_line

    text = (
        "class Signer:\n    def get_timestamp(self) -> int:\n        return 1\n\n"
        "    def unsign(self, return_timestamp: bool = False):\n        pass\n"
    )
    assert held_line("timed.py", text, "What does get_timestamp return?", ["timed.py"], "get_timestamp") == ""
    assert "return_timestamp" in held_line("timed.py", text, "What does get_timestamp return?", ["timed.py"])


SETTINGS = 'DEFAULT_CURRENCY = "EUR"\nPAGE_SIZE = 25\n'
PAGE = {  # no name of settings.py has only words these write (PAGE_SIZE's "size" is not)
    "en": "In pkg/settings.py, set the number of items per page to 40.",
    "zh": "把 pkg/settings.py 里的每页条数改成 40。",
    "fr": "Dans pkg/settings.py, mets le nombre d'articles par page à 40.",
}
PAGE_SIZE_WORDS = {  # ... and these name PAGE_SIZE by its words, or by the plan's words in code
    "en": ("In pkg/settings.py, set the page size to 40.", []),
    "zh": ("把 pkg/settings.py 里的每页条数改成 40。", ["page", "size", "settings"]),
    "fr": ("Dans pkg/settings.py, mets la taille de page à 40.", ["page", "size"]),
}


@pytest.mark.parametrize("language", sorted(PAGE))
def test_an_edit_no_line_ties_to_is_refused_not_guessed(project: Path, language: str) -> None:
    """shop-edit-words: no line of settings.py holds a value or a name the task writes, and the
    0.5B, offered every line, changed ``DEFAULT_CURRENCY``. The edit is refused with the reason,
    the file unchanged, in every language."""
    (project / "pkg/settings.py").write_text(SETTINGS, encoding="utf-8")
    guide = _started(project, PAGE[language], "change a file")
    call = ToolUseBlock(
        "e1",
        "edit_file",
        {"path": "pkg/settings.py", "old": 'DEFAULT_CURRENCY = "EUR"', "new": 'DEFAULT_CURRENCY = "USD"'},
    )
    result = guide.review(call)
    assert isinstance(result, ToolResultBlock) and result.refused and "not known" in result.content
    tied = _started(project, "In pkg/settings.py, set PAGE_SIZE to 40.", "change a file")
    edit = ToolUseBlock(
        "e2", "edit_file", {"path": "pkg/settings.py", "old": "PAGE_SIZE = 25", "new": "PAGE_SIZE = 40"}
    )
    assert tied.review(edit) is edit


@pytest.mark.parametrize("language", sorted(PAGE_SIZE_WORDS))
def test_an_edit_naming_a_value_by_its_words_is_offered_its_line_in_every_language(
    project: Path, language: str
) -> None:
    """md-edit-version: "Change this project's version to 3.7.1." writes no name of
    ``__meta__.py``, and the 0.5B, offered every line, edited an import five times. A name
    whose every word the task writes (``PAGE_SIZE`` for "page size"), or the plan's words in
    code write (a task in Chinese or French), is the edit's choice, and the file is tied."""
    (project / "pkg/settings.py").write_text(SETTINGS, encoding="utf-8")
    task, terms = PAGE_SIZE_WORDS[language]
    guide = _started(project, task, "change a file", terms=terms)
    assert list(guide.choices("edit_file", [])["old"]) == ["PAGE_SIZE = 25"]
    edit = ToolUseBlock(
        "e1", "edit_file", {"path": "pkg/settings.py", "old": "PAGE_SIZE = 25", "new": "PAGE_SIZE = 40"}
    )
    assert guide.review(edit) is edit


TOX = """[testenv]
deps = -r requirements/tests.txt
commands = pytest -v {posargs}

[testenv:docs]
deps = -r requirements/docs.txt
commands = sphinx-build docs docs/_build
"""


@pytest.mark.parametrize(
    "task", ["What command does tox run for the tests?", "Quelle commande tox lance-t-il pour les tests ?"]
)
def test_a_word_written_with_another_ending_finds_its_key_when_no_word_matches_whole(task: str) -> None:
    """tox.ini's key is ``commands``; the task writes "command" (English) or "commande"
    (French): no line holds a whole word of the task, so the words match by their stem."""
    held = held_lines(TOX, task, skip=["tox.ini"], python=False)
    assert held and held[0] == (3, "commands = pytest -v {posargs}")
    assert all(line.startswith("commands") for _, line in held)


FLAKE8 = "[tox]\nenvlist = py37\n\n[flake8]\nmax-line-length = 99\n\n[testenv]\ncommands = pytest\n"


@pytest.mark.parametrize(
    "task",
    ["Welche maximale Zeilenlänge erlaubt flake8 laut tox.ini?", "tox.ini 里 flake8 允许的最大行长是多少？"],
)
def test_an_ini_keys_section_is_part_of_its_name_for_a_question(task: str) -> None:
    """tb-de-flake8: ``max-line-length`` holds no word of the task; its section, ``[flake8]``,
    does. For a question the key lines of that section are held; for an edit's choices a section
    makes no key a whole match."""
    assert held_lines(FLAKE8, task, skip=["tox.ini"], python=False) == [(5, "max-line-length = 99")]
    assert held_lines(FLAKE8, task, skip=["tox.ini"], python=False, whole=True) == []


def test_a_name_bound_by_an_assignment_holds_its_own_lines() -> None:
    """tb-es-widechars: a task naming ``WIDE_CHARS_MODE`` (an assignment, no body) was shown no
    line, and the 0.5B answered where it is defined."""
    text = "import os\n\nWIDE = 1\nWIDE_CHARS_MODE = os.name == 'nt'\n\n\ndef f():\n    WIDE_CHARS_MODE = 2\n"
    assert assignment_lines(text, "WIDE_CHARS_MODE") == [
        (4, "WIDE_CHARS_MODE = os.name == 'nt'"),
        (8, "WIDE_CHARS_MODE = 2"),
    ]
    assert assignment_lines(text, "MISSING") == []


def test_whole_words_are_preferred_to_stems() -> None:
    """A line a word of the task matches whole keeps the stem matches of other lines out."""
    text = 'version = "2.2.0"\nversioned = 3\nrequires-python = ">=3.8"\n'
    assert held_lines(text, "Which Python versions?", python=False) == [(3, 'requires-python = ">=3.8"')]


INIT = (
    '"""Caching collections."""\n\nimport collections\n\n__version__ = "8.0.2"\n\n\n'
    "class Cache:\n    maxsize = 128\n"
)


@pytest.mark.parametrize(
    "task", ["这个库现在是什么版本？", "tox 运行测试时用什么命令？", "¿Cuál es la versión de esta librería?"]
)
def test_the_models_words_in_code_hold_lines_only_when_the_tasks_own_hold_none(task: str) -> None:
    """A task in Chinese writes no word of ``__version__`` or ``commands``: the words the plan
    request's reply ends with (``english_words_in_code``) find them; without them, nothing."""
    text, terms, line, python = (
        (TOX, ("tox", "run", "tests", "command"), (3, "commands = pytest -v {posargs}"), False)
        if "tox" in task
        else (INIT, ("library", "version"), (5, '__version__ = "8.0.2"'), True)
    )
    skip = ["tox.ini"] if "tox" in task else ["src/cachetools/__init__.py"]
    if "versión" not in task:  # (the Spanish word matches ``__version__`` by its stem already)
        assert held_lines(text, task, skip=skip, python=python) == []
    held = held_lines(text, task, skip=skip, python=python, terms=terms)
    assert held and held[0] == line


def test_the_models_words_never_displace_lines_the_tasks_own_words_hold() -> None:
    """The terms are a fallback: a task whose words hold a line keeps that line."""
    held = held_lines(INIT, "What is the default maxsize?", skip=["cache.py"], terms=("version",))
    assert held == [(9, "maxsize = 128")]


@given(st.text(alphabet="abcdefghij", min_size=1, max_size=12), st.text(alphabet="abcdefghij", max_size=12))
def test_same_word_is_symmetric_and_needs_a_stem(a: str, b: str) -> None:
    assert same_word(a, b) == same_word(b, a)
    assert same_word(a, a)
    if a != b and same_word(a, b):
        stem = 0
        while stem < min(len(a), len(b)) and a[stem] == b[stem]:
            stem += 1
        assert stem >= 5 and max(len(a), len(b)) - stem <= 3


RAISE_PYTHON = {
    "en": 'In pyproject.toml, raise requires-python to ">=3.9".',
    "zh": '把 pyproject.toml 里的 requires-python 改成 ">=3.9"。',
    "fr": 'Dans pyproject.toml, passe requires-python à ">=3.9".',
}


@pytest.mark.parametrize("language", sorted(RAISE_PYTHON))
def test_an_edit_of_a_config_file_is_offered_the_key_line_the_task_writes(
    tmp_path: Path, language: str
) -> None:
    """ps-edit-python: offered every line of pyproject.toml, the 0.5B changed ``build-backend``;
    the choice is now the key line holding what the task writes, in every language."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    guide = _started(tmp_path, RAISE_PYTHON[language], "change a file")
    assert guide.plan.kind == "edit"
    assert list(guide.choices("edit_file", [])["old"]) == ['requires-python = ">=3.8"']


def test_an_edit_of_a_config_file_no_key_ties_to_is_refused(tmp_path: Path) -> None:
    """ps-edit-version: the 0.5B changed setup.cfg's ``author`` line for a version bump; a
    config file where no key line holds a key or a value the task writes is not guessed at."""
    (tmp_path / "setup.cfg").write_text("[metadata]\nauthor = Caleb\nlicense = MPL\n", encoding="utf-8")
    for task in ("Bump setup.cfg to 0.12.2.", "把 setup.cfg 的版本号升到 0.12.2。"):
        guide = _started(tmp_path, task, "change a file")
        call = ToolUseBlock(
            "e1", "edit_file", {"path": "setup.cfg", "old": "author = Caleb", "new": "author = Caleb 0.12.2"}
        )
        result = guide.review(call)
        assert isinstance(result, ToolResultBlock) and result.refused and "not known" in result.content


MARKS = "_BYTES_ENCODING = 'latin1'\n_DIR_MARK = 'ps_d'\n\n\ndef mark() -> str:\n    return _DIR_MARK\n"
CHANGE_MARK = {
    "en": "In pkg/marks.py, change _DIR_MARK from 'ps_d' to 'ps_dir'.",
    "zh": "把 pkg/marks.py 里的 _DIR_MARK 从 'ps_d' 改成 'ps_dir'，别的不要动。",
}


@pytest.mark.parametrize("language", sorted(CHANGE_MARK))
def test_an_unasked_rename_that_changes_one_literal_is_read_as_that_literal(
    project: Path, language: str
) -> None:
    """ps-zh-edit: offered ``_DIR_MARK = 'ps_d'``, the 0.5B wrote ``DIR_MARK = 'ps_dir'`` five
    times, each refused as a rename, and stopped stuck. The edit is read as its one changed
    literal, the name kept."""
    (project / "pkg/marks.py").write_text(MARKS, encoding="utf-8")
    guide = _started(project, CHANGE_MARK[language], "change a file")
    args = {"path": "pkg/marks.py", "old": "_DIR_MARK = 'ps_d'", "new": "DIR_MARK = 'ps_dir'"}
    reviewed = guide.review(ToolUseBlock("e1", "edit_file", args))
    assert isinstance(reviewed, ToolUseBlock) and reviewed.input["new"] == "_DIR_MARK = 'ps_dir'"


def test_an_unasked_rename_with_no_one_literal_is_still_refused(project: Path) -> None:
    """With no change of values stated (the task quotes none), a rename with no one changed
    literal stays refused; with one stated, the edit is read as the stated change."""
    (project / "pkg/marks.py").write_text(MARKS, encoding="utf-8")
    unstated = _started(project, "In pkg/marks.py, make _DIR_MARK longer.", "change a file")
    stated = _started(project, CHANGE_MARK["en"], "change a file")
    for new in ("DIR_MARK = 'ps_d'", "DIR_MARK = 'a' + 'b'"):  # no literal changed; two added
        args = {"path": "pkg/marks.py", "old": "_DIR_MARK = 'ps_d'", "new": new}
        reviewed = unstated.review(ToolUseBlock("e1", "edit_file", args))
        assert isinstance(reviewed, ToolResultBlock) and reviewed.refused
        read = stated.review(ToolUseBlock("e1", "edit_file", args))
        assert isinstance(read, ToolUseBlock) and read.input["new"] == "_DIR_MARK = 'ps_dir'"


@given(st.sampled_from(ENCODING.splitlines()), st.integers(0, 10**6), st.sampled_from(["en", "zh"]))
def test_a_value_the_task_writes_is_never_unwritten(old: str, value: int, language: str) -> None:
    task = {"en": f"Set it to {value}.", "zh": f"把它改成 {value}。"}[language]
    assert unwritten_values(old, old, task) == []
    assert unwritten_values("LIMIT = 1", f"LIMIT = {value}", task) == []
    assert unwritten_values("LIMIT = 1", f"LIMIT = {value + 7}0", task) == [f"{value + 7}0"]


META = '''"""Metadata."""

# __version_info__ format: (major, minor, patch, dev/alpha/beta/rc/final, #)
__version_info__ = (3, 7, 0, 'final', 0)
SIZES = (8, 16, 32)


def _get_version(version_info):
    return '.'.join(map(str, version_info[:3]))


__version__ = _get_version(__version_info__)
'''


@pytest.mark.parametrize(
    "task",
    [
        "Change this project's version to 3.7.1.",
        "把这个项目的版本改成 3.7.1。",
        "Passe la version du projet à 3.8.0.",
        "Release 4.0.0 please",
    ],
)
def test_a_release_number_is_changed_where_the_file_holds_one_however_it_is_spelled(task: str) -> None:
    """A version kept as numbers (Python-Markdown's ``__version_info__``) is the line a task
    writing a release number points to, in any language, before other numbers (with no
    leading number in common, both); a release written as a string comes before one held as
    numbers; a task with no release number is pointed at no such line."""
    lines = [line for line in META.splitlines() if line.strip()]
    near = ["__version_info__ = (3, 7, 0, 'final', 0)"]
    assert value_sites(META, task, lines) == (near if "3." in task else [*near, "SIZES = (8, 16, 32)"])
    both = META + "__version_tuple__ = (3, 7, 0)\nversion = '3.7.0'\n"
    assert value_sites(both, task, [*lines, "__version_tuple__ = (3, 7, 0)", "version = '3.7.0'"]) == [
        "version = '3.7.0'"
    ]
    assert value_sites(META, "Set the page size to 40.", lines) == []


STRF = '''"""Formats."""

DATE_EXT_COMPLETE = "%Y-%m-%d"
TIME_EXT_COMPLETE = "%H:%M:%S"
D_DEFAULT = "P%P"
D_WEEK = "P%p"
D_ALT_EXT = "P" + DATE_EXT_COMPLETE + "T" + TIME_EXT_COMPLETE
'''
STRF_TASKS = {
    "en": 'In pkg/strf.py, make D_DEFAULT the weeks format "P%p" instead of "P%P".',
    "zh": '把 pkg/strf.py 里 D_DEFAULT 的值从 "P%P" 改成 "P%p"。',
}


@pytest.mark.parametrize("language", sorted(STRF_TASKS))
def test_a_literal_the_task_copies_with_its_signs_decides_and_one_letter_does_not(
    tmp_path: Path, language: str
) -> None:
    """is-edit-default: the task writes "P%P", whose tokens are "P" and "P"; the lines holding
    the literal "P" outranked D_DEFAULT's, and the 0.5B rewrote D_ALT_EXT's."""
    lines = [line for line in STRF.splitlines() if line.strip()]
    assert value_sites(STRF, STRF_TASKS[language], lines) == ['D_DEFAULT = "P%P"']


def test_a_line_whose_edit_was_refused_twice_is_offered_no_more(tmp_path: Path) -> None:
    """is-edit-default: the 0.5B sent the same refused edit five times and the run stopped
    stuck; after two refusals of one old line, the others are offered (and when none is left,
    the same again: never nothing)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "strf.py").write_text(STRF, encoding="utf-8")
    guide = _started(tmp_path, "In pkg/strf.py, change the formats.", "change a file")
    offered = list(guide.choices("edit_file", [])["old"])
    assert 'D_ALT_EXT = "P" + DATE_EXT_COMPLETE + "T" + TIME_EXT_COMPLETE' in offered

    def refused(n: int, old: str, new: str = "x") -> list[Message]:
        call = ToolUseBlock(f"e{n}", "edit_file", {"path": "pkg/strf.py", "old": old, "new": new})
        return [
            Message("assistant", (call,)),
            Message(
                "user", (ToolResultBlock(call.id, "Error: the call was refused: no", True, refused=True),)
            ),
        ]

    spent = offered[-1]
    once = [Message.user("task"), *refused(1, spent)]
    assert spent in guide.choices("edit_file", once)["old"]
    twice = [*once, *refused(2, spent, "y")]
    assert list(guide.choices("edit_file", twice)["old"]) == offered[:-1]
    every = [Message.user("task")] + [m for n, old in enumerate(offered * 2) for m in refused(n, old)]
    assert list(guide.choices("edit_file", every)["old"]) == offered


STATED = {
    "en": 'In pkg/strf.py, make D_DEFAULT the weeks format "P%p" instead of "P%P".',
    "zh": "把 pkg/strf.py 里 D_DEFAULT 的值从「P%P」改成「P%p」。",
    "fr": "Dans pkg/strf.py, remplace « P%P » par « P%p » pour D_DEFAULT.",
}


@pytest.mark.parametrize("language", sorted(STATED))
def test_an_edit_copying_its_old_line_is_read_as_the_change_the_task_states(
    tmp_path: Path, language: str
) -> None:
    """is-edit-default: offered the right line, the 0.5B copied it as the new one five times
    and the run stopped stuck. The task states both values (quoted, in any language's marks):
    the edit is read as that change."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "strf.py").write_text(STRF, encoding="utf-8")
    guide = _started(tmp_path, STATED[language], "change a file")
    same = {"path": "pkg/strf.py", "old": 'D_DEFAULT = "P%P"', "new": 'D_DEFAULT = "P%P"'}
    checked = guide.review(ToolUseBlock("e1", "edit_file", same))
    assert isinstance(checked, ToolUseBlock) and checked.input["new"] == 'D_DEFAULT = "P%p"'
    other = {**same, "new": 'D_DEFAULT = "P%p"'}  # a real change is left to the other checks
    assert guide.review(ToolUseBlock("e2", "edit_file", other)).input == other  # type: ignore[union-attr]


BIDI = '''"""Checks."""


def check_bidi(label: str, check_ltr: bool = False) -> bool:
    return check_ltr
'''
ASSIGNED = {
    "en": "In pkg/core.py, make check_bidi check left-to-right labels by default (check_ltr=True).",
    "zh": "把 pkg/core.py 里 check_bidi 的默认值改成 check_ltr=True。",
    "es": "En pkg/core.py, haz que check_bidi tenga check_ltr = True por defecto.",
}


@pytest.mark.parametrize("language", sorted(ASSIGNED))
def test_an_edit_of_a_line_binding_what_the_task_assigns_as_code_makes_that_binding(
    tmp_path: Path, language: str
) -> None:
    """in-edit-check-ltr: offered the right header, the 0.5B appended ``check_ltr = True`` below
    it (refused: the file would break) until the run stopped stuck. The task writes the binding
    as code (``check_ltr=True``, in any language's sentence): the edit is read as that binding;
    a new line already making it is left as it is."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "core.py").write_text(BIDI, encoding="utf-8")
    guide = _started(tmp_path, ASSIGNED[language], "change a file")
    old = "def check_bidi(label: str, check_ltr: bool = False) -> bool:"
    appended = {"path": "pkg/core.py", "old": old, "new": old + "\n    check_ltr = True"}
    checked = guide.review(ToolUseBlock("e1", "edit_file", appended))
    assert isinstance(checked, ToolUseBlock)
    assert checked.input["new"] == "def check_bidi(label: str, check_ltr: bool = True) -> bool:"
    made = {**appended, "new": "def check_bidi(label: str, check_ltr: bool = True) -> bool:  # LTR"}
    assert guide.review(ToolUseBlock("e2", "edit_file", made)).input == made  # type: ignore[union-attr]


def test_a_binding_the_task_writes_needs_a_literal_and_one_site() -> None:
    task = "set MAXY = 30 and mode=fast"
    assert stated_assignments(task) == {"MAXY": "30"}  # "fast" is no literal
    assert stated_assignment("MAXY = 24", task) == "MAXY = 30"
    assert stated_assignment("MAXY = 30", task) is None  # already so
    assert stated_assignment("f(MAXY=1, g(MAXY=2))", task) is None  # which one?
    assert stated_assignment("x = f(indent=2)", "用 indent=4 输出") == "x = f(indent=4)"
    assert stated_assignments("if a == b or c != d or e >= 3") == {}  # comparisons bind nothing


def test_the_stated_change_needs_one_value_of_each() -> None:
    assert (
        stated_swap("    PIPE_RIGHT = 2", "In tables.py, change PIPE_RIGHT from 2 to 4")
        == "    PIPE_RIGHT = 4"
    )
    assert stated_swap("x = 2", "change x from 2 to 4 and y from 3 to 5") is None  # which one?
    assert stated_swap("NAME = 'old'", "Change the name") is None  # no value written
    assert stated_swap("NAME = 'old'", "the project's 'old' becomes 'new'") == "NAME = 'new'"
    assert stated_swap("A = 'x' + 'y'", "from 'x' to 'z' and 'y' to 'w'") is None  # two held


@pytest.mark.parametrize(
    "task",
    [
        "把 pyproject.toml 里的 requires-python 改成 >=3.7，别的不要动。",
        "In pyproject.toml, set requires-python to >=3.7.",
    ],
)
def test_a_toml_value_written_in_quotes_stays_in_quotes(tmp_path: Path, task: str) -> None:
    """co-zh-edit: the 0.5B wrote ``requires-python = 3.7`` (a float) for a specifier string, and
    the run ended with a wrong change in the user's file. A quoted value turned bare is refused;
    the same value in quotes is not."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "pkg"\nrequires-python = ">=2.7, !=3.0.*"\n', encoding="utf-8"
    )
    guide = _started(tmp_path, task, "change a file")
    old = 'requires-python = ">=2.7, !=3.0.*"'
    bare = guide.review(
        ToolUseBlock(
            "e1", "edit_file", {"path": "pyproject.toml", "old": old, "new": "requires-python = 3.7"}
        )
    )
    assert isinstance(bare, ToolResultBlock) and bare.refused and "quoted string" in bare.content
    quoted = {"path": "pyproject.toml", "old": old, "new": 'requires-python = ">=3.7"'}
    assert guide.review(ToolUseBlock("e2", "edit_file", quoted)).input == quoted  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "task",
    [
        "Das Terminal hat 30 Zeilen: setz in pkg/demo.py MAXY von 24 auf 30.",
        "In pkg/demo.py, raise MAXY from 24 to 30.",
        "把 pkg/demo.py 里的 MAXY 从 24 改成 30。",
    ],
)
def test_an_edit_changing_other_values_than_the_stated_one_is_read_as_the_stated_change(
    tmp_path: Path, task: str
) -> None:
    """co-de-edit: the 0.5B turned ``MINY, MAXY = 1, 24`` into ``MINY, MAXY = 24, 30`` (MINY
    changed too: a wrong change in the user's file). The task states 24 -> 30: the edit is
    read as that; a new line making exactly that change in other words is kept."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "demo.py").write_text("MINY, MAXY = 1, 24\nPASSES = 1000\n", encoding="utf-8")
    guide = _started(tmp_path, task, "change a file")
    old = "MINY, MAXY = 1, 24"
    wrong = guide.review(
        ToolUseBlock("e1", "edit_file", {"path": "pkg/demo.py", "old": old, "new": "MINY, MAXY = 24, 30"})
    )
    assert isinstance(wrong, ToolUseBlock) and wrong.input["new"] == "MINY, MAXY = 1, 30"
    commented = {"path": "pkg/demo.py", "old": old, "new": "MINY, MAXY = 1, 30  # a taller terminal"}
    assert guide.review(ToolUseBlock("e2", "edit_file", commented)).input == commented  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("task", "spans"),
    [
        ("In pkg/marks.py, change the project's _DIR_MARK from 'ps_d' to 'ps_dir'.", ["ps_d", "ps_dir"]),
        ("把 pkg/marks.py 里的 _DIR_MARK 从'ps_d'改成'ps_dir'。", ["ps_d", "ps_dir"]),
        ("Dans l'outil pkg/marks.py, remplace 'ps_d' par 'ps_dir'.", ["ps_d", "ps_dir"]),
        ("У файлі м'ясо.py заміни 'ps_d' на 'ps_dir'.", ["ps_d", "ps_dir"]),
        ("Change «ps_d» to “ps_dir”, don't touch `x`.", ["ps_d", "ps_dir", "x"]),
    ],
)
def test_quoted_spans_read_marks_not_the_words_around_them(task: str, spans: list[str]) -> None:
    """An apostrophe inside a word of any cased alphabet opens no span (English "project's",
    French "l'outil", Ukrainian "м'ясо": the check once knew only ASCII letters); a quote
    touching CJK does."""
    assert sorted(quoted_spans(task)) == spans
    assert stated_swap("_DIR_MARK = 'ps_d'", task) == ("_DIR_MARK = 'ps_dir'" if "x" not in spans else None)


WRAPPER = '''class AnsiToWin32(object):
    """Wraps a stream."""

    def __init__(self, wrapped, convert=None, strip=None, autoreset=False):
        self.wrapped = wrapped
        self.autoreset = autoreset
'''


@pytest.mark.parametrize(
    "task",
    [
        "En colorama/ansitowin32.py, haz que AnsiToWin32 tenga autoreset=True por defecto.",
        "In colorama/ansitowin32.py, make AnsiToWin32 default to autoreset=True.",
        "把 colorama/ansitowin32.py 里 AnsiToWin32 的默认值改成 autoreset=True。",
    ],
)
def test_the_line_binding_what_the_task_assigns_as_code_is_the_one_offered(task: str) -> None:
    """co-es-edit: offered the class header and ``__init__``'s (tied on the class's name), the
    0.5B edited the header five times; the line binding ``autoreset`` is offered alone. With
    no binding written as code, the class's name decides as before."""
    lines = [line for line in WRAPPER.splitlines() if line.strip()]
    assert value_sites(WRAPPER, task, lines) == [
        "    def __init__(self, wrapped, convert=None, strip=None, autoreset=False):"
    ]
    assert value_sites(WRAPPER, "Make AnsiToWin32 reset by default.", lines) == ["class AnsiToWin32(object):"]


@pytest.mark.parametrize(
    "task",
    [
        "Bump the version to 1.0.2.",
        "把版本号升到 1.0.2。",
        "Passe la version à 1.0.2.",
    ],
)
def test_an_edit_of_the_version_line_makes_the_one_release_the_task_writes(tmp_path: Path, task: str) -> None:
    """jm-edit-version: offered ``__version__ = '1.0.1'``, the 0.5B wrote the read's header
    ("jmespath/__init__.py (lines 1-12 of 12)") as the new line five times, refused, and the run
    stopped stuck. The task writes one release of as many parts (the same major or the next):
    the edit is read as that change; a new line that makes it is left as it is."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("__version__ = '1.0.1'\n", encoding="utf-8")
    guide = _started(tmp_path, task, "change a file")
    release = "1.0.2"
    header = {
        "path": "pkg/__init__.py",
        "old": "__version__ = '1.0.1'",
        "new": "pkg/__init__.py (lines 1-1 of 1)",
    }
    checked = guide.review(ToolUseBlock("e1", "edit_file", header))
    assert isinstance(checked, ToolUseBlock) and checked.input["new"] == f"__version__ = '{release}'"
    made = {**header, "new": f'__version__ = "{release}"  # bumped'}
    assert guide.review(ToolUseBlock("e2", "edit_file", made)).input == made  # type: ignore[union-attr]


def test_the_release_of_a_stated_change_is_one_of_as_many_parts_and_a_near_major() -> None:
    assert stated_release("__version__ = '1.0.1'", "Set the Unicode data to 16.0.0") is None  # not its major
    assert stated_release("__version__ = '1.0.1'", "Bump to 1.0.2 or 1.0.3") is None  # which one?
    assert stated_release("__version__ = '3.10'", "Bump the version to 3.11.") == "__version__ = '3.11'"
    assert stated_release("VERSION = (1, 0, 1)", "Bump the version to 1.0.2.") is None  # no release string
    assert stated_release("__version__ = '1.0.1'", "Bump the version to 2.0.0.") == "__version__ = '2.0.0'"


PARSER = """class Parser(object):
    def __init__(self, lookahead=2):
        self.tokenizer = None

    def _parse(self):
        lookahead = self._current_token()
        return lookahead
"""


@pytest.mark.parametrize(
    "task",
    [
        "In jmespath/parser.py, change Parser's default to lookahead=3.",
        "把 jmespath/parser.py 里 Parser 的默认值改成 lookahead=3。",
    ],
)
def test_a_binding_written_as_code_is_a_literal_one_not_a_computed_one(task: str) -> None:
    """jm-edit-lookahead: offered ``__init__``'s header and ``lookahead = self._current_token()``
    (both bind the name), the 0.5B rewrote the second into ``lookahead = 3``, a wrong change in
    the user's file. Only a binding to a literal (a default, a constant) is the one the task
    assigns: the header alone is offered, and the computed line is never rewritten."""
    lines = [line for line in PARSER.splitlines() if line.strip()]
    assert value_sites(PARSER, task, lines) == ["    def __init__(self, lookahead=2):"]
    assert stated_assignment("        lookahead = self._current_token()", task) is None
    assert (
        stated_assignment("    def __init__(self, lookahead=2):", task)
        == "    def __init__(self, lookahead=3):"
    )


JP = """import json


def main(path):
    with open(path) as f:
        data = json.load(f)
    print(json.dumps(data, indent=4))
"""


@pytest.mark.parametrize(
    "task",
    [
        "Lass bin/jp.py das JSON mit zwei Leerzeichen statt vier einrücken.",
        "Make bin/jp.py indent its JSON by two.",
    ],
)
def test_an_edit_putting_in_names_the_task_does_not_write_is_refused(tmp_path: Path, task: str) -> None:
    """jm-de-edit: the 0.5B turned ``data = json.load(f)`` into ``data = json.loads(data)``, a
    wrong change in the user's file: it adds a name (``loads``) the task does not write. Such an
    edit is refused and the file stays as it is; one that only changes names the task writes
    (a rename it asks for) runs."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "jp.py").write_text(JP, encoding="utf-8")
    guide = _started(tmp_path, task, "change a file")
    old = "        data = json.load(f)"
    call = ToolUseBlock(
        "e1", "edit_file", {"path": "bin/jp.py", "old": old, "new": "        data = json.loads(data)"}
    )
    refused = guide.review(call)
    assert isinstance(refused, ToolResultBlock) and refused.refused and "loads" in refused.content
    assert unwritten_names(old, "        data = json.load(stream)", "Rename f to stream in bin/jp.py") == []
    assert unwritten_names(old, old.replace("f)", "fp)"), "Rename f to stream") == ["fp"]
