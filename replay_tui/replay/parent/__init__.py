"""The replay parent: starts the sandboxed child, follows its protocol, and alone decides the verdict.

Runs in the replay-tui process (CLI, app job, CI), never in the child; it never imports ``child/``
(import-linter). Empty on purpose: the app's first frame imports ``statuses`` without the runner.
"""
