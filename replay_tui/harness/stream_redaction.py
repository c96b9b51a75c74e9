"""Redaction of a streamed text as it passes (the reference: STREAMING.md beside this file).

A *channel* is one text a stream builds piece by piece: an answer's text, one tool call's arguments.
``ChannelRedactor.feed(delta)`` returns the part of the redacted text that can be handed over now, and
``finish()`` the rest. It holds back only what could still turn out to be part of a secret:

* the token at the end of what arrived (the next delta may make it a key, a random token, a URL with a
  password); nothing is cut but after whitespace, so every token is judged whole;
* a word that introduces a credential after a space (``Bearer``, ``Basic``) and the token after it;
* an assignment to a sensitive name whose value has not ended (``password = "a b``, ``DB_TOKEN=ab``);
* a private key whose ``-----END ... PRIVATE KEY-----`` has not arrived;
* a command line whose password may still arrive (``sshpass -p``, ``--password``), to its line's end;
* JSON (a text whose first character is ``{`` or ``[``): each key and value until it ends, a pair that may
  turn out to be a ``{"name": "Authorization", "value": ...}`` header, a value under a sensitive key.

What it hands over, joined, does not depend on how the text was cut into deltas. For a text that is not
JSON it is what the harness's redaction makes of the whole text at once; JSON is redacted member by member
as the harness redacts parsed JSON (keeping the text's own layout), then as text. Either way the result is
a fixed point of the harness's redaction, so the journal holds what the caller saw.
"""

from __future__ import annotations

import dataclasses
import re
import weakref
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..journal import detectors
from ..journal.command_line import open_command_start
from .redaction import REDACTED, Redactor

#: The key a channel's text is judged under: any name neither sensitive nor id-like judges alike.
TEXT_KEY = "content"
#: Words after which a credential follows a space (the ``Bearer`` and ``Basic`` formats, the schemes
#: an assignment may name), lower case.
_SCHEME_WORDS = ("bearer", "basic", "token", "digest", "negotiate", "apikey", "sso-key")
#: An assignment at the end of the text that may still get (or is still getting) its value: a name,
#: an optional quote, an operator, an optional scheme word, and a value that has not ended.
_OPEN_ASSIGNMENT = re.compile(
    r"""(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)["']?[ \t]*"""
    r"""(?:[=:][ \t]*(?:[A-Za-z][A-Za-z0-9_-]*(?:[ \t]+|\Z))?(?:"[^"\n]{0,300}|'[^'\n]{0,300}|[^\s"'&,;<>(){}\[\]]*)?)?\Z"""
)
_ASSIGNMENT_WINDOW = 2048
_MARK = "#"  # put before a piece of text when it is redacted (see StreamPolicy.scrub_text)
_MARKER_ROOM = 48  # bytes kept free under the cap for "…[truncated N bytes]"
_FIXED_POINT_ROUNDS = 4  # redactions of a segment at most, until it is left alone
_CUT_TRIES = 8  # cuts tried, from the last back, in a window that holds a secret (then it waits for more)  # how far back an open assignment is looked for (a name, spaces and a quoted value)
_KEY_HEADER = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_KEY_FOOTER = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
#: What a URL's user and password cannot hold (so a comma after one of them ends any URL credential).
_NOT_IN_USERINFO = frozenset(" \t\r\n\f\v/@\"'<>")
_PAIR_FIELDS = frozenset({"name", "key", "header", "field", "value"})
_HEADER_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_SPACE = re.compile(r"\s")


