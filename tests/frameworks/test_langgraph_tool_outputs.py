"""What ToolNode hands the graph, kept as the journal keeps it and rebuilt the same: ToolMessages (content
blocks and artifacts in their own key order), Commands (updates, goto, Send), lists of them; what has no
record is refused while recording, and a hostile record is refused at replay naming the field."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command, Send

from replay_tui.harness.frameworks.langgraph.tool_outputs import (
    UnrecordableOutput,
    _Unusable,
    output_from_record,
    output_record,
)
from replay_tui.harness.harness import in_journal_order

CALL = {"name": "lookup", "id": "call_1", "args": {"sku": "S-1"}}


def _through_the_journal(output: Any) -> Any:
    """Record, put in the journal's order (members sorted, as a replay serves it), rebuild."""
    return output_from_record(CALL, in_journal_order(output_record(CALL, output)))


def test_a_tool_message_comes_back_with_its_blocks_and_artifact_in_their_own_order() -> None:
    blocks = [{"type": "text", "text": "hi"}, {"type": "image", "url": "https://example.test/a.png"}]
    message = ToolMessage(blocks, tool_call_id="call_1", name="lookup", artifact={"z": 1, "a": {"y": 2, "b": 3}})
    rebuilt = _through_the_journal(message)
    assert (rebuilt.content, rebuilt.artifact, rebuilt.status) == (message.content, message.artifact, "success")
    assert orjson.dumps(rebuilt.content) == orjson.dumps(blocks)  # key order too
    assert list(rebuilt.artifact) == ["z", "a"] and list(rebuilt.artifact["a"]) == ["y", "b"]
    assert (rebuilt.tool_call_id, rebuilt.name) == ("call_1", "lookup")


def test_a_plain_text_message_keeps_a_small_record() -> None:
    record = output_record(CALL, ToolMessage("7 in stock", tool_call_id="call_1", name="lookup", status="error"))
    assert record == {"content": "7 in stock", "status": "error"}


def test_a_command_comes_back_with_its_update_and_goto() -> None:
    update = {"user_name": "Ada", "messages": [ToolMessage("Remembered", tool_call_id="call_1")], "z": {"b": 1, "a": 2}}
    command = Command(update=update, goto=[Send("worker", {"n": 1}), "review"], graph=Command.PARENT)
    rebuilt = _through_the_journal(command)
    assert list(rebuilt.update) == ["user_name", "messages", "z"] and list(rebuilt.update["z"]) == ["b", "a"]
    assert rebuilt.update["messages"][0].content == "Remembered" and rebuilt.graph == Command.PARENT
    assert rebuilt.goto == [Send("worker", {"n": 1}), "review"]
    pairs = _through_the_journal(Command(update=[("messages", AIMessage("x"))]))
    assert pairs.update[0][0] == "messages" and pairs.update[0][1].content == "x"


def test_several_outputs_come_back_as_a_list() -> None:
    outputs = [ToolMessage("a", tool_call_id="call_1"), Command(goto="next")]
    rebuilt = _through_the_journal(outputs)
    assert rebuilt[0].content == "a" and rebuilt[1].goto == "next"


@pytest.mark.parametrize(
    ("output", "named"),
    [
        (Command(resume="yes"), "resumes an interrupt"),
        (ToolMessage("x", tool_call_id="call_1", artifact={1, 2}), "artifact (set)"),
        (Command(update=object()), "update is a object"),
        ("a bare string", "gave ToolNode a str"),
    ],
)
def test_what_has_no_record_is_refused_naming_the_tool(output: Any, named: str) -> None:
    with pytest.raises(UnrecordableOutput, match="tool 'lookup'") as refused:
        output_record(CALL, output)
    assert named in str(refused.value)


@pytest.mark.parametrize(
    ("record", "field"),
    [
        (5, ""),
        ({"content": {"a": 1}}, ""),
        ({"content": "x", "status": "fine"}, ""),
        ({"content": [{"type": "text", "text": "a"}], "content_json": '[{"type":"text","text":"b"}]'}, ".content_json"),
        ({"content": "x", "artifact": {"a": 1}, "artifact_json": "{not json"}, ".artifact_json"),
        ({"command": {"graph": "elsewhere"}}, ".command"),
        ({"command": {"update": [["k", {"json": "[1"}]]}}, ".command.update[0][1].json"),
        ({"command": {"update": [["m", {"messages": '[{"type": "nope"}]'}]]}}, ".command.update[0][1].messages"),
        ({"command": {"goto": [{"send": 1}]}}, ".command.goto[0]"),
        ({"outputs": []}, ".outputs"),
    ],
)
def test_a_hostile_record_is_refused_naming_the_field(record: Any, field: str) -> None:
    with pytest.raises(_Unusable) as refused:
        output_from_record(CALL, record)
    assert refused.value.schema_error(7).field == f"payload.result{field}"
