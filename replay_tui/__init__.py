"""replay-tui: a record/replay debugger for AI agents."""

__version__ = "0.1.0"
