"""run.started: the environment fingerprint, and never an environment variable's value."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

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


def test_a_lockfile_written_after_a_search_found_none_is_found(tmp_path):
    """Folders searched without a lockfile are skipped while unchanged: a lockfile created since, or one
    rewritten, is seen by the next session."""
    from replay_tui.journal.environment import lockfile_hash

    project = tmp_path / "project" / "agent"
    project.mkdir(parents=True)
    before = lockfile_hash(project)
    assert before["source"] == "installed-distributions" and lockfile_hash(project) == before
    (tmp_path / "project" / "uv.lock").write_text("version = 1\n")
    first = lockfile_hash(project)
    assert first["source"] == "uv.lock"
    (tmp_path / "project" / "uv.lock").write_text("version = 1\n[[package]]\nname = 'x'\n")
    second = lockfile_hash(project)
    assert second["source"] == "uv.lock" and second["hash"] != first["hash"]


def test_an_unversioned_egg_info_rewritten_in_place_changes_the_hash(tmp_path, monkeypatch):
    """A directory is listed again only when it changed; an old ``name.egg-info`` file (no version in its
    name) is rewritten in place on an upgrade, which changes no directory: its own time is looked at."""
    import os

    from replay_tui.journal.environment import lockfile_hash

    site = tmp_path / "site"
    site.mkdir()
    egg = site / "oldstyle.egg-info"
    egg.write_text("Metadata-Version: 1.0\nName: oldstyle\nVersion: 0.1\n")
    monkeypatch.syspath_prepend(str(site))
    before = lockfile_hash(Path("/"))
    directory_time = site.stat().st_mtime_ns
    egg.write_text("Metadata-Version: 1.0\nName: oldstyle\nVersion: 0.2\n")
    os.utime(egg, ns=(egg.stat().st_atime_ns, egg.stat().st_mtime_ns + 1_000_000))
    os.utime(site, ns=(directory_time, directory_time))
    assert lockfile_hash(Path("/")) != before


def test_installed_distributions_are_read_as_importlib_metadata_reads_them(tmp_path, monkeypatch):
    """The quick reading of each distribution's name and version gives what importlib.metadata gives, for the
    installed ones and for metadata it could get wrong (a folded header, CRLF, lower-case names, PKG-INFO
    only, an old egg-info file, a line that ends the headers before the name, headers longer than a read block,
    line ends of CR alone or CRLF before a long description)."""
    from importlib import metadata

    from replay_tui.journal import environment

    site = tmp_path / "site"
    site.mkdir()
    shapes = {
        "plain-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: Plain_Pkg\nVersion: 1.0\n\nName: not-this\n",
        "folded-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: folded\n pkg\nVersion: 1.0\n",
        "crlf-2.0.dist-info/METADATA": "Metadata-Version: 2.1\r\nName: crlf\r\nVersion: 2.0\r\n\r\n",
        "lower-3.0.dist-info/METADATA": "metadata-version: 2.1\nname: Lower\nversion: 3.0 \n",
        "pkginfo-4.0.egg-info/PKG-INFO": "Metadata-Version: 1.0\nName: pkginfo\nVersion: 4.0\n",
        "oldstyle.egg-info": "Metadata-Version: 1.0\nName: oldstyle\nVersion: 0.1\n",
        "broken-5.0.dist-info/METADATA": "Metadata-Version: 2.1\nnot a header\nName: broken\nVersion: 5.0\n",
        "spaced-6.0.dist-info/METADATA": "Metadata-Version: 2.1\nName:\tspaced\nVersion:   6.0\n",
        "empty-7.0.dist-info/METADATA": "",
        "longhead-8.0.dist-info/METADATA": "Metadata-Version: 2.1\n"
        + "Classifier: Topic :: Software Development\n" * 400
        + "Name: longhead\nVersion: 8.0\n\nName: not-this\n",
        "crlflong-9.0.dist-info/METADATA": "Metadata-Version: 2.1\r\nName: crlflong\r\nVersion: 9.0\r\n\r\n"
        + "A description.\r\n" * 2000,
        "lonecr-10.0.dist-info/METADATA": "Metadata-Version: 2.1\rName: lonecr\rVersion: 10.0\r\rName: not-this\r",
    }
    for relative, text in shapes.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    monkeypatch.syspath_prepend(str(site))
    listing = environment._distribution_listing()
    assert listing is not None
    quick = sorted(
        (environment._metadata_fields(str(Path(root) / child)) for root, infos in listing for child, _ in infos),
        key=repr,
    )
    expected = sorted(
        ((dist.metadata["Name"], dist.metadata["Version"]) for dist in metadata.distributions()), key=repr
    )
    assert quick == expected
    assert environment._hash_of_listing(listing) == environment._hash_of_search(environment._path_state())


def test_a_distribution_is_named_from_its_headers_whatever_its_description_holds(tmp_path):
    """Only the headers are read and decoded: bytes that are not UTF-8 in the description after them do not hide
    the distribution (read whole, the file did); in the headers, they leave it unnamed, as a file that cannot be
    read."""
    from replay_tui.journal import environment

    described = tmp_path / "described-1.0.dist-info"
    described.mkdir()
    (described / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: described\nVersion: 1.0\n\n\xff\xfe" * 3)
    assert environment._metadata_fields(str(described)) == ("described", "1.0")
    garbled = tmp_path / "garbled-1.0.dist-info"
    garbled.mkdir()
    (garbled / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: garbled\xff\nVersion: 1.0\n\n")
    assert environment._metadata_fields(str(garbled)) == (None, None)


def test_the_installed_distributions_are_not_read_again_for_a_file_written_beside_them(tmp_path, monkeypatch):
    """A journal written into a directory on the import path (the current directory of ``python -c``) is no
    new distribution: the next recording does not read every distribution's metadata again."""
    from replay_tui.journal import environment

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    before = environment.lockfile_hash(Path("/"))
    misses = environment._hash_of_listing.cache_info().misses
    (site / "session.jsonl").write_text("{}\n")
    assert environment.lockfile_hash(Path("/")) == before
    assert environment._hash_of_listing.cache_info().misses == misses


