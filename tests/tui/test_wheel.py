"""A plain `pip install` opens the bundled demo with the bundled themes.

Builds the wheel, installs it into a fresh venv (dependencies come from this
interpreter via --system-site-packages), and runs the app headless from a
directory outside the checkout.
"""

from __future__ import annotations

import json
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
    """
)


def test_installed_wheel_opens_the_bundled_demo(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, REPO], check=True, capture_output=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
    python = venv / "bin" / "python"
    wheel = next(wheels.glob("replay_tui-*.whl"))
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", wheel], check=True, capture_output=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    done = subprocess.run([python, "-c", CHECK], cwd=outside, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    fixture = REPO / "fixtures" / "journals" / "crm-incident.jsonl"
    run_id = json.loads(fixture.read_bytes().split(b"\n", 1)[0])["run_id"]
    events = fixture.read_bytes().count(b"\n")
    assert done.stdout.strip() == f"OK {run_id} {events} high-contrast", done.stdout
