"""The package version (one place; read by the CLI and the build)."""

__version__ = "0.1.0"
