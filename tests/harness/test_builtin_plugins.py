"""The built-in plugins through a real config: scripted model (plain and streamed),
python tools, SQLite memory, the JSONL session store and the callback hook."""

from __future__ import annotations

import orjson
import pytest

from replay_tui.harness import ToolSpec, build_harness
from replay_tui.harness.config import config_from_mapping

from .helpers import events_of

SEEN: list[int] = []


def policy(request):
    return {"content": "one two three"}


def tools(options):
    return {"echo": ToolSpec("echo", lambda text: text, {"text": "string"}, timeout_s=5.0)}


def on_event(event):
    SEEN.append(event.seq)


def _config(tmp_path, stream=False):
    return config_from_mapping(
        {
            "harness": {"random_seed": 1},
            "plugins": [
                {
                    "id": "model",
                    "type": "scripted-model",
                    "options": {"policy": f"{__name__}:policy", "stream": stream, "version": "p-9"},
                },
                {
                    "id": "tools",
                    "type": "python-tools",
                    "options": {"provider": f"{__name__}:tools", "timeouts": {"echo": 0.5}},
                },
                {"id": "notes", "type": "sqlite-memory", "options": {"path": "notes.sqlite"}},
                {
                    "id": "sessions",
                    "type": "jsonl-session-store",
                    "options": {"path": "sessions.jsonl"},
                    "depends_on": ["notes"],
                },
                {"id": "watch", "type": "hook", "options": {"callback": f"{__name__}:on_event"}},
            ],
        },
        source="builtin.toml",
        base_dir=tmp_path,
    )


@pytest.mark.parametrize("stream", [False, True])
def test_builtin_plugins_work_together(tmp_path, stream):
    SEEN.clear()
    journal = tmp_path / "run.jsonl"
    with build_harness(_config(tmp_path, stream), journal=journal, run_id="b", agent="tests:builtin") as recording:
        recording.started("tests:builtin")
        h = recording.harness
        h.start_run()
        assert h.model({"model": "m", "messages": [{"role": "user", "content": "count"}]})["content"] == "one two three"
        assert h.tool_specs["echo"].timeout_s == 0.5
        assert h.tool("echo", {"text": "hi"}) == "hi"
        notes = h.memory("notes")
        notes.put("user:1", {"name": "Ada"})
        notes.put("user:2", {"name": "Bob"})
        notes.put("order:1", {"total": 3})
        assert notes.get("user:1") == {"name": "Ada"} and notes.get("missing") is None
        assert [row["key"] for row in notes.search("user:")] == ["user:1", "user:2"]
        assert notes.search("user_") == []  # LIKE wildcards are escaped
        h.end_run("ok")
    events = events_of(journal)
    assert SEEN == [e.seq for e in events]
    response = next(e for e in events if e.kind == "model.response")
    assert ("stream" in response.payload) is stream
    assert response.payload["response"]["usage"] == {"prompt_tokens": 1, "completion_tokens": 3}
    assert events[0].payload["harness"]["plugins"][0]["version"] == "p-9"
    sessions = [orjson.loads(line) for line in (tmp_path / "sessions.jsonl").read_bytes().splitlines()]
    assert sessions == [
        {"event": "started", "run_id": "b", "journal": str(journal), "agent": "tests:builtin"},
        {"event": "ended", "run_id": "b", "status": "ok"},
    ]
    assert (tmp_path / "notes.sqlite").exists()


def test_unknown_memory_is_a_clear_error(tmp_path):
    from replay_tui.harness import HarnessError

    with build_harness(_config(tmp_path), journal=tmp_path / "r.jsonl") as recording:
        with pytest.raises(HarnessError, match="no memory plugin with id 'brain'"):
            recording.harness.memory("brain")


def test_bad_plugin_options_are_clear(tmp_path):
    config = config_from_mapping(
        {"plugins": [{"id": "model", "type": "scripted-model", "options": {}}]}, source="m.toml"
    )
    with pytest.raises(ValueError, match="options.policy must be 'module:attr'"):
        build_harness(config, journal=tmp_path / "x.jsonl")
    config = config_from_mapping({"plugins": [{"id": "mem", "type": "sqlite-memory"}]}, source="m.toml")
    with pytest.raises(ValueError, match="options.path must be a path"):
        build_harness(config, journal=tmp_path / "y.jsonl")
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "y.jsonl").exists()
