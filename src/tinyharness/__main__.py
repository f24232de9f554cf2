"""``python -m tinyharness`` is the ``tinyharness`` command. May import ``cli``."""

from .cli import main

raise SystemExit(main())
