"""``python -m planner``: the same as the ``moe-planner`` command."""

from .cli import main

raise SystemExit(main())
