"""Plugin config: TOML and YAML, dependency order, lifecycle, clear errors."""

from __future__ import annotations

import pytest

from replay_tui.harness import ConfigError, PluginSet, load_config
from replay_tui.harness.builder import build_harness
from replay_tui.harness.config import config_from_mapping

from .plugins_for_tests import LOG

RECORDER = "tests.harness.plugins_for_tests:Recorder"


def _config(*entries, harness=None):
    return config_from_mapping(
        {"plugins": list(entries), **({"harness": harness} if harness else {})}, source="test.toml"
    )


def _entry(plugin_id, depends_on=(), **options):
    return {"id": plugin_id, "type": RECORDER, "options": options, "depends_on": list(depends_on)}


@pytest.fixture(autouse=True)
def _clear_log():
    LOG.clear()


def test_dependencies_start_in_topological_order_and_stop_in_reverse():
    config = _config(_entry("c", ["b"]), _entry("a"), _entry("b", ["a"]))
    plugins = PluginSet(config).build().start()
    assert [line for line in LOG if line.startswith("start")] == ["start a", "start b", "start c"]
    assert "init c deps=['b']" in LOG
    plugins.stop()
    assert LOG[-3:] == ["stop c", "stop b", "stop a"]


def test_stop_runs_in_reverse_when_start_fails_half_way():
    config = _config(_entry("a"), _entry("b", ["a"]), _entry("c", ["b"], fail_start=True), _entry("d", ["c"]))
    with pytest.raises(RuntimeError, match="c cannot start"):
        PluginSet(config).build().start()
    assert LOG[-3:] == ["start-fails c", "stop b", "stop a"]
    assert "start d" not in LOG and "stop c" not in LOG


def test_a_cycle_is_a_clear_error():
    config = _config(_entry("a", ["c"]), _entry("b", ["a"]), _entry("c", ["b"]))
    with pytest.raises(ConfigError, match=r"test.toml: plugin dependency cycle: .*a.*b.*c|cycle"):
        PluginSet(config)


@pytest.mark.parametrize(
    "entries, message",
    [
        ([_entry("a", ["ghost"])], "depends on unknown plugin id 'ghost'"),
        ([_entry("a"), _entry("a")], "plugin id 'a' is used twice"),
        ([{"id": "a", "type": "no-such-type"}], "unknown type 'no-such-type'"),
        ([{"id": "a", "type": "tests.harness.plugins_for_tests:NotAPlugin"}], "does not implement an extension point"),
        ([{"id": "a", "type": "nowhere.module:Thing"}], "cannot import module 'nowhere.module'"),
        ([{"id": "a"}], "'type' must be a non-empty string"),
        ([{"id": "a", "type": RECORDER, "enabled": "yes"}], "'enabled' must be true or false"),
        ([{"id": "a", "type": RECORDER, "colour": 1}], "unknown key(s) ['colour']"),
    ],
)
def test_bad_entries_are_clear_errors(entries, message):
    with pytest.raises(ConfigError) as error:
        PluginSet(_config(*entries)).build()
    assert message in str(error.value) and str(error.value).startswith("test.toml:")


def test_a_disabled_plugin_is_skipped_and_cannot_be_depended_on():
    config = _config(_entry("a"), {**_entry("b"), "enabled": False})
    PluginSet(config).build().start().stop()
    assert "start b" not in LOG
    with pytest.raises(ConfigError, match="depends on 'b', which is disabled"):
        PluginSet(_config({**_entry("b"), "enabled": False}, _entry("c", ["b"])))


def test_toml_and_yaml_give_the_same_config(tmp_path):
    toml = tmp_path / "h.toml"
    toml.write_text(
        '[harness]\nsnapshot_every = 5\n\n[[plugins]]\nid = "a"\ntype = "tests.harness.plugins_for_tests:Recorder"\n'
        'options = { x = 1 }\n\n[[plugins]]\nid = "b"\ntype = "tests.harness.plugins_for_tests:Recorder"\ndepends_on = ["a"]\n'
    )
    yaml = tmp_path / "h.yaml"
    yaml.write_text(
        "harness:\n  snapshot_every: 5\nplugins:\n  - id: a\n    type: tests.harness.plugins_for_tests:Recorder\n"
        "    options: {x: 1}\n  - id: b\n    type: tests.harness.plugins_for_tests:Recorder\n    depends_on: [a]\n"
    )
    a, b = load_config(toml), load_config(yaml)
    assert a.plugins == b.plugins and a.harness == b.harness and a.config_hash == b.config_hash


def test_unreadable_or_invalid_files_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[[plugins]\n")
    with pytest.raises(ConfigError, match=f"{broken}: invalid TOML"):
        load_config(broken)
    bad_harness = tmp_path / "h.toml"
    bad_harness.write_text("[harness]\nsnapshot_every = 0\n")
    with pytest.raises(ConfigError, match="snapshot_every must be a positive integer"):
        build_harness(bad_harness, journal=tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


def test_hooks_see_events_and_plugins_stop_after_the_run(tmp_path):
    config = _config(_entry("watch"))
    with build_harness(config, journal=tmp_path / "j.jsonl", run_id="r") as recording:
        recording.harness.start_run(agent="x:y")
        recording.harness.end_run("ok")
    assert [line for line in LOG if line.startswith("event")] == ["event watch 1", "event watch 2"]
    assert LOG[-1] == "stop watch"
    assert not hasattr(recording.plugins.plugins["watch"].context, "sink")  # no path to the journal


def test_a_bad_entry_point_leaves_no_journal(tmp_path):
    from replay_tui.harness import record_run

    config = _config(_entry("watch"))
    with pytest.raises(ValueError, match="has no attribute 'nope'"):
        record_run(config, "tests.harness.plugins_for_tests:nope", ["x"], journal=tmp_path / "j.jsonl")
    assert not (tmp_path / "j.jsonl").exists()


def test_a_plugin_that_fails_to_stop_is_reported_after_all_stopped(tmp_path, monkeypatch):
    from replay_tui.harness import HarnessError

    from .plugins_for_tests import Recorder

    def broken_stop(self):
        LOG.append(f"stop-fails {self.context.plugin_id}")
        raise OSError("disk gone")

    config = _config(_entry("a"), _entry("b", ["a"]))
    with pytest.raises(HarnessError, match="plugins failed to stop: b: OSError: disk gone"):
        with build_harness(config, journal=tmp_path / "j.jsonl") as recording:
            monkeypatch.setattr(Recorder, "stop", broken_stop)
            recording.plugins.plugins["a"].stop = lambda: LOG.append("stop a")  # type: ignore[method-assign]
    assert LOG[-2:] == ["stop-fails b", "stop a"]
