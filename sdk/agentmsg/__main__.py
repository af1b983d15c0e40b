"""``python -m agentmsg`` runs the command line."""

from agentmsg.cli import main

raise SystemExit(main())
