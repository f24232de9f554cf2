"""The settings commands: ``models default [NAME]`` (on the ``models`` command's parser) and
``keys set|list|remove``.

    tinyharness models default                       # which model runs, and why
    tinyharness models default anthropic:claude-sonnet-4-5
    tinyharness models default --unset
    tinyharness keys set openai                      # asked without echo, or read from stdin
    tinyharness keys list                            # names only

Part of the ``settings`` package; its rule applies.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Sequence

from ..errors import ConfigError
from . import (
    KEY_ENV,
    MODEL_ENV,
    PROVIDERS,
    config_path,
    key_names,
    keys_path,
    remove_key,
    resolve_model,
    set_config_value,
    set_key,
)

MODEL_KINDS = ("openai", "anthropic", "local", "scripted")


def register_keys(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = commands.add_parser(
        "keys",
        help="store API keys for openai/anthropic (mode 0600, never printed)",
        description=f"Store API keys in {keys_path()} (readable by you alone). A key set here is "
        "used when its environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) is not set, and "
        "only for the provider's own API, never for another server given by --base-url.",
    )
    keys.add_argument("action", choices=["set", "list", "remove", "path"], help="what to do")
    keys.add_argument("name", nargs="?", choices=PROVIDERS, help="openai or anthropic")
    keys.set_defaults(handler=handle_keys)


def handle_keys(args: argparse.Namespace) -> int:
    if args.action == "list":
        names = key_names()
        print("\n".join(names) if names else f"(no keys stored in {keys_path()})")
        return 0
    if args.action == "path":
        print(keys_path())
        return 0
    if args.name is None:
        raise ConfigError(f"keys {args.action} needs a name: {' or '.join(PROVIDERS)}")
    if args.action == "remove":
        removed = remove_key(args.name)
        print(f"removed the {args.name} key" if removed else f"no {args.name} key was stored")
        return 0
    key = _read_key(args.name)
    where = set_key(args.name, key)
    print(f"stored the {args.name} key in {where} (used when ${KEY_ENV[args.name]} is not set)")
    return 0


def _read_key(name: str) -> str:
    """From a no-echo prompt on a terminal, else the first line of stdin."""
    if sys.stdin.isatty():
        try:
            return getpass.getpass(f"{name} API key (not shown): ")
        except (EOFError, KeyboardInterrupt):
            raise ConfigError("no key entered; nothing stored") from None
    return sys.stdin.readline()


def models_default(name: str | None, *, unset: bool = False, kinds: Sequence[str] = MODEL_KINDS) -> int:
    """``models default``: show the model a run uses and where that comes from, or set it.
    ``kinds``: the words a model string may start with (the CLI adds every provider name)."""
    if unset:
        set_config_value("default_model", None)
        print(f"default model removed from {config_path()}")
        return 0
    if name is None:
        model, source = resolve_model(None)
        print(f"{model}  (from {source})")
        return 0
    kind, _, rest = name.strip().partition(":")
    if kind not in kinds or (kind != "local" and not rest):
        raise ConfigError(
            f"not a model string: {name!r}; use openai:NAME, anthropic:NAME, PROVIDER:NAME "
            "(`tinyharness models providers`), local, local:NAME or scripted:PATH"
        )
    where = set_config_value("default_model", name.strip())
    print(f"default model set to {name.strip()} in {where}")
    if resolve_model(None)[1] == f"${MODEL_ENV}":
        print(f"note: ${MODEL_ENV} is set and wins over the config file", file=sys.stderr)
    return 0
