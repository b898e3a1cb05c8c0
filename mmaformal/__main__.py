"""``python -m mmaformal``: the command line (mmaformal.cli)."""
from .cli import main

raise SystemExit(main())
