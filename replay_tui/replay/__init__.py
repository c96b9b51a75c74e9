"""Strict replay, experiments and journal comparison.

The agent always runs in a child process (``child.py``) behind network isolation
(``isolation.py``); the parent side (``runner.py``) follows it through the JSON-lines
protocol of ``protocol.py``. Submodules are imported on use so the child starts fast.
"""
