"""Fixtures for the app tests (helpers live in tui_helpers.py, a unique module name)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from tui_helpers import bulk_path, incident_path  # noqa: E402,F401  (fixtures)