class StreamPolicy:
    """What a harness's redactor needs to redact a stream: segments are scrubbed with its rules less the
    length cap (the cap is the whole text's, applied by the channel)."""

    def __init__(self, redactor: Redactor) -> None:
        rules = redactor.rules
        self.enabled = rules.enabled
        self.cap = rules.max_body_bytes
        self.redactor = redactor
        self._uncapped = (
            redactor if rules.max_body_bytes is None else Redactor(dataclasses.replace(rules, max_body_bytes=None))
        )
        # an extra detector's pattern may span spaces: then text is only cut after a line break
        self.lines_only = bool(rules.extra_detectors)
        self._keys: dict[str, tuple[str, bool]] = {}

    def scrub_text(self, text: str, key: str | None) -> str:
        """``text`` redacted as a string under ``key`` until the redaction leaves it alone (a marker can give
        the next token the start a detector wants: ``]AKIA…``), and never judged as a JSON document (``#``
        before it: a piece cut from a longer text is no document, whatever it starts with; the mark is no part
        of a token, a name, a quote or a URL, and is written as itself, so the redactor's byte gate reads the
        piece as the whole text's)."""
        for _ in range(_FIXED_POINT_ROUNDS):
            probe = _MARK + text
            value = self._uncapped.redact_value(probe if key is None else {key: probe})
            redacted = value if key is None else next(iter(value.values()))
            redacted = redacted[1:] if isinstance(redacted, str) and redacted[:1] == _MARK else str(redacted)
            if redacted == text:
                break
            text = redacted
        return text

    def judge(self, key: str | None, value: Any) -> Any:
        """``value`` as the harness redacts it under ``key`` (a JSON member's name; None at the top)."""
        if key is None:
            return self.redactor.redact_value(value)
        return next(iter(self.redactor.redact_value({key: value}).values()))

    def key_verdict(self, key: str) -> tuple[str, bool]:
        """The name a member's key is written under, and whether its value is replaced whole."""
        verdict = self._keys.get(key)
        if verdict is None:
            ((name, value),) = self.redactor.redact_value({key: "x"}).items()
            verdict = (name, value == REDACTED)
            if len(self._keys) < 4096:
                self._keys[key] = verdict
        return verdict


_POLICIES: weakref.WeakKeyDictionary[Redactor, StreamPolicy] = weakref.WeakKeyDictionary()


def policy_for(redactor: Redactor) -> StreamPolicy:
    """The stream policy of ``redactor`` (made once per redactor)."""
    policy = _POLICIES.get(redactor)
    if policy is None:
        policy = _POLICIES[redactor] = StreamPolicy(redactor)
    return policy


class ChannelRedactor:
    """One channel's text, redacted as it streams (see the module docstring)."""

    def __init__(self, policy: StreamPolicy, key: str | None = TEXT_KEY) -> None:
        self._policy = policy
        self._key = key
        self._lead = ""  # whitespace before the first character, which decides JSON or text
        self._json: _JsonRedactor | None = None
        self._text: _TextRedactor | None = None
        self.released: list[str] = []  # what was handed over, in order

    def feed(self, delta: str) -> str:
        if not self._policy.enabled:
            return self._note(delta)
        if self._text is None:
            self._lead += delta
            if not self._lead.strip():
                return self._note("")
            self._start(self._lead.lstrip()[0] in "{[")
            delta, self._lead = self._lead, ""
        assert self._text is not None
        if self._json is not None:
            delta = self._json.feed(delta)
        return self._note(self._text.feed(delta))

    def finish(self) -> str:
        if not self._policy.enabled:
            return self._note("")
        if self._text is None:
            self._start(False)
            assert self._text is not None
            tail, self._lead = self._text.feed(self._lead), ""
        else:
            tail = self._text.feed(self._json.finish()) if self._json is not None else ""
        return self._note(tail + self._text.finish())

    @property
    def text(self) -> str:
        """All that was handed over."""
        return "".join(self.released)

    def _start(self, json: bool) -> None:
        if json:
            self._json = _JsonRedactor(self._policy)
        self._text = _TextRedactor(self._policy, self._key, commas=json)

    def _note(self, released: str) -> str:
        if released:
            self.released.append(released)
        return released


def redact_whole(policy: StreamPolicy, text: str, key: str | None = TEXT_KEY) -> str:
    """What a channel hands over for ``text`` arriving in one piece."""
    channel = ChannelRedactor(policy, key)
    return channel.feed(text) + channel.finish()


# -- text -----------------------------------------------------------------------------------------


