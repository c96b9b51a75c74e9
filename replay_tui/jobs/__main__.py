"""``python -m replay_tui.jobs NAME``: run one child job (see runner.py for the protocol)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

from ..journal import JournalError
from ..journal.depth import deep_enough
from .core import CHILD_NICENESS, JobError
from .registry import child_job
from .throttle import throttled

CHILD_PROGRESS_EVERY_S = 0.05


_SAYING = threading.Lock()  # a job's callbacks may say an update from a thread of its own


def _say(message: dict[str, object]) -> None:
    try:
        line = json.dumps(message) + "\n"
    except RecursionError:  # a replay's divergence in a payload nested as deep as the journal allows
        with deep_enough():
            line = json.dumps(message) + "\n"
    with _SAYING:
        sys.stdout.write(line)
        sys.stdout.flush()


def _say_update(update: dict[str, object]) -> None:
    _say({"update": update})


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m replay_tui.jobs NAME (the request as one JSON line on stdin)", file=sys.stderr)
        return 2
    try:
        job = child_job(argv[0])
    except KeyError as error:
        print(str(error.args[0]), file=sys.stderr)
        return 2
    os.nice(CHILD_NICENESS)
    stop = threading.Event()
    if job.stops_itself:  # the parent's cancel: end the work and answer with what there is
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    try:
        request = job.child_request(job.request_from_json(json.loads(sys.stdin.readline())), _say_update)
    except (ValueError, TypeError, KeyError) as error:
        _say({"error": f"{job.name}: bad request ({error})"})
        return 2
    _say({"started": os.getpid()})
    try:
        progress = throttled(lambda done, total: _say({"progress": [done, total]}), CHILD_PROGRESS_EVERY_S)
        result = job.run(request, progress, stop.is_set)
    except (JobError, JournalError, OSError, ValueError) as error:
        _say({"error": str(error)})
        return 1
    _say({"result": job.result_to_json(result)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
