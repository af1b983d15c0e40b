"""``python -m agentmsg`` runs the command line."""

from .cli import main

raise SystemExit(main())
