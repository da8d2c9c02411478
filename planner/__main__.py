"""``python -m planner``: the same as the ``moe-planner`` command."""

from planner.cli import main

raise SystemExit(main())
