"""`replay-tui record CONFIG --agent M:A --input JSON|@file -o JOURNAL [--follow-in-app]`: record one run.

The agent runs on the harness the config builds, in this process; with ``--follow-in-app`` it runs in a
child process (this same command without the flag) while the app follows the journal it writes, so
the app never imports agent code.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from ..journal.safe_text import safe_line
from .common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_text

FIRST_EVENT_WAIT_S = 30.0  # how long --follow-in-app waits for the child's run.started


class UsageProblem(ValueError):
    """Bad arguments, said in one line."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="harness config (TOML or YAML) naming the plugins the run uses")
    parser.add_argument("--agent", required=True, metavar="MODULE:ATTR", help="the agent's entry point")
    parser.add_argument(
        "--input",
        dest="inputs",
        action="append",
        required=True,
        metavar="JSON|@FILE",
        help="one input as JSON (a bare word is taken as a string), or @FILE holding it; repeat for several",
    )
    parser.add_argument(
        "-o", "--out", required=True, metavar="JOURNAL", help="the journal to write (never overwritten)"
    )
    parser.add_argument("--run-id", help="run id (default: a new one)")
    parser.add_argument(
        "--agent-path",
        action="append",
        default=[],
        metavar="DIR",
        help="directory the agent's module is imported from (default: the current directory)",
    )
    parser.add_argument(
        "--follow-in-app", action="store_true", help="run the agent in a child and open the app following the journal"
    )


def parse_input(text: str) -> Any:
    """JSON text, ``@file`` holding JSON, or a bare word taken as a string."""
    if text.startswith("@"):
        path = Path(text[1:]).expanduser()
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise UsageProblem(f"--input {text}: cannot read {path} ({error.strerror or error})") from None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise UsageProblem(f"--input {text}: {path} is not JSON ({error})") from None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text  # `--input Lisbon`: a plain string input


def run(args: argparse.Namespace) -> int:
    try:
        inputs = [parse_input(text) for text in args.inputs]
        out = Path(args.out).expanduser()
        if out.exists():
            raise UsageProblem(f"-o {args.out}: already exists; a recording never overwrites a journal")
        if not Path(args.config).expanduser().is_file():
            raise UsageProblem(f"{args.config}: no such config file")
        if ":" not in args.agent:
            raise UsageProblem(f"--agent {args.agent}: expected MODULE:ATTR, e.g. my_agent:agent")
    except UsageProblem as problem:
        print_text(f"replay-tui record: {problem}", error=True)
        return EXIT_USAGE
    if args.follow_in_app:
        return _record_beside_the_app(args, out)
    return _record(args, inputs, out)


def _record(args: argparse.Namespace, inputs: list[Any], out: Path) -> int:
    for directory in [*args.agent_path, os.getcwd()][::-1]:
        if os.path.abspath(directory) not in sys.path:
            sys.path.insert(0, os.path.abspath(directory))
    from ..harness import (  # the harness only when recording
        ConfigError,
        HarnessError,
        record_run,
    )
    from ..harness.frameworks.common import missing_key_problem

    try:
        outcome = record_run(args.config, args.agent, inputs, journal=out, run_id=args.run_id)
    except (ConfigError, HarnessError, ImportError, AttributeError, ValueError) as error:
        problem = missing_key_problem(error)
        said = f"{problem} ({type(error).__name__}: {error})" if problem else f"{type(error).__name__}: {error}"
        print_text(f"replay-tui record: {said}", error=True)
        return EXIT_USAGE
    problem = missing_key_problem(outcome.error) if outcome.error is not None else None
    if problem is not None:  # the model's client had no key: a setup problem, not the agent's
        print_text(f"replay-tui record: {problem}; the run is recorded as failed in {out}", error=True)
        return EXIT_USAGE
    status = outcome.status
    said = f"recorded {outcome.last_seq} events to {out} (run {status})"
    if outcome.error is not None:
        said += f": {type(outcome.error).__name__}: {safe_line(str(outcome.error), 300)}"
    print_text(said + f"\ncheck it: replay-tui verify {out}\nopen it:  replay-tui {out}")
    return EXIT_OK if status == "ok" else EXIT_FAILED


def _record_beside_the_app(args: argparse.Namespace, out: Path) -> int:
    """The agent records in a child process; the app follows the journal until it is closed."""
    argv = [sys.executable, "-m", "replay_tui", "record"]  # the CLI itself, visible to import-linter
    argv += [args.config, "--agent", args.agent, "-o", str(out)]
    for text in args.inputs:
        argv += ["--input", text]
    for directory in args.agent_path:
        argv += ["--agent-path", os.path.abspath(directory)]
    if args.run_id:
        argv += ["--run-id", args.run_id]
    handle, name = tempfile.mkstemp(prefix="replay-tui-record-", suffix=".log")
    os.close(handle)
    log = Path(name)
    with open(log, "wb") as output:
        child = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + FIRST_EVENT_WAIT_S
        while not (out.is_file() and out.stat().st_size > 0):
            if child.poll() is not None or time.monotonic() > deadline:
                child.kill()
                child.wait()
                said = log.read_text(errors="replace")[-2000:]
                log.unlink(missing_ok=True)
                print_text(f"replay-tui record: the recording did not start:\n{said}", error=True)
                return EXIT_USAGE if child.returncode == EXIT_USAGE else EXIT_FAILED
            time.sleep(0.02)
        from ..tui.launch import launch_app

        launch_app(argparse.Namespace(journal=str(out), seq=None, theme=None, follow=True, agent=args.agent))
        if child.poll() is None:
            print("replay-tui record: the app is closed; the recording goes on (ctrl+c stops it)", file=sys.stderr)
        code = child.wait()
    except KeyboardInterrupt:
        child.terminate()
        child.wait()
        raise
    print_text(log.read_text(errors="replace").rstrip())
    log.unlink(missing_ok=True)
    return code
