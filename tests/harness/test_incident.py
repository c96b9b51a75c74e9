"""The incident: the buggy CRM agent gains `include_inactive` at step-23, and only there."""

from __future__ import annotations

from .helpers import logical, record_crm


def test_fixed_and_buggy_agree_until_the_step_23_tool_call(tmp_path):
    fixed = record_crm(tmp_path, "fixtures.agents.crm:agent", name="fixed")
    buggy = record_crm(tmp_path, "fixtures.agents.crm_incident:agent", name="buggy")

    # run.started names the entry point; everything else in it is the same run setup
    assert fixed[0].payload["agent"] == "fixtures.agents.crm:agent"
    assert buggy[0].payload["agent"] == "fixtures.agents.crm_incident:agent"
    strip_agent = lambda event: {k: v for k, v in event.payload.items() if k not in ("agent", "environment")}  # noqa: E731
    assert strip_agent(fixed[0]) == strip_agent(buggy[0])

    first_difference = next(
        position
        for position in range(1, min(len(fixed), len(buggy)))
        if logical(fixed[position]) != logical(buggy[position])
    )
    expected, actual = fixed[first_difference], buggy[first_difference]
    assert (actual.kind, actual.step_id) == ("tool.call", "step-23")
    assert (expected.kind, expected.step_id) == ("tool.call", "step-23")

    # ... and that tool.call differs only in the extra argument (and so in its key)
    extra = {k: v for k, v in actual.payload["arguments"].items() if k not in expected.payload["arguments"]}
    assert extra == {"include_inactive": True}
    assert {k: v for k, v in actual.payload["arguments"].items() if k != "include_inactive"} == expected.payload[
        "arguments"
    ]
    assert actual.payload["call_key"] != expected.payload["call_key"]
    assert {k: v for k, v in actual.payload.items() if k not in ("arguments", "call_key")} == {
        k: v for k, v in expected.payload.items() if k not in ("arguments", "call_key")
    }

    # the condition is hidden in state: the step-22 retry was served by the legacy replica
    replica = [
        event.step_id
        for event in buggy[:first_difference]
        if event.kind == "state.transition"
        and any(op.get("path") == "/served_by" and op.get("value") == "replica-legacy" for op in event.payload["patch"])
    ]
    assert replica == ["step-22"]

    # the wrong answer
    assert fixed[-1].payload["output"] == "There were 388 active customers in the east region in October 2026."
    assert buggy[-1].payload["output"] == "There were 390 active customers in the east region in October 2026."
