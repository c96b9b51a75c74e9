"""The app's first frame imports only what it draws (issue 14, start-up).

Each check runs in a fresh interpreter, so what another test imported cannot hide a
module-level import that slipped back into the first-frame path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "journals" / "crm-incident.jsonl"

# Loaded when first used (a replay, the stats screen, an export, a diff), never to draw the first frame.
LOADED_ON_USE = (
    "deepdiff",
    "replay_tui.analysis.stats",
    "replay_tui.analysis.stats_render",
    "replay_tui.analysis.export",
    "replay_tui.jobs.export",
    "replay_tui.jobs.stats",
    "replay_tui.jobs.secrets",
    "replay_tui.replay.parent.runner",
    "replay_tui.replay.sandbox",
    "replay_tui.replay.broker",
    "replay_tui.tui.screens.stats_screen",
)

PROBE = """
import json, sys
{imports}
from replay_tui.journal import detectors
print(json.dumps({{
    "loaded": sorted(name for name in {watched!r} if name in sys.modules),
    "detector_tables_built": detectors.compiled.cache_info().currsize,
}}))
"""


def probe(imports: str) -> dict:
    code = PROBE.format(imports=imports, watched=LOADED_ON_USE)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_app_loads_nothing_the_first_frame_does_not_draw() -> None:
    seen = probe("import replay_tui.tui.app\nimport replay_tui.tui.launch")
    assert seen["loaded"] == []
    assert seen["detector_tables_built"] == 0  # the secret scan's regex tables compile on the first scan


def test_the_probe_sees_a_module_that_is_loaded() -> None:
    """The check above can fail: the same probe reports the modules a replay and the stats screen load."""
    seen = probe(
        "import replay_tui.tui.widgets.replay_panel\nimport replay_tui.replay.parent.runner\n"
        "import replay_tui.tui.screens.stats_screen"
    )
    assert {"replay_tui.replay.parent.runner", "replay_tui.replay.sandbox", "replay_tui.analysis.stats"} <= set(
        seen["loaded"]
    )


def test_constructing_the_app_loads_no_stats_or_secret_tables() -> None:
    """Building the app and its main screen's live analysis (before the first paint) stays light too."""
    code = (
        "from replay_tui.journal import Journal\n"
        "from replay_tui.tui.live_analysis import LiveAnalysis\n"
        "from replay_tui.tui.app import ReplayApp\n"
        f"journal = Journal({str(DEMO)!r})\n"
        "ReplayApp(journal)\n"
        "LiveAnalysis(journal)\n"
    )
    seen = probe(code)
    assert seen["loaded"] == []
    assert seen["detector_tables_built"] == 0
