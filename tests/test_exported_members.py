"""The public API: every name in ``__all__`` exists, and every public name defined in the
package's top level is listed (so nothing is exported by accident or forgotten)."""

from __future__ import annotations

import tinyharness


def test_all_names_exist_and_are_unique() -> None:
    assert len(set(tinyharness.__all__)) == len(tinyharness.__all__)
    for name in tinyharness.__all__:
        assert hasattr(tinyharness, name), name


def test_every_public_top_level_name_is_exported() -> None:
    public = {
        name
        for name, value in vars(tinyharness).items()
        if not name.startswith("_") and not isinstance(value, type(tinyharness))
    }
    assert public == set(tinyharness.__all__) - {"__version__"}
