"""Redaction: applied to every payload before it is hashed or written.

Rules, in order: a capture allowlist (top-level fields kept per kind), dropped
headers, JSONPath replacements, key-name rules (``raw_token``, ``x_api_key``,
``clientSecret``...), value detectors for common secret formats, and a
``max_body_bytes`` cap on strings with a truncation marker.

Speed matters (budget: a few µs per event), so the common case is one orjson
dump and two regex scans over the bytes; only a payload that hits a rule is
copied and walked. The detectors are our own small pattern set rather than
detect-secrets, whose per-line plugin scan costs far more than the budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import orjson

from .jsonpath import JsonPath, JsonPathError, parse_jsonpath

REDACTED = "[REDACTED]"
SMALL_PAYLOAD = 512

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
DEFAULT_DROP_HEADERS = (
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key",
    "x-auth-token", "x-goog-api-key", "anthropic-api-key", "openai-api-key",
)
SEP = r"[-_. ]?"
DEFAULT_KEY_NAMES = (
    r"pass(?:word|wd|phrase)", r"secret", r"token", rf"api{SEP}key", rf"access{SEP}key", rf"private{SEP}key",
    r"credential", r"authorization", r"cookie", rf"session{SEP}id", r"bearer",
)
# Names that say "token" but count tokens: model usage blocks (OpenAI's
# prompt_tokens_details is an object, so it would otherwise be redacted whole).
DEFAULT_KEY_ALLOW = (
    "tokenizer", "tokens", "max_tokens", "stop_tokens", "token_count", "token_usage",
    "prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens",
    "prompt_tokens_details", "completion_tokens_details", "input_tokens_details", "output_tokens_details",
    "cached_tokens", "reasoning_tokens", "audio_tokens", "accepted_prediction_tokens",
    "rejected_prediction_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
    "max_completion_tokens", "max_output_tokens",
)

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

#: A literal each default key-name rule needs (lowercase), for the fast path.
DEFAULT_KEY_ANCHORS: Mapping[str, bytes] = {
    r"pass(?:word|wd|phrase)": b"pass", r"secret": b"secret", r"token": b"token", rf"api{SEP}key": b"key",
    rf"access{SEP}key": b"key", rf"private{SEP}key": b"key", r"credential": b"credential",
    r"authorization": b"authorization", r"cookie": b"cookie", rf"session{SEP}id": b"session", r"bearer": b"bearer",
}

#: name -> pattern. Kept to well-known, low-false-positive formats.
DEFAULT_DETECTORS: Mapping[str, str] = {
    "aws-access-key": r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    "github-token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
    "slack-token": r"\bxox[abposr]-[A-Za-z0-9-]{10,250}",
    "stripe-key": r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,247}\b",
    "openai-anthropic-key": r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,250}",
    "google-api-key": r"\bAIza[0-9A-Za-z_-]{35}\b",
    "jwt": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "private-key": r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----(?:[^-]|-(?!----END))*(?:-----END (?:[A-Z]+ )*PRIVATE KEY-----)?",
    "bearer-token": r"(?i:\bbearer)\s+[A-Za-z0-9._~+/-]{16,}=*",
    "url-credentials": r"(?<=://)[^/\s:@\"]{1,100}:[^/\s@\"]{1,200}(?=@)",
    "url-query-secret": r"(?i:(?<=[?&])(?:api[_-]?key|key|access_token|token|secret|password|sig|signature)=)[^&#\s\"]{8,}",
    "sendgrid-key": r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b",
    "npm-token": r"\bnpm_[A-Za-z0-9]{36}\b",
    "twilio-key": r"\bSK[0-9a-f]{32}\b",
}


#: Literals each default detector's match contains (looked for in the lowercased
#: payload for the detectors in LOWERCASE_ANCHORED).
DETECTOR_ANCHORS: Mapping[str, tuple[bytes, ...]] = {
    "aws-access-key": (b"AKIA", b"ASIA", b"ABIA", b"ACCA"),
    "github-token": (b"gho_", b"ghp_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
    "slack-token": (b"xox",),
    "stripe-key": (b"k_live_", b"k_test_"),
    "openai-anthropic-key": (b"sk-",),
    "google-api-key": (b"AIza",),
    "jwt": (b"eyJ",),
    "private-key": (b"PRIVATE KEY-----",),
    "bearer-token": (b"bearer",),
    "url-credentials": (b"://",),
    "url-query-secret": (b"key=", b"token=", b"secret=", b"password=", b"sig=", b"signature="),
    "sendgrid-key": (b"SG.",),
    "npm-token": (b"npm_",),
    "twilio-key": (b"SK",),
}
LOWERCASE_ANCHORED = frozenset({"bearer-token", "url-query-secret"})


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
    key_names: tuple[str, ...] = DEFAULT_KEY_NAMES
    key_allow: tuple[str, ...] = DEFAULT_KEY_ALLOW
    detectors: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_DETECTORS))
    replacements: tuple[Replacement, ...] = ()

    @classmethod
    def from_config(cls, table: Mapping[str, Any], *, source: str = "[redaction]") -> "RedactionRules":
        """Build rules from a ``[redaction]`` table. Lists extend the defaults unless
        ``use_defaults = false``; ``detectors`` may be true, false or a list of names."""
        known = {"enabled", "use_defaults", "max_body_bytes", "capture", "drop_headers", "key_names",
                 "key_allow", "detectors", "extra_detectors", "replace"}
        unknown = set(table) - known
        if unknown:
            raise RedactionConfigError(f"{source}: unknown key(s) {sorted(unknown)}; expected {sorted(known)}")
        defaults = table.get("use_defaults", True)
        rules = cls() if defaults else cls(capture={}, drop_headers=(), key_names=(), key_allow=(), detectors={})
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
        rules.key_names = rules.key_names + tuple(re.escape(k) for k in _strings(table, "key_names", source))
        rules.key_allow = rules.key_allow + tuple(k.lower() for k in _strings(table, "key_allow", source))
        detectors = table.get("detectors", True)
        if detectors is False:
            rules.detectors = {}
        elif isinstance(detectors, list):
            missing = [name for name in detectors if name not in DEFAULT_DETECTORS]
            if missing:
                raise RedactionConfigError(f"{source}: unknown detector(s) {missing}; known: {sorted(DEFAULT_DETECTORS)}")
            rules.detectors = {name: DEFAULT_DETECTORS[name] for name in detectors}
        extra = table.get("extra_detectors", {})
        if not isinstance(extra, dict):
            raise RedactionConfigError(f"{source}: extra_detectors must map a name to a regex")
        rules.detectors = {**rules.detectors, **extra}
        replacements = []
        for position, item in enumerate(table.get("replace", []), 1):
            if not isinstance(item, dict) or not isinstance(item.get("path"), str):
                raise RedactionConfigError(f"{source}: replace[{position}] needs a 'path' (JSONPath from the payload, e.g. $.request.metadata.email)")
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


class Redactor:
    """Compiled rules. ``redact(kind, payload)`` returns the payload to record
    (the input object itself when nothing applies; never mutated).

    Only the user-data fields of a payload are looked at (``REDACTED_FIELDS``);
    the harness's own fields (hashes, ids, tool names) are left alone. The fast
    path checks cheap literal anchors first and runs a regex only on a hit.
    """

    def __init__(self, rules: RedactionRules | None = None) -> None:
        self.rules = rules = rules or RedactionRules()
        try:
            key_pattern = "|".join(f"(?:{name})" for name in rules.key_names) or r"(?!x)x"
            self._key = re.compile(key_pattern, re.IGNORECASE)
            self._detectors = [(name, re.compile(pattern)) for name, pattern in rules.detectors.items()]
            # (anchor or None, search the lowercased payload?, detector regex); a
            # detector without a known anchor (a custom pattern) always runs.
            self._anchored: list[tuple[bytes | None, bool, re.Pattern[bytes]]] = []
            for name, pattern in rules.detectors.items():
                compiled = re.compile(pattern.encode())
                anchors = DETECTOR_ANCHORS.get(name) if pattern == DEFAULT_DETECTORS.get(name) else None
                for anchor in anchors or (None,):
                    self._anchored.append((anchor, name in LOWERCASE_ANCHORED, compiled))
        except re.error as error:
            raise RedactionConfigError(f"invalid redaction pattern: {error}") from None
        self._key_anchors = _key_anchors(rules.key_names)
        # One pass over a small payload for every anchor at once: a single regex beats a
        # Python loop of substring tests below a few hundred bytes, and loses above.
        exact = [anchor for anchor, lowercase, _ in self._anchored if not lowercase]
        folded = [anchor for anchor, lowercase, _ in self._anchored if lowercase] + list(self._key_anchors or [None])
        self._quick: tuple[re.Pattern[bytes], re.Pattern[bytes]] | None = None
        if None not in exact and None not in folded:
            self._quick = (_literal_alternation(exact), _literal_alternation(folded))  # type: ignore[arg-type]
        self._allow = frozenset(rules.key_allow)
        self._drop_headers = frozenset(rules.drop_headers)
        self._replacements: dict[str | None, list[Replacement]] = {}
        for replacement in rules.replacements:
            self._replacements.setdefault(replacement.kind, []).append(replacement)
        self._cap = rules.max_body_bytes

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
        if trims:
            copy[body_field] = {key: value for key, value in copy[body_field].items() if key in capture}
        for replacement in replacements:
            replacement.path.replace(copy, replacement.value)
        return {**payload, **self._walk(copy)}

    def _needs_walk(self, data: bytes) -> bool:
        if self._cap is not None and len(data) > self._cap:
            return True
        if self._drop_headers and b'"headers":{' in data:
            return True
        lowered = data.lower()
        if self._quick is not None and len(data) <= SMALL_PAYLOAD:
            if not self._quick[0].search(data) and not self._quick[1].search(lowered):
                return False
        for anchor, lowercase, pattern in self._anchored:
            if anchor is None or anchor in (lowered if lowercase else data):
                if pattern.search(data):
                    return True
        if self._key_anchors is None:
            return self._walk_needed_for_keys(orjson.loads(data))
        for anchor in self._key_anchors:
            position = lowered.find(anchor)
            while position != -1:
                close = lowered.find(b'"', position)
                # a string followed by ':' is a key; only string or container values are redacted
                if close != -1 and lowered[close + 1 : close + 2] == b":" and lowered[close + 2 : close + 3] in (b'"', b"[", b"{"):
                    open_ = lowered.rfind(b'"', 0, position)
                    key = data[open_ + 1 : close].decode("utf-8", "replace")
                    if key.lower() not in self._allow and self._key.search(key):
                        return True
                position = lowered.find(anchor, position + 1)
        return False

    def _walk_needed_for_keys(self, value: Any) -> bool:
        if isinstance(value, dict):
            return any(
                (isinstance(item, (str, dict, list)) and key.lower() not in self._allow and self._key.search(key))
                or self._walk_needed_for_keys(item)
                for key, item in value.items()
            )
        if isinstance(value, list):
            return any(self._walk_needed_for_keys(item) for item in value)
        return False

    def _walk(self, value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if key == "headers" and isinstance(item, dict):
                    item = {name: v for name, v in item.items() if name.lower() not in self._drop_headers}
                if (
                    isinstance(item, (str, dict, list))
                    and key.lower() not in self._allow
                    and self._key.search(key)
                    and item != REDACTED
                ):
                    out[key] = REDACTED
                else:
                    out[key] = self._walk(item)
            return out
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        if isinstance(value, str):
            return self._scrub_string(value)
        return value

    def _scrub_string(self, text: str) -> str:
        for name, pattern in self._detectors:
            if pattern.search(text):
                text = pattern.sub(f"[REDACTED:{name}]", text)
        if self._cap is not None:
            raw = text.encode("utf-8")
            if len(raw) > self._cap:
                kept = raw[: self._cap].decode("utf-8", "ignore")
                text = f"{kept}…[truncated {len(raw) - len(kept.encode())} bytes]"
        return text


def _literal_alternation(literals: list[bytes]) -> re.Pattern[bytes]:
    return re.compile(b"|".join(re.escape(literal) for literal in dict.fromkeys(literals)) or rb"(?!x)x")


def _key_anchors(key_names: tuple[str, ...]) -> tuple[bytes, ...] | None:
    """Literal substrings one of which every matching key contains (lowercased);
    None when a configured name is a pattern with no such literal."""
    anchors: list[bytes] = []
    for name in key_names:
        if name in DEFAULT_KEY_ANCHORS:
            anchors.append(DEFAULT_KEY_ANCHORS[name])
            continue
        literal = re.sub(r"\\(.)", r"\1", name)
        if re.escape(literal) != name:
            return None
        anchors.append(literal.lower().encode())
    return tuple(dict.fromkeys(anchors))  # each anchor once, in order


def iter_string_paths(value: Any, path: str = "$") -> Iterable[tuple[str, str]]:
    """Every string in a JSON value with its JSONPath; used to name where a secret survived."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, f"{path}.{key}"  # key names can leak too
            yield from iter_string_paths(item, f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from iter_string_paths(item, f"{path}[{index}]")
    elif isinstance(value, str):
        yield value, path


Redact = Callable[[str, dict[str, Any]], dict[str, Any]]
