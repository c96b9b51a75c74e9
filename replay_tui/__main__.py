"""`python -m replay_tui` is the same as the `replay-tui` command."""

from .cli import entry_point

entry_point()
