"""run.started: the environment fingerprint, and never an environment variable's value."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

from replay_tui.harness import record_run

from .helpers import CONFIGS, CRM_QUESTION, ROOT, events_of

FIELDS = {
    "code_revision",
    "runtime",
    "lockfile_hash",
    "prompt_bundle_hash",
    "tool_schema_hash",
    "locale",
    "timezone",
    "feature_flags",
    "plugin_versions",
}


def test_run_started_carries_the_fingerprint(tmp_path):
    journal = tmp_path / "crm.jsonl"
    record_run(CONFIGS / "crm.toml", "fixtures.agents.crm:agent", [CRM_QUESTION], journal=journal, run_id="env")
    started = events_of(journal)[0].payload
    environment = started["environment"]
    assert set(environment) == FIELDS
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert environment["code_revision"]["commit"] == head and isinstance(environment["code_revision"]["dirty"], bool)
    assert environment["runtime"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert environment["lockfile_hash"]["hash"].startswith("sha256:")
    assert environment["prompt_bundle_hash"].startswith("sha256:")  # crm.toml names the agent file as its prompt bundle
    assert environment["tool_schema_hash"].startswith("sha256:")
    assert environment["feature_flags"] == {"replica_fallback": True}
    assert environment["plugin_versions"] == {"model": "crm-scripted-1", "crm": "1", "journal": "1"}
    assert started["harness"]["plugins"][0] == {"id": "model", "type": "scripted-model", "version": "crm-scripted-1"}
    assert started["harness"]["config_hash"].startswith("sha256:")


def test_prompt_and_tool_changes_change_their_hashes(tmp_path):
    from replay_tui.harness.environment import prompt_bundle_hash

    prompt = tmp_path / "prompts"
    prompt.mkdir()
    (prompt / "system.txt").write_text("be brief")
    before = prompt_bundle_hash([prompt], tmp_path)
    (prompt / "system.txt").write_text("be thorough")
    assert prompt_bundle_hash([prompt], tmp_path) != before


def test_no_environment_variable_value_is_recorded(tmp_path):
    canary = "canary-" + secrets.token_hex(16)
    journal = tmp_path / "env.jsonl"
    code = (
        "from replay_tui.harness import record_run;"
        f"record_run({str(CONFIGS / 'crm.toml')!r}, 'fixtures.agents.crm:agent', ['q'], journal={str(journal)!r}, run_id='e')"
    )
    env = {**os.environ, "REPLAY_CANARY_SECRET": canary, "OPENAI_API_KEY": canary, "FEATURE_X": canary}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True)
    assert canary.encode() not in journal.read_bytes()


def test_the_installed_distributions_hash_follows_an_install_and_a_removal(tmp_path, monkeypatch):
    """It is computed once per process while the import path stays as it was; a distribution added to or
    removed from a directory on the path is seen at once."""
    from pathlib import Path

    from replay_tui.journal.environment import lockfile_hash

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    before = lockfile_hash(Path("/"))
    assert before["source"] == "installed-distributions" and lockfile_hash(Path("/")) == before
    info = site / "replay_tui_probe-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: replay-tui-probe\nVersion: 1.0\n")
    installed = lockfile_hash(Path("/"))
    assert installed != before
    (info / "METADATA").unlink()
    info.rmdir()
    assert lockfile_hash(Path("/")) == before
