"""Corpus runs: many journals replayed at once, each by the ordinary parent (``parent/runner.py``).

``runs.py`` groups divergences by signature, ``executors.py`` runs the jobs (local threads and the warm
``forkserver.py``, or Ray), ``pytest_plugin.py`` makes each incident journal a test.
"""
