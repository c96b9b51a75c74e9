"""The sandboxed replay child: what runs only in the child process, after it entered the sandbox.

Started by name (``python -m replay_tui.replay.child.main``, ``parent/child_command.py``); no other
module imports this package (import-linter). Empty on purpose: the child imports only what it needs.
"""