class _TextRedactor:
    """Text cut into segments after whitespace (``commas``: after a comma too, in JSON text), each scrubbed
    on its own once no secret can span its end; the length cap is the whole text's."""

    def __init__(self, policy: StreamPolicy, key: str | None, *, commas: bool = False) -> None:
        self._policy = policy
        self._key = key
        self._commas = commas
        self._pending = ""
        self._cuts: list[int] = []  # the places in _pending a segment may end, ascending
        self._space_end = 0  # the place after the last whitespace in _pending (0: none)
        self._kept_bytes = 0  # redacted UTF-8 bytes handed over
        self._waiting = ""  # redacted text near the cap, handed over at the end if the whole fits
        self._dropped_bytes: int | None = None  # redacted bytes past the cap (None: the cap not reached)

    def feed(self, text: str) -> str:
        if not text:
            return ""
        start = len(self._pending)
        self._pending += text
        self._find_cuts(start)
        hold = self._hold()
        places = [place for place in self._cuts if place <= hold]
        if not places:
            return ""
        pending = self._pending
        whole = self._policy.scrub_text(pending, self._key)
        if places[-1] == len(pending):
            return self._release(len(pending), whole)
        if whole == pending:  # nothing in the window is a secret: what is before the cut stands as it is
            return self._release(places[-1], pending[: places[-1]])
        # a secret in the window: a cut stands where the two sides judged apart read as the window judged whole
        # (no secret spans it; the rules above only see the ones still arriving)
        for place in reversed(places[-_CUT_TRIES:]):
            head = self._policy.scrub_text(pending[:place], self._key)
            if head + self._policy.scrub_text(pending[place:], self._key) == whole:
                return self._release(place, head)
        return ""

    def finish(self) -> str:
        return self._release(len(self._pending), self._policy.scrub_text(self._pending, self._key)) + self._end_of_cap()

    def _find_cuts(self, start: int) -> None:
        pending, cuts = self._pending, self._cuts
        lines_only = self._policy.lines_only
        for match in _SPACE.finditer(pending, start):
            self._space_end = match.end()
            if not lines_only or match.group() == "\n":
                cuts.append(match.end())
        if self._commas and not lines_only:
            position = pending.find(",", start)
            added = False
            while position >= 0:
                if not self._in_url_credentials(position):
                    cuts.append(position + 1)
                    added = True
                position = pending.find(",", position + 1)
            if added:
                cuts.sort()

    def _in_url_credentials(self, comma: int) -> bool:
        """Whether the comma at ``comma`` may sit in a URL's user or password (``scheme://us,er:pw@``)."""
        scheme = self._pending.rfind("://", 0, comma)
        return scheme >= 0 and not any(char in _NOT_IN_USERINFO for char in self._pending[scheme + 3 : comma])

    def _hold(self) -> int:
        """Where the text that could still turn out to be part of a secret starts (len: nowhere)."""
        token = self._space_end  # the token the text ends in starts there (len: it ends in whitespace)
        if self._commas and self._cuts:
            token = max(token, self._cuts[-1])  # (in JSON text a comma ends a token too)
        return min(
            token, self._after_scheme(token), self._open_assignment(), self._open_private_key(), self._open_command()
        )

    def _after_scheme(self, token: int) -> int:
        """A scheme word (``Bearer``) followed by whitespace and at most the open token: from the word."""
        pending = self._pending
        end = token
        while end > 0 and pending[end - 1].isspace():
            end -= 1
        start = end
        while start > 0 and not pending[start - 1].isspace():
            start -= 1
        return start if start < end and pending[start:end].lower().endswith(_SCHEME_WORDS) else len(pending)

    def _open_assignment(self) -> int:
        pending = self._pending
        window = max(pending.rfind("\n") + 1, len(pending) - _ASSIGNMENT_WINDOW)
        squeezed = _NOT_NAME.sub("", pending[window:].lower())  # as is_secret_key squeezes a name
        if not any(hint in squeezed for hint in detectors.NAME_HINTS):
            return len(pending)
        match = _OPEN_ASSIGNMENT.search(pending, window)
        while match is not None:
            name = "".join(char for char in match.group("name").lower() if char.isalnum())
            if any(hint in name for hint in detectors.NAME_HINTS):
                return match.start()
            match = _OPEN_ASSIGNMENT.search(pending, match.end("name"))
        return len(pending)

    def _open_command(self) -> int:
        """A command line that may still get its password (``sshpass -p``, ``--password``): from its start."""
        window = max(0, len(self._pending) - _ASSIGNMENT_WINDOW)
        start = open_command_start(self._pending[window:], detectors.is_secret_key)
        return len(self._pending) if start is None else window + start

    def _open_private_key(self) -> int:
        pending = self._pending
        position = pending.find("-----BEGIN")
        while position >= 0:
            header = _KEY_HEADER.match(pending, position)
            if header is None:
                if pending.find("\n", position) < 0 and pending.find("-----", position + 10) < 0:
                    return position  # a header still arriving
                position = pending.find("-----BEGIN", position + 1)
                continue
            end = pending.find("-----END", header.end())
            if end < 0:
                return position  # open: everything after BEGIN may be the key
            footer = _KEY_FOOTER.match(pending, end)
            if footer is None and pending.find("\n", end) < 0 and pending.find("-----", end + 8) < 0:
                return position  # a footer still arriving
            position = pending.find("-----BEGIN", footer.end() if footer is not None else end + 1)
        return len(pending)

    def _release(self, cut: int, redacted: str) -> str:
        """Hand over ``_pending[:cut]``, which redacts to ``redacted``."""
        if cut <= 0:
            return ""
        self._pending = self._pending[cut:]
        self._cuts = [place - cut for place in self._cuts if place > cut]
        self._space_end = max(self._space_end - cut, 0)
        return self._within_cap(redacted)

    def _within_cap(self, redacted: str) -> str:
        """``redacted`` as far as the cap lets it. Past ``cap - _MARKER_ROOM`` bytes the text waits: if the whole
        ends within the cap it all goes, else what went is followed by ``…[truncated N bytes]``, which keeps the
        text within the cap (so the harness, which cuts what is over it, leaves it alone)."""
        cap = self._policy.cap
        if cap is None or not redacted:
            return redacted
        data = redacted.encode("utf-8")
        if self._dropped_bytes is not None:  # over the cap: counted, never handed over
            self._dropped_bytes += len(data)
            return ""
        free = max(cap - _MARKER_ROOM, 0) - self._kept_bytes
        if not self._waiting and len(data) <= free:
            self._kept_bytes += len(data)
            return redacted
        kept = "" if self._waiting else data[: max(free, 0)].decode("utf-8", "ignore")
        self._kept_bytes += len(kept.encode("utf-8"))
        self._waiting += data[len(kept.encode("utf-8")) :].decode("utf-8")
        if self._kept_bytes + len(self._waiting.encode("utf-8")) > cap:
            self._dropped_bytes = len(self._waiting.encode("utf-8"))
            self._waiting = ""
        return kept

    def _end_of_cap(self) -> str:
        """At the end: what waited below the cap, or the marker of what was over it."""
        if self._dropped_bytes is not None:
            return f"…[truncated {self._dropped_bytes} bytes]"
        waiting, self._waiting = self._waiting, ""
        return waiting


