"""A plain `pip install` opens the bundled demo with the bundled themes.

Builds the wheel, installs it into a fresh venv whose dependencies come from this
interpreter's site-packages (named in a .pth file: ``--system-site-packages`` would
see the base interpreter's, not those of a venv the tests run in), and runs the
app headless from a directory outside the checkout.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHECK = textwrap.dedent(
    """
    import asyncio, sys
    import replay_tui
    from replay_tui.journal import Journal
    from replay_tui.tui.app import ReplayApp
    from replay_tui.tui.launch import resolve_journal
    from replay_tui.tui.themes import themes_dir

    assert "site-packages" in replay_tui.__file__, replay_tui.__file__
    demo = resolve_journal(None)
    assert "_bundled" in str(demo) and "_bundled" in str(themes_dir()), (demo, themes_dir())

    async def main():
        app = ReplayApp(Journal(demo), theme="high-contrast")
        async with app.run_test(size=(160, 45)) as pilot:
            screen = app.screen_stack[0]
            while screen.indexing:
                await pilot.pause(0.05)
            await pilot.press("e")
            await pilot.pause(0.5)
            print("OK", screen.query_one("RunHeader").run_id, len(screen.journal), app.theme)

    asyncio.run(main())

    # The demo's agent ships in the package; bookmarks on the demo go to XDG_STATE_HOME.
    import importlib, os
    from replay_tui.analysis.annotations import AnnotationStore, sidecar_path
    from replay_tui.tui.launch import DEMO_AGENT
    agent_module = importlib.import_module(DEMO_AGENT.split(":")[0])
    assert "site-packages" in agent_module.__file__, agent_module.__file__
    journal = Journal(demo)
    journal.index()
    AnnotationStore.open(demo).toggle_bookmark(journal.event(2))
    assert str(sidecar_path(demo)).startswith(os.environ["XDG_STATE_HOME"]), sidecar_path(demo)
    print("STATE", sidecar_path(demo).is_file())
    """
)


ENTRY = "from replay_tui.cli import entry_point; entry_point()"


def demo_path(python: Path) -> str:
    return str(Path(venv_site(python)) / "replay_tui" / "_bundled" / "journals" / "crm-incident.jsonl")


def dependency_dirs() -> list[str]:
    """This interpreter's site-packages (a venv's own, or the system's), without the checkout."""
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return [d for d in dirs if Path(d).is_dir() and Path(d).resolve() != REPO]


def venv_site(python: Path) -> str:
    return subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def share_dependencies(python: Path) -> None:
    """Lines of a .pth file join sys.path after the venv's own site-packages (their .pth files are
    not run, so an editable install of this checkout stays invisible)."""
    Path(venv_site(python), "_outer_dependencies.pth").write_text("\n".join(dependency_dirs()) + "\n")


def test_installed_wheel_opens_the_bundled_demo(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, REPO], check=True, capture_output=True
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    share_dependencies(python)
    wheel = next(wheels.glob("replay_tui-*.whl"))
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--force-reinstall",
            "--target",
            venv_site(python),
            wheel,
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    environment = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run(
        [python, "-c", CHECK], check=False, cwd=outside, capture_output=True, text=True, timeout=300, env=environment
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # `r` on the demo replays it with the agent shipped in the package: the same replay from the CLI.
    replay = subprocess.run(
        [python, "-c", ENTRY, "replay", demo_path(python), "--agent", "replay_tui._demo.crm_incident:agent"],
        check=False,
        cwd=outside,
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    assert replay.returncode == 0 and replay.stdout.startswith("Replay matched"), replay.stdout + replay.stderr[-2000:]
    fixture = REPO / "fixtures" / "journals" / "crm-incident.jsonl"
    run_id = json.loads(fixture.read_bytes().split(b"\n", 1)[0])["run_id"]
    events = fixture.read_bytes().count(b"\n")
    assert done.stdout.split() == ["OK", run_id, str(events), "high-contrast", "STATE", "True"], done.stdout
