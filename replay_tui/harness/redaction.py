"""Redaction: applied to every payload before it is hashed or written.

Rules, in order: a capture allowlist (top-level fields kept per kind), dropped
headers, JSONPath replacements, then the shared secret detectors of
``journal.detectors`` (the ones ``scan`` uses): values under sensitive key names
and header pairs, credential formats, name=value in text, JSON inside strings,
base64 of a secret and random-looking tokens; a secret used as an object key is
replaced by ``[REDACTED:<hash8>]``. Last, a ``max_body_bytes`` cap on strings.

Speed matters (budget: a few µs per event), so the common case is one orjson
dump and a gate over its bytes; only a payload that might hold a secret is
copied and walked, and the walk gates each object, list and long string again,
descending only into the parts that might hold one. Objects and lists found clean
are kept (by their bytes, bounded) for the rest of the run: a model request resends
the whole conversation, and one credential header makes the whole request need a
walk. Fields replay matches on (step ids, tool names) are never rewritten: a
secret there is an error naming the field.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from ..journal import detectors
from ..journal.http_shape import CREDENTIAL_HEADERS
from .jsonpath import JsonPath, JsonPathError, parse_jsonpath
from .streaming import Edit, remap_boundaries, resplit_sse, resplit_sse_arguments, split_stream

REDACTED = "[REDACTED]"

#: Where the body of each kind lives in its payload (the part the rules look at).
BODY_FIELD: Mapping[str, str] = {
    "input.received": "content",
    "model.request": "request",
    "model.response": "response",
    "tool.call": "arguments",
    "tool.result": "result",
    "run.ended": "output",
}

DEFAULT_CAPTURE: Mapping[str, tuple[str, ...]] = {
    "model.request": ("model", "system", "messages", "tools", "tool_choice", "params", "headers", "metadata", "stream"),
}
DEFAULT_DROP_HEADERS = CREDENTIAL_HEADERS

#: The payload fields that hold user data, per kind; the rest is the harness's own.
REDACTED_FIELDS: Mapping[str, tuple[str, ...]] = {
    "run.started": ("initial_state",),
    "input.received": ("content", "context"),
    "model.request": ("request",),
    "model.response": ("response", "error"),
    "tool.call": ("arguments",),
    "tool.result": ("result", "error"),
    "run.ended": ("output", "error"),
}

#: Detector names of earlier versions, still accepted in configs (and recorded run.started events).
DETECTOR_ALIASES: Mapping[str, tuple[str, ...]] = {
    "aws-access-key": ("aws-access-key-id",),
    "openai-anthropic-key": ("openai-key", "anthropic-key"),
    "url-credentials": ("url-password",),
    "url-query-secret": ("assignment",),
}
#: Fields replay matches on: never rewritten, so a secret there stops the recording.
MATCHED_PAYLOAD_FIELDS = ("tool",)

# Verdicts of the gate on a serialized object or list (see Redactor._judge).
_CLEAN, _WALK, _SPLIT = "clean", "walk", "split"
#: An object or list bigger than this (serialized) is judged part by part. The gate itself skips the strings
#: it found clean before (``detectors.might_hold_secret``), so a model answer or a short conversation is
#: judged whole: splitting it serializes and looks up each part again, about 20 µs per answer.
_SPLIT_BYTES = 8192
#: Objects and lists deeper in a payload than this are walked without being gated (bounds the
#: work of a deeply nested payload, whose every level would search all that is below it).
_GATED_LEVELS = 16
#: Strings this long are gated on their serialized bytes before the detectors run on them.
_GATE_STRING_CHARS = 64
#: The cache of clean values: entries up to 64 KiB, 8 MiB in all (then it starts again).
_CLEAN_ENTRY_BYTES = 64 * 1024
_CLEAN_CACHE_BYTES = 8 * 1024 * 1024
#: Strings up to this long found clean are kept too (with the name they sat under), this many.
_CACHED_STRING_CHARS = 256
_CLEAN_STRINGS = 8192


class RedactionConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Replacement:
    path: JsonPath
    value: Any = REDACTED
    kind: str | None = None


@dataclass
class RedactionRules:
    enabled: bool = True
    max_body_bytes: int | None = 1024 * 1024
    capture: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_CAPTURE))
    drop_headers: tuple[str, ...] = DEFAULT_DROP_HEADERS
    default_key_names: bool = True  # the shared sensitive-name table (journal.detectors)
    key_names: tuple[str, ...] = ()  # extra names (regexes), searched in the key case-insensitively
    key_allow: tuple[str, ...] = ()  # lower-case names never treated as sensitive
    detectors: tuple[str, ...] = detectors.DETECTOR_NAMES  # shared detectors in use
    extra_detectors: Mapping[str, str] = field(default_factory=dict)  # name -> regex
    replacements: tuple[Replacement, ...] = ()

    @classmethod
    def from_config(cls, table: Mapping[str, Any], *, source: str = "[redaction]") -> RedactionRules:
        """Build rules from a ``[redaction]`` table. Lists extend the defaults unless
        ``use_defaults = false``; ``detectors`` may be true, false or a list of names."""
        known = {
            "enabled",
            "use_defaults",
            "max_body_bytes",
            "capture",
            "drop_headers",
            "key_names",
            "key_allow",
            "detectors",
            "extra_detectors",
            "replace",
        }
        unknown = set(table) - known
        if unknown:
            raise RedactionConfigError(f"{source}: unknown key(s) {sorted(unknown)}; expected {sorted(known)}")
        defaults = table.get("use_defaults", True)
        rules = cls() if defaults else cls(capture={}, drop_headers=(), default_key_names=False, detectors=())
        rules.enabled = bool(table.get("enabled", True))
        if "max_body_bytes" in table:
            cap = table["max_body_bytes"]
            if cap is not None and (type(cap) is not int or cap < 64):
                raise RedactionConfigError(f"{source}: max_body_bytes must be an integer >= 64 (or absent)")
            rules.max_body_bytes = cap
        capture = table.get("capture", {})
        if not isinstance(capture, dict) or not all(isinstance(v, list) for v in capture.values()):
            raise RedactionConfigError(f"{source}: capture must map an event kind to a list of field names")
        rules.capture = {**rules.capture, **{kind: tuple(fields) for kind, fields in capture.items()}}
        rules.drop_headers = rules.drop_headers + tuple(h.lower() for h in _strings(table, "drop_headers", source))
        rules.key_names = tuple(re.escape(k) for k in _strings(table, "key_names", source))
        rules.key_allow = tuple(k.lower() for k in _strings(table, "key_allow", source))
        chosen = table.get("detectors", True)
        if chosen is False:
            rules.detectors = ()
        elif isinstance(chosen, list):
            known_names = set(detectors.DETECTOR_NAMES) | set(DETECTOR_ALIASES)
            missing = [name for name in chosen if name not in known_names]
            if missing:
                raise RedactionConfigError(
                    f"{source}: unknown detector(s) {missing}; known: {list(detectors.DETECTOR_NAMES)}"
                )
            rules.detectors = tuple(dict.fromkeys(n for name in chosen for n in DETECTOR_ALIASES.get(name, (name,))))
        extra = table.get("extra_detectors", {})
        if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
            raise RedactionConfigError(f"{source}: extra_detectors must map a name to a regex")
        rules.extra_detectors = dict(extra)
        replacements = []
        for position, item in enumerate(table.get("replace", []), 1):
            if not isinstance(item, dict) or not isinstance(item.get("path"), str):
                raise RedactionConfigError(
                    f"{source}: replace[{position}] needs a 'path' (JSONPath from the payload, e.g. $.request.metadata.email)"
                )
            try:
                path = parse_jsonpath(item["path"])
            except JsonPathError as error:
                raise RedactionConfigError(f"{source}: replace[{position}]: {error}") from None
            replacements.append(Replacement(path, item.get("value", REDACTED), item.get("kind")))
        rules.replacements = tuple(replacements)
        return rules


def _strings(table: Mapping[str, Any], key: str, source: str) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RedactionConfigError(f"{source}: {key} must be a list of strings")
    return value


class _CleanValues:
    """Objects and lists (serialized) and short strings (with the name above them) that the rules left
    alone, bounded: a model request resends the conversation and the tool schemas, found clean once."""

    __slots__ = ("values", "bytes", "strings")

    def __init__(self) -> None:
        self.values: set[bytes] = set()
        self.bytes = 0
        self.strings: set[tuple[str, str | None]] = set()


_DEFAULT_RULES = RedactionRules()
#: The default rules' values left alone, for every Redactor of them in the process: a harness per run found
#: the tool schemas and system prompt of the last run's requests clean again (~0.1 ms a model request of a
#: framework run). A value's verdict depends on the rules alone; other rules keep a cache of their own.
_DEFAULT_RULES_CLEAN = _CleanValues()


class SecretInMatchedFieldError(ValueError):
    """A secret in a field replay matches on (a step id, a tool name): it cannot be rewritten
    without breaking replay, and must not be written, so the recording stops."""


def key_marker(key: str) -> str:
    """What a secret used as an object key becomes: stable, so equal keys stay equal."""
    return f"[REDACTED:{hashlib.sha256(key.encode()).hexdigest()[:8]}]"


class _KindPlan(NamedTuple):
    fields: tuple[str, ...]
    body_field: str | None
    capture: frozenset[str] | None
    replacements: tuple[Replacement, ...]


class _Scrubbed(NamedTuple):
    text: str
    edits: list[Edit]


class Redactor:
    """Compiled rules. ``redact(kind, payload)`` returns the payload to record
    (the input object itself when nothing applies; never mutated).

    Only the user-data fields of a payload are looked at (``REDACTED_FIELDS``);
    the harness's own fields (hashes, ids, tool names) are left alone.
    """

    def __init__(self, rules: RedactionRules | None = None) -> None:
        self.rules = rules = rules or RedactionRules()
        try:
            self._extra_keys = (
                re.compile("|".join(f"(?:{name})" for name in rules.key_names), re.IGNORECASE)
                if rules.key_names
                else None
            )
            self._extra = [(name, re.compile(pattern)) for name, pattern in rules.extra_detectors.items()]
        except re.error as error:
            raise RedactionConfigError(f"invalid redaction pattern: {error}") from None
        self._enabled = frozenset(rules.detectors)
        self._shared = bool(self._enabled) or rules.default_key_names
        literal = [re.sub(r"\\(.)", r"\1", name) for name in rules.key_names]
        literal_ok = all(re.escape(text) == name for text, name in zip(literal, rules.key_names))
        self._extra_key_hints = tuple(text.lower().encode() for text in literal) if literal_ok else None
        self._extra_literals = _required_literals(pattern for _, pattern in self._extra)
        self._allow = frozenset(rules.key_allow)
        self._drop_headers = frozenset(rules.drop_headers)
        # a dropped header's name as the serialization spells it (a headers key, a pair's name), without its
        # quotes: inside JSON kept in a string they are escaped (\"x-tenant\"), and that header is dropped too
        # (the shared gate already stops at every sensitive name, which the default headers all are)
        self._drop_quoted = tuple(
            orjson.dumps(name.lower())[1:-1]
            for name in self._drop_headers
            if not (self._shared and detectors.is_secret_key(name))
        )
        self._replacements: dict[str | None, list[Replacement]] = {}
        for replacement in rules.replacements:
            self._replacements.setdefault(replacement.kind, []).append(replacement)
        self._cap = rules.max_body_bytes
        self._plans: dict[str, _KindPlan] = {}  # what redact looks at for each kind, made on first use
        self._matched_cache: dict[str, str | None] = {}
        # what the rules leave alone; the default rules' is the process's (a subclass may judge otherwise)
        default = type(self) is Redactor and rules == _DEFAULT_RULES
        self._cache = _DEFAULT_RULES_CLEAN if default else _CleanValues()

    # -- the entry points ----------------------------------------------------------------------
    def redact(self, kind: str, payload: dict[str, Any], *, serialized: bytes | None = None) -> dict[str, Any]:
        """``serialized``: the whole payload's JSON, when the caller has it (the harness writes the line from
        it). The gate is asked of it first: what holds nothing any rule could change holds nothing in the
        fields redaction looks at either, and a payload found clean is not serialized again."""
        if not self.rules.enabled:
            return payload
        plan = self._plans.get(kind) or self._plan(kind)
        fields, body_field, capture, replacements = plan
        if not fields:
            return payload
        scope = {name: payload[name] for name in fields if name in payload}
        if not scope:
            return payload
        body = scope.get(body_field) if body_field else None
        trims = capture is not None and isinstance(body, dict) and not body.keys() <= capture
        edited = trims or bool(replacements)
        verdict: str | None = None
        if serialized is not None and not edited and len(serialized) <= _SPLIT_BYTES:
            if not self._needs_walk(serialized):
                return payload
            verdict = _WALK  # the gate found something in the whole: the fields are walked, not judged again
        data = orjson.dumps(scope)
        if verdict is None and not edited:
            verdict = self._judge(scope, data, None, top=True)
        if verdict is _CLEAN:
            return payload
        copy = orjson.loads(data)
        if trims and capture is not None and body_field is not None:
            copy[body_field] = {key: value for key, value in copy[body_field].items() if key in capture}
        for replacement in replacements:
            replacement.path.replace(copy, replacement.value)
        walked = self._walk(copy, None, 0, data=None if edited else data, verdict=verdict)
        if walked is copy and not edited or walked == scope:
            return payload
        out = {**payload, **walked}
        if kind == "model.response":
            out = self._keep_stream_consistent(payload, out)
        return out

    def _plan(self, kind: str) -> _KindPlan:
        """The fields of ``kind`` redact looks at, its capture allowlist and its replacements (once a kind:
        they were looked up, copied and joined for every event)."""
        capture = self.rules.capture.get(kind)
        plan = _KindPlan(
            REDACTED_FIELDS.get(kind, ()),
            BODY_FIELD.get(kind),
            frozenset(capture) if capture is not None else None,
            (*self._replacements.get(kind, ()), *self._replacements.get(None, ())),
        )
        if len(self._plans) < 256:  # kinds are few; a caller inventing them is not kept
            self._plans[kind] = plan
        return plan

    def redact_value(self, value: Any) -> Any:
        """A JSON value outside any payload (a framework's own state) under the same rules."""
        if not self.rules.enabled:
            return value
        data = orjson.dumps(value)
        if type(value) is dict or type(value) is list:
            verdict = self._judge(value, data, None, top=True)
        else:
            verdict = _WALK if self._needs_walk(data) else _CLEAN
        if verdict is _CLEAN:
            return value
        copy = orjson.loads(data)
        walked = self._walk(copy, None, 0, data=data, verdict=verdict)
        return value if walked is copy or walked == value else walked

    def secret_in_matched_field(self, name: str, value: Any) -> str | None:
        """The detector that finds a secret in ``value`` of a matched field, else None."""
        if type(value) is not str or not self.rules.enabled:
            return None
        if value not in self._matched_cache:
            if len(self._matched_cache) > 4096:
                self._matched_cache.clear()
            hits = self._hits(value, None, 0)
            self._matched_cache[value] = hits[0][2] if hits else None
        return self._matched_cache[value]

    def check_matched_fields(self, kind: str, step_id: str | None, payload: Mapping[str, Any]) -> None:
        """Raise SecretInMatchedFieldError when a step id or tool name holds a secret."""
        found = self.secret_in_matched_field("step_id", step_id)
        if found is not None:
            raise SecretInMatchedFieldError(
                f"{kind}: the step_id holds a secret ({found}); step ids are matched by replay and never redacted, "
                "so the recording stops. Use a step id without credentials."
            )
        for name in MATCHED_PAYLOAD_FIELDS:
            found = self.secret_in_matched_field(name, payload.get(name))
            if found is not None:
                raise SecretInMatchedFieldError(
                    f"{kind}: payload.{name} holds a secret ({found}); tool names are matched by replay and never "
                    "redacted, so the recording stops. Rename the tool."
                )

    # -- the gate ------------------------------------------------------------------------------
    def _needs_walk(self, data: bytes) -> bool:
        """False when no rule can change the JSON value serialized as ``data`` (a payload, or any
        object or list inside one): the common case, decided by byte searches at C speed."""
        if self._cap is not None and len(data) > self._cap:
            return True
        if detectors.folds_to_ascii(data):
            return True  # the lower-cased byte searches below cannot see such a name
        lowered = data.lower() if self._drop_quoted or self._extra_keys is not None or self._extra else data
        if any(name in lowered for name in self._drop_quoted):
            return True
        if self._shared and detectors.might_hold_secret(data):
            return True
        if self._extra:
            if self._extra_literals is None:
                return True  # a pattern with no literal every match holds: only the walk can tell
            for literals, folded in self._extra_literals:
                haystack = lowered if folded else data
                if any(literal in haystack for literal in literals):
                    return True
        if self._extra_keys is not None:
            if self._extra_key_hints is None:
                return True
            return any(hint in lowered for hint in self._extra_key_hints)
        return False

    def _judge(self, value: dict[str, Any] | list[Any], data: bytes, key: str | None, *, top: bool = False) -> str:
        """Whether ``value`` (serialized as ``data``, under ``key``; ``top``: a whole payload) is left
        as it is (``_CLEAN``), walked (``_WALK``), or walked without searching it whole first
        (``_SPLIT``): a big payload, list, or object holding a list, whose parts repeat from call to
        call (the conversation every model request resends) and are found in the cache of clean
        values instead of being searched again. A value under a sensitive name that is allowed
        (``key_allow``) is walked: the detectors judge its strings by that name."""
        if key is not None and detectors.is_secret_key(key):
            return _WALK
        if key != "headers" and data in self._cache.values:  # (a "headers" object loses members other objects keep)
            return _CLEAN
        if len(data) > _SPLIT_BYTES and (top or _holds_a_list(value)):
            return _SPLIT
        if self._needs_walk(data):
            return _WALK
        self._remember_clean(data)  # the gate knows no key or depth: clean under any of them
        return _CLEAN

    def _remember_clean(self, data: bytes) -> None:
        """Keep ``data`` as a value the rules leave alone (bounded: cleared when full)."""
        if len(data) > _CLEAN_ENTRY_BYTES:
            return
        cache = self._cache
        if cache.bytes + len(data) > _CLEAN_CACHE_BYTES:
            cache.values.clear()
            cache.bytes = 0
        if data not in cache.values:
            cache.values.add(data)
            cache.bytes += len(data)

    @property
    def _clean_bytes(self) -> int:
        return self._cache.bytes

    # -- the walk ------------------------------------------------------------------------------
    def _secret_key(self, key: str) -> bool:
        lowered = key.lower()
        if lowered in self._allow:
            return False
        if self.rules.default_key_names and detectors.is_secret_key(key):
            return True
        return self._extra_keys is not None and self._extra_keys.search(key) is not None

    def _walk(
        self,
        value: Any,
        key: str | None,
        depth: int,
        *,
        data: bytes | None = None,
        verdict: str | None = None,
        level: int = 0,
    ) -> Any:
        """``value`` with the rules applied: ``value`` itself when nothing changed, else a new value
        (whose unchanged parts are the input's own). ``data``: its serialization; ``verdict``: what
        ``_judge`` already said of it; ``level``: how deep in the payload it sits."""
        kind = type(value)
        if kind is dict or kind is list:
            if verdict is None and level > _GATED_LEVELS:
                verdict = _WALK  # each level searches what is below it again: deep down, only walk
            if data is None and verdict is None:
                data = orjson.dumps(value)
            if verdict is None and data is not None:
                verdict = self._judge(value, data, key)
                if verdict is _CLEAN:
                    return value
            out: Any
            if kind is dict:
                # the one member of an object the gate stopped at ({"request": ...}) would stop it too
                lone = verdict is _WALK and len(value) == 1
                out = self._walk_dict(value, key, depth, lone_member=lone, level=level)
            else:
                out = self._walk_list(value, key, depth, level=level)
            if out is value and data is not None and kind is dict and depth == 0 and key != "headers":
                # nothing to change: the same object is clean anywhere (its members carry their own
                # names; only a "headers" object or a list's strings depend on the name above them)
                self._remember_clean(data)
            return out
        if kind is str:
            cached = depth == 0 and len(value) <= _CACHED_STRING_CHARS
            strings = self._cache.strings
            if cached and (value, key) in strings:
                return value
            if len(value) >= _GATE_STRING_CHARS and not (key is not None and detectors.is_secret_key(key)):
                if not self._needs_walk(orjson.dumps(value)):
                    return value
            text = self._scrub(value, key, depth).text
            if cached and text is value:  # (header values, model names: the same strings in every request)
                if len(strings) >= _CLEAN_STRINGS:
                    strings.clear()
                strings.add((value, key))
            return text
        return value

    def _walk_list(self, value: list[Any], key: str | None, depth: int, *, level: int = 0) -> list[Any]:
        pair_name = detectors.pair_name(value)
        secret_pair = pair_name is not None and (self._secret_key(pair_name) or pair_name.lower() in self._drop_headers)
        out: list[Any] | None = None
        for index, item in enumerate(value):
            if secret_pair and index == 1:
                new = self._redact_under(item, pair_name, depth)
            else:
                new = self._walk(item, key, depth, level=level + 1)
            if out is None and new is not item:
                out = value[:index]
            if out is not None:
                out.append(new)
        return value if out is None else out

    def _walk_dict(
        self, value: dict[str, Any], key: str | None, depth: int, *, lone_member: bool = False, level: int = 0
    ) -> dict[str, Any]:
        kept = value
        if key == "headers":
            kept = {name: item for name, item in value.items() if name.lower() not in self._drop_headers}
        pair_name = detectors.pair_name(kept) if len(kept) == 2 else None
        secret_pair = pair_name is not None and (self._secret_key(pair_name) or pair_name.lower() in self._drop_headers)
        out: dict[str, Any] = {}
        changed = len(kept) != len(value)
        for child_key, item in kept.items():
            new_key = child_key
            if len(child_key) >= 8 and self._secret_in_key(child_key):
                new_key = key_marker(child_key)
                while new_key in out or new_key in kept:
                    new_key = key_marker(new_key)
            if self._secret_key(child_key) or secret_pair and child_key == "value":
                new = self._redact_under(item, child_key if not secret_pair else pair_name, depth)
            elif lone_member and (type(item) is dict or type(item) is list):
                new = self._walk(item, child_key, depth, verdict=_WALK, level=level + 1)
            else:
                new = self._walk(item, child_key, depth, level=level + 1)
            changed = changed or new is not item or new_key is not child_key
            out[new_key] = new
        return out if changed else value

    def _redact_under(self, item: Any, key: str | None, depth: int) -> Any:
        """A value under a sensitive name: replaced whole (numbers, strings, containers)."""
        if item is None or type(item) is bool or item == REDACTED:
            return item
        if type(item) in (int, float) and not detectors.is_secret_number(item):
            return item  # a flag or a small count (auth: 1) under a secret-sounding name
        if type(item) is str and (not item or detectors.is_placeholder(item)):
            return item
        return REDACTED

    def _secret_in_key(self, key: str) -> bool:
        hit = detectors.secret_in_key(key) if self._enabled else None
        return hit is not None and hit.detector in self._enabled or any(p.search(key) for _, p in self._extra)

    def _hits(self, text: str, key: str | None, depth: int) -> list[tuple[int, int, str]]:
        spans: list[tuple[int, int, str]] = []
        if self._enabled:
            context = key if key is not None and not self._secret_key(key) else None
            spans.extend(
                (hit.start, hit.end, hit.detector)
                for hit in detectors.find_secrets(text, context, depth=depth)
                if hit.detector in self._enabled
            )
        for name, pattern in self._extra:
            spans.extend(
                (match.start(), match.end(), name) for match in pattern.finditer(text) if match.end() > match.start()
            )
        return spans

    def _scrub(self, text: str, key: str | None, depth: int) -> _Scrubbed:
        """``text`` with every secret replaced by ``[REDACTED:<detector>]``, and the edits made."""
        if len(text) >= 4:
            decoded = self._scrub_json(text, depth)
            if decoded is not None:
                return _Scrubbed(decoded, [Edit(0, len(text), len(decoded))])
        # leftmost first; at one start a credential format names the marker, not a structural detector
        spans = sorted(self._hits(text, key, depth), key=lambda s: (s[0], s[2] not in detectors.FORMAT_NAMES, -s[1]))
        edits: list[Edit] = []
        if spans:
            parts, position = [], 0
            merged: list[list[Any]] = []
            for start, end, name in spans:
                if merged and start < merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], end)
                else:
                    merged.append([start, end, name])
            for start, end, name in merged:
                marker = f"[REDACTED:{name}]"
                parts.append(text[position:start])
                edits.append(Edit(start, end, len(marker)))
                parts.append(marker)
                position = end
            parts.append(text[position:])
            text = "".join(parts)
        if self._cap is not None:
            raw = text.encode("utf-8")
            if len(raw) > self._cap:
                kept = raw[: self._cap].decode("utf-8", "ignore")
                marker = f"…[truncated {len(raw) - len(kept.encode())} bytes]"
                edits = [edit for edit in edits if edit.start < len(kept)]  # edits are of the text before the cap
                edits.append(Edit(len(kept), len(text), len(marker)))
                text = kept + marker
        return _Scrubbed(text, edits)

    def _scrub_json(self, text: str, depth: int) -> str | None:
        """JSON inside a string, decoded, redacted and encoded again; None when it is not JSON
        or holds nothing to redact (then the text is left byte for byte)."""
        stripped = text.strip()
        if depth >= detectors.MAX_JSON_DEPTH or stripped[:1] not in ("{", "[") or stripped[-1:] not in ("}", "]"):
            return None
        try:
            value = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return None
        redacted = self._walk(value, None, depth + 1)
        return None if redacted == value else orjson.dumps(redacted).decode()

    def _keep_stream_consistent(self, before: Mapping[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        """Streamed content was redacted as assembled text; move the chunk boundaries with it,
        so the recorded chunks join to the recorded text and no chunk keeps part of a secret.
        The raw server-sent events a transport keeps (``response.http.body_text``) follow too."""
        stream, response, original_response = after.get("stream"), after.get("response"), before.get("response")
        if not isinstance(stream, dict) or not isinstance(response, dict) or not isinstance(original_response, dict):
            return after
        original, content = original_response.get("content"), response.get("content")
        boundaries = stream.get("boundaries")
        http = response.get("http")
        body = http.get("body_text") if isinstance(http, dict) else None
        sse = isinstance(body, str) and "data:" in body
        if (
            isinstance(original, str)
            and isinstance(content, str)
            and content != original
            and isinstance(boundaries, list)
        ):
            edits = self._scrub(original, "content", 0).edits
            remapped = remap_boundaries(boundaries, edits, len(content))
            after = {**after, "stream": {**stream, "boundaries": remapped}}
            if sse:  # the raw events hold the same deltas, a secret split across them: re-split them too
                old_deltas = split_stream(original, [b for b in boundaries if isinstance(b, int)])
                body = resplit_sse(body, old_deltas, split_stream(content, remapped))  # type: ignore[arg-type]
        calls, original_calls = response.get("tool_calls"), original_response.get("tool_calls")
        if sse and body is not None and isinstance(calls, list) and calls != original_calls:
            body = resplit_sse_arguments(
                body, [orjson.dumps(call.get("arguments")).decode() for call in calls if isinstance(call, dict)]
            )
        if sse and isinstance(http, dict) and body != http.get("body_text"):
            body = body if body is not None else "[REDACTED: the raw stream held a secret; see content]"
            after["response"] = {**after["response"], "http": {**http, "body_text": body}}
        return after


def _holds_a_list(value: dict[str, Any] | list[Any]) -> bool:
    """A list of several values, or an object with one among its members."""
    if isinstance(value, list):
        return len(value) > 1
    return any(type(item) is list and len(item) > 1 for item in value.values())


def _required_literals(patterns: Iterable[re.Pattern[str]]) -> list[tuple[tuple[bytes, ...], bool]] | None:
    """For each extra detector, literals one of which every match holds, as serialized JSON spells
    them (with whether to look in the lower-cased bytes); None when a pattern has none.

    Searching the bytes with the pattern itself would miss matches: anchors, lookarounds and
    classes mean something else over a whole serialization (``^``, ``\\b``, ``\\d`` of other
    scripts, a newline written as ``\\n``). A literal of printable ASCII other than the quote and
    backslash is written as itself, so if it is not in the bytes, no string there can match."""
    found = []
    for pattern in patterns:
        if _sre_parser is None:
            return None
        parsed = _sre_parser.parse(pattern.pattern, pattern.flags)
        literals = _literals_of(list(parsed))
        if not literals:
            return None
        folded = bool(parsed.state.flags & re.IGNORECASE)
        found.append((tuple((text.lower() if folded else text).encode() for text in literals), folded))
    return found


def _literals_of(items: list[tuple[Any, Any]]) -> list[str]:
    """Literals one of which every match of the parsed sequence ``items`` holds ([] when unknown)."""
    if len(items) == 1 and items[0][0].name == "BRANCH":
        alternatives = [_literals_of(list(branch)) for branch in items[0][1][1]]
        return [text for texts in alternatives for text in texts] if all(alternatives) else []
    best, run = "", ""
    for op, argument in items:
        if op.name == "LITERAL" and 0x20 <= argument < 0x7F and chr(argument) not in '"\\':
            run += chr(argument)
            best = max(best, run, key=len)
        else:
            run = ""
    return [best] if best else []


try:  # the stdlib's own regex parser (private: without it every extra detector is searched by the walk)
    _sre_parser: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover
    _sre_parser = None


def iter_string_paths(value: Any, path: str = "$") -> Iterable[tuple[str, str]]:
    """Every string, key and number in a JSON value with its JSONPath; names where a secret survived."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, f"{path}.{key}"  # key names can leak too
            yield from iter_string_paths(item, f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from iter_string_paths(item, f"{path}[{index}]")
    elif isinstance(value, str):
        yield value, path
    elif type(value) in (int, float):
        yield str(value), path  # a numeric password


Redact = Callable[[str, dict[str, Any]], dict[str, Any]]