_NOT_NAME = re.compile(r"[^0-9a-z]+")


# -- JSON -----------------------------------------------------------------------------------------


@dataclass
class _Frame:
    """An object or list being read."""

    opener: str  # "{" or "["
    key: str | None  # the name its values are judged under (an object's own for its members' parent)
    state: str  # "{": key?, key, colon, value, comma; "[": value?, value, comma
    start: int  # where it starts in the raw text (absolute)
    member: str | None = None  # "{": the name of the member being read
    secret: bool = False  # "{": that member's value is replaced whole
    count: int = 0  # members or items begun
    hold: int | None = None  # the output mark of its hold (a possible header pair or headers object)


@dataclass
class _Token:
    """A string, number or literal being read."""

    kind: str  # "string" or "scalar"
    role: str  # "key" or "value"
    start: int  # where its raw text starts (absolute)
    key: str | None = None  # the name it is judged under
    secret: bool = False  # replaced whole (a value under a sensitive name)
    whole: bool = False  # held to its end and judged whole (a key, a secret, JSON kept in a string)
    stream: _TextRedactor | None = None  # a string value handed over as it comes
    lead: str = ""  # a string value's leading whitespace, before it is known whether it may be JSON
    decoded: list[str] = field(default_factory=list)  # decoded text not yet given to ``stream``
    escape: str = ""  # an escape sequence still arriving