def test_code_revision_of_a_dirty_checkout_and_of_one_without_commits(tmp_path):
    from replay_tui.journal.environment import code_revision

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    assert code_revision(tmp_path) == {"vcs": None, "commit": None, "dirty": None}  # as rev-parse HEAD failing
    (tmp_path / "agent.py").write_text("x = 1\n")
    git("add", "agent.py")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "first")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert code_revision(tmp_path) == {"vcs": "git", "commit": head, "dirty": False}
    (tmp_path / "notes.txt").write_text("untracked files do not count\n")
    assert code_revision(tmp_path)["dirty"] is False
    (tmp_path / "agent.py").write_text("x = 2\n")
    assert code_revision(tmp_path) == {"vcs": "git", "commit": head, "dirty": True}


def test_a_process_asks_git_once_per_checkout_until_its_head_or_index_changes(tmp_path):
    """A service's sessions share the code revision their process imported; a commit or a staged change since
    is seen at once."""
    from replay_tui.journal import environment

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    (tmp_path / "agent.py").write_text("x = 1\n")
    git("add", "agent.py")
    git("commit", "-q", "-m", "first")
    first = environment.process_code_revision(tmp_path)
    assert first == environment.code_revision(tmp_path) and first["dirty"] is False
    hits = environment._cached_code_revision.cache_info().hits
    assert environment.process_code_revision(tmp_path) == first
    assert environment._cached_code_revision.cache_info().hits == hits + 1  # no git this time
    (tmp_path / "agent.py").write_text("x = 2\n")
    git("add", "agent.py")
    assert environment.process_code_revision(tmp_path) == {"vcs": "git", "commit": first["commit"], "dirty": True}
    git("commit", "-q", "-m", "second")
    second = environment.process_code_revision(tmp_path)
    assert second["commit"] != first["commit"] and second == environment.code_revision(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".git").write_text("not a gitdir line\n")  # no git directory found: git is asked, as before
    assert environment.process_code_revision(outside) == environment.code_revision(outside)


def test_the_code_revision_of_a_worktree_follows_its_own_head(tmp_path):
    from replay_tui.journal import environment

    def git(cwd: Path, *args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
            cwd=cwd,
            check=True,
            capture_output=True,
        )

    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q")
    (main / "agent.py").write_text("x = 1\n")
    git(main, "add", "agent.py")
    git(main, "commit", "-q", "-m", "first")
    git(main, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    side = tmp_path / "side"
    before = environment.process_code_revision(side)
    (side / "agent.py").write_text("x = 3\n")
    git(side, "commit", "-q", "-am", "on the side")
    after = environment.process_code_revision(side)
    assert after == environment.code_revision(side) and after["commit"] != before["commit"]


def test_outside_any_checkout_git_is_asked_once_until_one_is_made(tmp_path, monkeypatch):
    """A service deployed without its .git (a container image) is told "no checkout" once, not per session;
    a git init in its folder afterwards is seen at once."""
    from replay_tui.journal import environment

    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # git must not find a checkout above
    folder = tmp_path / "service"
    folder.mkdir()
    assert environment.process_code_revision(folder) == {"vcs": None, "commit": None, "dirty": None}
    asked = []
    real_run = subprocess.run
    monkeypatch.setattr(environment.subprocess, "run", lambda *a, **k: asked.append(a) or real_run(*a, **k))
    assert environment.process_code_revision(folder) == {"vcs": None, "commit": None, "dirty": None}
    assert asked == []  # no git this time
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True, capture_output=True)
    (folder / "agent.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "agent.py"], cwd=folder, check=True, capture_output=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "first"],
        cwd=folder,
        check=True,
        capture_output=True,
    )
    assert environment.process_code_revision(folder)["vcs"] == "git"
    monkeypatch.setenv("GIT_DIR", str(folder / ".git"))  # git told where to look: asked every time
    asked.clear()
    environment.process_code_revision(tmp_path)
    assert len(asked) == 1
