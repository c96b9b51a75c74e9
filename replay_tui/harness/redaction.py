"""Redaction: applied to every payload before it is hashed or written.

Rules, in order: a capture allowlist (top-level fields kept per kind), dropped
headers, JSONPath replacements, then the shared secret detectors of
``journal.detectors`` (the ones ``scan`` uses): values under sensitive key names
and header pairs, credential formats, name=value in text, JSON inside strings,
base64 of a secret and random-looking tokens; a secret used as an object key is
replaced by ``[REDACTED:<hash8>]``. Last, a ``max_body_bytes`` cap on strings.

Speed matters (budget: a few µs per event), so the common case is one orjson
dump and a gate over its bytes; only a payload that might hold a secret is
copied and walked. Fields replay matches on (step ids, tool names) are never
rewritten: a secret there is an error naming the field.
"""

from __future__ import annotations

import hashlib
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


class SecretInMatchedFieldError(ValueError):
    """A secret in a field replay matches on (a step id, a tool name): it cannot be rewritten
    without breaking replay, and must not be written, so the recording stops."""


def key_marker(key: str) -> str:
    """What a secret used as an object key becomes: stable, so equal keys stay equal."""
    return f"[REDACTED:{hashlib.sha256(key.encode()).hexdigest()[:8]}]"


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
            self._extra_bytes = [re.compile(pattern.encode()) for pattern in rules.extra_detectors.values()]
        except re.error as error:
            raise RedactionConfigError(f"invalid redaction pattern: {error}") from None
        self._enabled = frozenset(rules.detectors)
        self._shared = bool(self._enabled) or rules.default_key_names
        literal = [re.sub(r"\\(.)", r"\1", name) for name in rules.key_names]
        literal_ok = all(re.escape(text) == name for text, name in zip(literal, rules.key_names))
        self._extra_key_hints = tuple(text.lower().encode() for text in literal) if literal_ok else None
        self._allow = frozenset(rules.key_allow)
        self._drop_headers = frozenset(rules.drop_headers)
        self._replacements: dict[str | None, list[Replacement]] = {}
        for replacement in rules.replacements:
            self._replacements.setdefault(replacement.kind, []).append(replacement)
        self._cap = rules.max_body_bytes
        self._matched_cache: dict[str, str | None] = {}

    # -- the entry points ----------------------------------------------------------------------
    def redact(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        if not self.rules.enabled:
            return payload
        fields = REDACTED_FIELDS.get(kind)
        if not fields:
            return payload
        scope = {name: payload[name] for name in fields if name in payload}
        if not scope:
            return payload
        body_field = BODY_FIELD.get(kind)
        capture = self.rules.capture.get(kind)
        body = scope.get(body_field) if body_field else None
        trims = capture is not None and isinstance(body, dict) and not body.keys() <= set(capture)
        replacements = self._replacements.get(kind, []) + self._replacements.get(None, [])
        data = orjson.dumps(scope)
        if not (trims or replacements or self._needs_walk(data)):
            return payload
        copy = orjson.loads(data)
        if trims and capture is not None and body_field is not None:
            copy[body_field] = {key: value for key, value in copy[body_field].items() if key in capture}
        for replacement in replacements:
            replacement.path.replace(copy, replacement.value)
        walked = self._walk(copy, None, 0)
        if walked == scope:
            return payload
        out = {**payload, **walked}
        if kind == "model.response":
            out = self._keep_stream_consistent(payload, out)
        return out

    def redact_value(self, value: Any) -> Any:
        """A JSON value outside any payload (a framework's own state) under the same rules."""
        if not self.rules.enabled:
            return value
        data = orjson.dumps(value)
        if not self._needs_walk(data):
            return value
        walked = self._walk(orjson.loads(data), None, 0)
        return value if walked == value else walked

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
        if self._cap is not None and len(data) > self._cap:
            return True
        if self._drop_headers and b'"headers":' in data:
            return True
        if self._shared and detectors.might_hold_secret(data):
            return True
        if any(pattern.search(data) for pattern in self._extra_bytes):
            return True
        if self._extra_keys is not None:
            if self._extra_key_hints is None:
                return True
            lowered = data.lower()
            return any(hint in lowered for hint in self._extra_key_hints)
        return False

    # -- the walk ------------------------------------------------------------------------------
    def _secret_key(self, key: str) -> bool:
        lowered = key.lower()
        if lowered in self._allow:
            return False
        if self.rules.default_key_names and detectors.is_secret_key(key):
            return True
        return self._extra_keys is not None and self._extra_keys.search(key) is not None

    def _walk(self, value: Any, key: str | None, depth: int) -> Any:
        kind = type(value)
        if kind is dict:
            return self._walk_dict(value, key, depth)
        if kind is list:
            pair_name = detectors.pair_name(value)
            secret_pair = pair_name is not None and (
                self._secret_key(pair_name) or pair_name.lower() in self._drop_headers
            )
            return [
                self._redact_under(item, pair_name, depth)
                if secret_pair and index == 1
                else self._walk(item, key, depth)
                for index, item in enumerate(value)
            ]
        if kind is str:
            return self._scrub(value, key, depth).text
        return value

    def _walk_dict(self, value: dict[str, Any], key: str | None, depth: int) -> dict[str, Any]:
        if key == "headers":
            value = {name: item for name, item in value.items() if name.lower() not in self._drop_headers}
        pair_name = detectors.pair_name(value) if len(value) == 2 else None
        secret_pair = pair_name is not None and (self._secret_key(pair_name) or pair_name.lower() in self._drop_headers)
        out: dict[str, Any] = {}
        for child_key, item in value.items():
            new_key = child_key
            if len(child_key) >= 8 and self._secret_in_key(child_key):
                new_key = key_marker(child_key)
                while new_key in out or new_key in value:
                    new_key = key_marker(new_key)
            if self._secret_key(child_key) or secret_pair and child_key == "value":
                out[new_key] = self._redact_under(item, child_key if not secret_pair else pair_name, depth)
            else:
                out[new_key] = self._walk(item, child_key, depth)
        return out

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
