"""The import contracts in pyproject.toml hold (import-linter)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_hold() -> None:
    command = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    done = subprocess.run([command], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" not in done.stdout.split("Contracts:")[-1].replace("0 broken", "")


def test_the_verify_command_does_not_load_textual(tmp_path: Path) -> None:
    """Subcommands import only what they use, so CI and scripts start fast."""
    code = (
        "import sys\n"
        "from replay_tui.cli import main\n"
        f"main(['verify', {str(tmp_path / 'missing.jsonl')!r}])\n"
        "print('textual' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