class _JsonRedactor:
    """JSON redacted member by member as it streams, the way the harness redacts parsed JSON: a key and a
    scalar when they end, a string value as text as it comes (unless it may be JSON, judged whole), a value
    under a sensitive name replaced whole, an object or list that may be a header pair (or is a headers
    object) held to its end and replaced by the harness's reading of it when that differs. Text that turns
    out not to be JSON is handed on as it is from there (the text pass after this one judges it)."""

    def __init__(self, policy: StreamPolicy) -> None:
        self._policy = policy
        self._raw = ""  # the text from _base on
        self._base = 0
        self._position = 0  # the next character to read (absolute)
        self._stack: list[_Frame] = []
        self._token: _Token | None = None
        self._out: list[str] = []
        self._holds: list[int] = []  # output marks of open holds: nothing from the first on is handed over
        self._state = "root"  # root, inside, after, raw (not JSON)
        self._swallow: list[Any] | None = None  # [depth, in a string, escaped] of a container replaced whole

    def feed(self, text: str) -> str:
        if self._state == "raw":
            self._out.append(text)
            return self._take()
        self._raw += text
        end = self._base + len(self._raw)
        while self._position < end:
            self._step(self._raw[self._position - self._base])
            self._position += 1
            if self._state == "raw":
                self._out.append(self._raw[self._position - self._base :])
                break
        self._flush_string()
        return self._take()

    def finish(self) -> str:
        token = self._token
        if token is not None and self._state != "raw":
            self._flush_string()
            if token.secret:
                self._out.append(orjson.dumps(REDACTED).decode())
            elif token.stream is not None:
                self._out.append(_encode(token.stream.finish()) + token.escape)
            elif token.kind == "string" and token.role == "value" and not token.whole:
                text = _TextRedactor(self._policy, token.key)
                self._out.append('"' + _encode(text.feed(token.lead) + text.finish()))
            else:
                self._out.append(self._raw[token.start - self._base :])
        self._token = None
        self._holds.clear()
        return self._take()

    # -- structure ----------------------------------------------------------------------------
    def _step(self, char: str) -> None:
        if self._swallow is not None:
            self._swallow_char(char)
        elif self._token is not None:
            self._token_char(char)
        else:
            self._structure_char(char)

    def _structure_char(self, char: str) -> None:
        if char in " \t\r\n":
            self._out.append(char)
        elif self._state == "after":
            self._to_raw()
        elif not self._stack:
            if char in "{[":
                self._value(char, None, False)
            else:
                self._to_raw()
        elif self._stack[-1].opener == "{":
            self._object_char(self._stack[-1], char)
        else:
            self._list_char(self._stack[-1], char)

    def _object_char(self, frame: _Frame, char: str) -> None:
        state = frame.state
        if state in ("key?", "key") and char == '"':
            frame.count += 1
            if frame.count > 2 and frame.key != "headers":
                self._release_hold(frame)  # a third member: no header pair
            self._token = _Token("string", "key", self._position, whole=True)
        elif state == "colon" and char == ":":
            self._out.append(char)
            frame.state = "value"
        elif state == "value":
            frame.state = "comma"
            self._value(char, frame.member, frame.secret)
        elif state == "comma" and char == ",":
            self._out.append(char)
            frame.state = "key"
        elif state in ("key?", "comma") and char == "}":
            self._close(frame, char)
        else:
            self._to_raw()

    def _list_char(self, frame: _Frame, char: str) -> None:
        state = frame.state
        if state in ("value?", "comma") and char == "]":
            self._close(frame, char)
        elif state in ("value?", "value"):
            frame.state = "comma"
            frame.count += 1
            if frame.count > 2 or frame.count == 1 and char != '"':
                self._release_hold(frame)  # not ["Header-Name", value]
            self._value(char, frame.key, False)
        elif state == "comma" and char == ",":
            self._out.append(char)
            frame.state = "value"
        else:
            self._to_raw()

    def _value(self, char: str, key: str | None, secret: bool) -> None:
        """A value starts with ``char``, judged under ``key`` (``secret``: replaced whole)."""
        if char in "{[":
            if secret:
                self._out.append(orjson.dumps(REDACTED).decode())
                self._swallow = [1, False, False]
                return
            frame = _Frame(char, key, "key?" if char == "{" else "value?", self._position, hold=len(self._out))
            self._holds.append(len(self._out))
            self._out.append(char)
            self._stack.append(frame)
            self._state = "inside"
        elif char == '"':
            self._token = _Token("string", "value", self._position, key=key, secret=secret, whole=secret)
        elif char in "-0123456789tfn":
            self._token = _Token("scalar", "value", self._position, key=key, secret=secret)
        else:
            self._to_raw()

    def _close(self, frame: _Frame, char: str) -> None:
        self._out.append(char)
        self._stack.pop()
        if frame.hold is not None:
            self._settle(frame)
        if not self._stack:
            self._state = "after"

    def _settle(self, frame: _Frame) -> None:
        """A held container has ended: what was written of it stands if the harness reads it alike, else
        the harness's reading replaces it (a header pair, a headers object)."""
        assert frame.hold is not None
        mark = frame.hold
        raw = self._raw[frame.start - self._base : self._position + 1 - self._base]
        try:
            judged = self._policy.judge(frame.key, orjson.loads(raw))
            written = orjson.loads("".join(self._out[mark:]))
        except orjson.JSONDecodeError:
            judged = written = None
        if written != judged:
            del self._out[mark:]
            self._out.append(orjson.dumps(judged).decode())
        self._release_hold(frame)

    def _release_hold(self, frame: _Frame) -> None:
        if frame.hold is not None:
            self._holds.remove(frame.hold)
            frame.hold = None

    # -- tokens -------------------------------------------------------------------------------
    def _token_char(self, char: str) -> None:
        token = self._token
        assert token is not None
        if token.kind == "scalar":
            if char in _SCALAR_CHARACTERS:
                return
            self._end_scalar(token)
            if self._state != "raw":
                self._structure_char(char)
        elif token.escape:
            token.escape += char
            self._escape_progress(token)
        elif char == "\\":
            token.escape = char
        elif char == '"':
            self._end_string(token)
        elif char < " ":
            self._to_raw()  # a control character in a string: not JSON
        else:
            self._decoded(token, char)

    def _escape_progress(self, token: _Token) -> None:
        escape = token.escape
        if escape[1] != "u":
            decoded = _ESCAPES.get(escape[1])
            if decoded is None:
                self._to_raw()
            else:
                token.escape = ""
                self._decoded(token, decoded)
            return
        length = len(escape)
        if 2 < length <= 6 or 8 < length <= 12:
            if escape[-1] not in _HEX:
                self._to_raw()
                return
        elif length in (7, 8) and escape[-1] != "\\u"[length - 7]:
            self._to_raw()  # a high surrogate without its low half: orjson refuses it
            return
        if length == 6:
            code = int(escape[2:6], 16)
            if 0xDC00 <= code <= 0xDFFF:
                self._to_raw()  # a low surrogate alone
            elif not 0xD800 <= code <= 0xDBFF:
                token.escape = ""
                self._decoded(token, chr(code))
        elif length == 12:
            high, low = int(escape[2:6], 16), int(escape[8:12], 16)
            if not 0xDC00 <= low <= 0xDFFF:
                self._to_raw()
                return
            token.escape = ""
            self._decoded(token, chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)))

    def _decoded(self, token: _Token, text: str) -> None:
        if token.whole:
            return
        if token.stream is not None:
            token.decoded.append(text)
            return
        token.lead += text
        stripped = token.lead.lstrip()
        if not stripped:
            return
        if stripped[0] in "{[":
            token.whole = True  # JSON kept in a string is judged whole
            return
        token.stream = _TextRedactor(self._policy, token.key)
        self._out.append('"')
        token.decoded.append(token.lead)
        token.lead = ""

    def _flush_string(self) -> None:
        token = self._token
        if token is not None and token.stream is not None and token.decoded:
            self._out.append(_encode(token.stream.feed("".join(token.decoded))))
            token.decoded.clear()

    def _end_string(self, token: _Token) -> None:
        self._flush_string()
        raw = self._raw[token.start - self._base : self._position + 1 - self._base]
        self._token = None
        if token.role == "key":
            self._end_key(raw)
            return
        if token.whole:
            value = orjson.loads(raw)
            judged = self._policy.judge(token.key, value)
            self._out.append(raw if judged == value else orjson.dumps(judged).decode())
        elif token.stream is not None:
            self._out.append(_encode(token.stream.finish()) + '"')
        else:  # only whitespace, or nothing
            text = _TextRedactor(self._policy, token.key)
            self._out.append('"' + _encode(text.feed(token.lead) + text.finish()) + '"')
        frame = self._stack[-1] if self._stack else None
        if frame is not None and frame.opener == "[" and frame.count == 1 and frame.hold is not None:
            first = orjson.loads(raw)
            if not _HEADER_NAME.fullmatch(first):
                self._release_hold(frame)  # the first item names no header: no pair

    def _end_key(self, raw: str) -> None:
        frame = self._stack[-1]
        name = orjson.loads(raw)
        written, secret = self._policy.key_verdict(name)
        self._out.append(raw if written == name else orjson.dumps(written).decode())
        frame.member, frame.secret, frame.state = name, secret, "colon"
        if name not in _PAIR_FIELDS and frame.key != "headers":
            self._release_hold(frame)

    def _end_scalar(self, token: _Token) -> None:
        raw = self._raw[token.start - self._base : self._position - self._base]
        self._token = None
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self._to_raw(REDACTED if token.secret else raw)
            return
        if token.secret:
            judged = self._policy.judge(token.key, value)
            self._out.append(raw if judged == value else orjson.dumps(judged).decode())
        else:
            self._out.append(raw)

    def _swallow_char(self, char: str) -> None:
        state = self._swallow
        assert state is not None
        if state[1]:
            if char == '"' and not state[2]:
                state[1] = False
            state[2] = not state[2] and char == "\\"
        elif char == '"':
            state[1] = True
        elif char in "{[":
            state[0] += 1
        elif char in "}]":
            state[0] -= 1
            if state[0] == 0:
                self._swallow = None

    def _to_raw(self, written: str | None = None) -> None:
        """Not JSON from here: the character being read and the rest are handed on as they are (the text pass
        after this one still judges them). ``written``: what stands for the token that ended here."""
        token, position = self._token, self._position
        if written is not None:
            self._out.append(orjson.dumps(written).decode() if written == REDACTED else written)
        elif token is not None:
            if token.secret:
                self._out.append(orjson.dumps(REDACTED).decode())
            elif token.stream is not None:
                self._flush_string()
                self._out.append(_encode(token.stream.finish()))
            elif token.kind == "string" and token.role == "value" and not token.whole:
                self._out.append('"' + _encode(token.lead))
            else:
                position = token.start  # nothing of it was written
        self._out.append(self._raw[position - self._base : self._position + 1 - self._base])
        self._token = None
        self._swallow = None
        self._holds.clear()
        self._state = "raw"

    def _take(self) -> str:
        limit = self._holds[0] if self._holds else len(self._out)
        if limit == 0:
            return ""
        out = "".join(self._out[:limit])
        del self._out[:limit]
        self._holds = [mark - limit for mark in self._holds]
        for frame in self._stack:
            if frame.hold is not None:
                frame.hold -= limit
        self._trim()
        return out

    def _trim(self) -> None:
        """Drop the raw text no held container or token needs any more."""
        needed = self._position
        for frame in self._stack:
            if frame.hold is not None:
                needed = min(needed, frame.start)
                break
        if self._token is not None:
            needed = min(needed, self._token.start)
        if needed > self._base:
            self._raw = self._raw[needed - self._base :]
            self._base = needed


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = frozenset("0123456789abcdefABCDEF")
_SCALAR_CHARACTERS = frozenset("-+.0123456789eEtruefalsn")


def _encode(text: str) -> str:
    """``text`` as the inside of a JSON string."""
    return orjson.dumps(text).decode()[1:-1] if text else ""
