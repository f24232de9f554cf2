"""``python -m tinyharness`` is the ``tinyharness`` command."""

from .cli import main

raise SystemExit(main())
