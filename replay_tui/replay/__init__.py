"""Strict replay, experiments and journal comparison, grouped by the process that runs each module.

A replay is three processes: the caller (the CLI, the app's job, CI), the parent that judges, and the
sandboxed child that runs the agent. The subpackages say which one executes their code:

- ``child/``: only the sandboxed child, after it entered the sandbox (``main.py``, started by name as
  ``python -m replay_tui.replay.child.main``; ``engine.py`` the replay session, ``tape.py``,
  ``scheduler.py``, ``shuffle.py``, ``entry_point.py``). The agent side: it imports the harness and the
  agent. Nothing else imports it (import-linter); the parent starts it by module name.
- ``parent/``: only the replay-tui process: start the child (``sandbox_launch.py``, ``scratch.py``,
  ``child_command.py``), supervise it (``runner.py``, on ``journal/processes.py``), read its protocol and
  decide the verdict (``session.py``, ``shuffle_verdict.py``, ``shuffle_runs.py``), what a replay came to
  (``outcome.py``, ``statuses.py``, ``results.py``), ``journal_diff.py`` (``diff``) and ``rerecord.py``.
- ``corpus/``: many replays at once (``runs.py``, ``executors.py``, the warm ``forkserver.py``,
  ``pytest_plugin.py``); above ``parent/``.
- here, what both sides run, the contract between them: the wire (``protocol.py``, ``shapes.py``), the
  matching rules (``referee.py``, ``state_book.py``), the sandbox the parent builds and the child enters
  (``sandbox.py``, ``isolation.py``, ``broker.py``, ``hosts.py``; guarantees in ``SANDBOX.md``), the
  report and comparison (``report.py``, ``compare.py``, ``experiment_verdict.py``, ``concurrency.py``) and
  what the recording ran with (``recorded.py``).

Submodules are imported on use so the child starts fast.
"""
