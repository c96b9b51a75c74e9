"""Find secrets that redaction missed: known token formats, high-entropy strings, sensitive keys.

Every string in an event (envelope and payload) is checked, with its JSON path.
Three detectors, most specific first; a value reported by one is not reported
again by the next:

* ``format:<name>``: a known credential shape (AWS, GitHub, OpenAI, Anthropic,
  Slack, Stripe, Google, SendGrid, npm, Twilio, JWT, private key blocks, bearer and
  basic Authorization headers, URL passwords).
* ``key-name``: a non-empty, unredacted string under a key such as ``password``,
  ``api_key``, ``clientSecret`` or ``x-api-key``, or assigned to such a name inside
  text (``DB_PASSWORD=…``, ``?api_key=…``, a JSON document kept as a string).
* ``entropy``: a token of 20+ characters whose Shannon entropy is close to random
  and whose characters switch class (lower, upper, digit) like random text. Pure hex
  (hashes, including our own ``sha256:`` values), UUIDs, camelCase and snake_case
  names, dotted names, URLs and paths are not candidates, and neither are values
  under id or hash keys (``call_id``, ``request_hash``), which are random by design.

Values are never kept or printed in full: a finding holds a masked preview.

From the app: ``flagged_seqs(journal, progress=..., cancelled=...)`` for the timeline
marks (in a worker thread), ``scan_event(event)`` for each event follow mode adds,
``mask_secrets(payload)`` before showing a payload to an audience.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterable

from ..journal import Event, Journal, JournalError

ProgressCallback = Callable[[int, int], None]
CancelCheck = Callable[[], bool]

PROGRESS_EVERY = 4096
MAX_FINDINGS_KEPT = 10_000  # beyond this, findings are counted (and their seqs flagged) but not listed

# -- known formats -------------------------------------------------------------
KNOWN_FORMATS: tuple[tuple[str, str], ...] = (
    ("private-key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ("aws-access-key-id", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ("anthropic-key", r"\bsk-ant-(?:api|admin|oat)[0-9]{2}-[A-Za-z0-9_\-]{20,}"),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("slack-webhook", r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"),
    ("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("twilio-key", r"\bSK[0-9a-f]{32}\b"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("bearer-token", r"\b[Bb]earer\s+[A-Za-z0-9\-._~+/]{16,}=*"),
    ("basic-auth", r"[Aa]uthorization[\"']?\s*[:=]\s*[\"']?Basic\s+[A-Za-z0-9+/]{8,}={0,2}"),
    ("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@]+:[^\s/@]{3,}@"),
)
_FORMATS = re.compile("|".join(f"(?P<{name.replace('-', '_')}>{pattern})" for name, pattern in KNOWN_FORMATS))
# Cheap gate: a string that cannot hold any format skips the big alternation.
# Grouped by first letter, which the regex engine searches noticeably faster than a flat alternation.
_FORMAT_HINT = re.compile(
    r"PRIVATE KEY|A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|NPA|NVA|IPA|Iza)|g(?:h[pousr]_|ithub_pat_)|sk-|xox|hooks\.slack|_(?:live|test)_|eyJ|[Bb]earer|uthorization|://|SG\.|npm_|SK[0-9a-f]"
)

# -- sensitive key names -------------------------------------------------------
# Keys are compared lower-cased with everything but letters and digits removed,
# so api_key, apiKey, API-KEY and x-api-key all become "apikey"/"xapikey".
_SENSITIVE_KEY = re.compile(
    r"(password|passwd|passphrase|pwd|secret|token|apikey|accesskey|privatekey|signingkey|encryptionkey|"
    r"credential|authorization|cookie|sessionkey|auth)$|^(auth|secret|password|privatekey|apikey)"
)
# ... except names that only talk about tokens or secrets: counts, limits, types, pagination.
_NOT_SENSITIVE_KEY = re.compile(
    r"tokens$|tokenizer|tokentype|tokencount|tokenlimit|maxtoken|pagetoken|nexttoken|continuationtoken|cursor|"
    r"secretname|secretref|secretid|passwordpolicy|author$|authors$|authority|authored|authmethod|authtype|authurl|authprovider|authenabled|authrequired|"
    r"(type|count|limit|name|id|ids|url|uri|path|hash|hint|length|expiry|expires|expiresat|expiresin|scope|scopes)$"
)
# Values that are already redacted or are placeholders: [REDACTED], <redacted>, ***, ${VAR}, a hash.
_REDACTED_VALUE = re.compile(
    r"^[\[<({]?\s*(redacted|masked|removed|hidden|filtered|omitted)\b|\*{3,}|^x{3,}$|^<[^>]*>$|^\[[^\]]*\]$"
    r"|^\{\{.*\}\}$|^\$\{.*\}$|^sha256:[0-9a-f]{64}$|^(none|null|true|false|changeme|example|placeholder|test|dummy)$",
    re.I,
)
MIN_KEYED_VALUE_CHARS = 6
# The same names inside text: DB_PASSWORD=..., ?api_key=..., "token": "..." in a JSON string, Cookie: ...
_TEXT_KEY_HINT = re.compile(r"pass|secret|token|key|auth|cred|cookie|pwd", re.I)
# ... unless the value is a colour, a version or OID, or a dotted name such as ed25519.Ed25519PrivateKey
_NOT_A_CREDENTIAL = re.compile(r"#[0-9a-fA-F]{3,8}$|\d+(\.\d+)+$|[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_TEXT_ASSIGNMENT = re.compile(r"""([A-Za-z][A-Za-z0-9_.\-]{1,60})["']?\s*[=:]\s*["']?([^\s"'&,;<>(){}\[\]]{6,})(?=[\s"'&,;<>]|$)""")

# -- entropy -------------------------------------------------------------------
_CANDIDATE = re.compile(r"[A-Za-z0-9+/_\-.~]{20,}={0,3}")  # '=' only as base64 padding, so a=b splits
_HEX = re.compile(r"(?:sha256:|0x)?[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ID_KEY = re.compile(r"(^|[_\-.])(id|ids|key|hash|digest|checksum|etag|sha|uuid|ulid|nonce|cursor|ref)$", re.I)
_ID_KEY_CAMEL = re.compile(r"[a-z0-9](Id|Ids|Hash|Key|Digest|Uuid|Sha)$")
ENTROPY_MIN_CHARS = 20
ENTROPY_MAX_CHARS = 512  # longer runs are blobs (images, base64 documents), not credentials
# bits per character, by token length: a random base62 token of 20 chars measures
# about 4.0, of 32 about 4.6, of 40+ about 5.0; English-like identifiers stay below.
_ENTROPY_FLOOR = ((20, 3.9), (28, 4.2), (40, 4.5))
IDENTIFIER_WORD_LENGTH = 3.5
MIN_CLASS_SWITCH_RATIO = 0.3  # tokens under 32 chars
MIN_CLASS_SWITCH_RATIO_LONG = 0.25  # tokens of 32+ chars, where entropy already separates well
SKIPPED_ENVELOPE_FIELDS = frozenset({"event_hash", "prev_event_hash", "event_id", "parent_event_id", "run_id", "recorded_at"})


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text``'s own character distribution."""
    length = len(text)
    if not length:
        return 0.0
    return -sum(count / length * math.log2(count / length) for count in Counter(text).values())


def _entropy_floor(length: int) -> float:
    floor = _ENTROPY_FLOOR[0][1]
    for min_length, bits in _ENTROPY_FLOOR:
        if length >= min_length:
            floor = bits
    return floor


def _random_part(token: str) -> str | None:
    """The part of a candidate token that looks random, or None."""
    if "." in token or "//" in token:
        # dotted names, URLs and file paths (base64 has no '.'): judge the parts, not the whole
        parts = (part for part in re.split(r"[./]+", token) if len(part) >= ENTROPY_MIN_CHARS)
        return next((part for part in parts if _looks_random(part)), None)
    return token if _looks_random(token) else None


def _looks_random(token: str) -> bool:
    stripped = token.strip("=.-_~")
    if len(stripped) < ENTROPY_MIN_CHARS or len(stripped) > ENTROPY_MAX_CHARS:
        return False
    if _HEX.fullmatch(stripped) or _UUID.search(stripped):
        return False
    # random tokens mix classes; a word, a slug or an ALL_CAPS name does not
    has_digit = any(c.isdigit() for c in stripped)
    has_lower = any(c.islower() for c in stripped)
    has_upper = any(c.isupper() for c in stripped)
    if has_digit + has_lower + has_upper < 2 or not has_digit and (stripped.count("-") + stripped.count("_") + stripped.count(".")) >= 2:
        return False
    if _class_switch_ratio(stripped) < (MIN_CLASS_SWITCH_RATIO if len(stripped) < 32 else MIN_CLASS_SWITCH_RATIO_LONG):
        return False
    if _mean_word_length(stripped) >= IDENTIFIER_WORD_LENGTH or _is_snake_name(stripped):
        return False
    return shannon_entropy(stripped) >= _entropy_floor(len(stripped))


_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def _mean_word_length(token: str) -> float:
    """Mean length of the letter runs (camelCase and snake_case words): about 1.5 in random
    text, 4 or more in names such as TF2_OnIsHolidayActive or curle_ftp_weird_227_format."""
    words = _WORDS.findall(token)
    return sum(map(len, words)) / len(words) if words else 0.0


_NAME_PART = re.compile(r"[a-z]+\d*|[A-Z]+\d*|[A-Z][a-z]+\d*|\d+")


def _is_snake_name(token: str) -> bool:
    """EC_KEY_get0_public_key, ORDER_STATUS_2024_Q3: three or more parts, each one word (random
    base64url parts mix cases and digits)."""
    parts = re.split(r"[_\-]+", token.strip("_-"))
    return len(parts) >= 3 and all(_NAME_PART.fullmatch(part) for part in parts)


def _char_class(char: str) -> int:
    return 0 if char.islower() else 1 if char.isupper() else 2 if char.isdigit() else 3


def _class_switch_ratio(token: str) -> float:
    """How often neighbours differ in class (lower, upper, digit, other): ~0.45 for random
    base62/base64, under 0.3 for identifiers such as camelCase or snake_case_v2 names."""
    classes = [_char_class(c) for c in token]
    # upper -> lower is how a capitalised word starts, so it does not count as a switch
    return sum(a != b and (a, b) != (1, 0) for a, b in zip(classes, classes[1:])) / (len(token) - 1)


def mask(value: str) -> str:
    """A preview that identifies a value without revealing it: a few edge characters and the length."""
    length = len(value)
    if length <= 8:
        return "*" * length + f" ({length} chars)"
    shown = 2 if length < 16 else 4
    return f"{value[:shown]}…{value[-2:]} ({length} chars)"


# -- findings ------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    seq: int
    path: str  # JSON path in the event, e.g. payload.arguments.headers.x-api-key
    detector: str  # format:<name> | key-name | entropy
    masked: str
    kind: str = ""
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "path": self.path, "detector": self.detector, "masked": self.masked, "detail": self.detail}

    def to_text(self) -> str:
        detail = f"  ({self.detail})" if self.detail else ""
        return f"seq {self.seq:>7}  {self.kind:<16} {self.path}  {self.detector}  {self.masked}{detail}"


def _path_text(parts: tuple[str | int, ...]) -> str:
    """payload.arguments.headers.x-api-key, tool_calls[0], or ["odd key"] for keys with other characters."""
    text = ""
    for part in parts:
        if type(part) is int:
            text += f"[{part}]"
        elif part.replace("_", "").replace("-", "").isalnum():
            text += f".{part}" if text else part
        else:
            text += "[" + '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"' + "]"
    return text


@lru_cache(maxsize=4096)
def is_sensitive_key(key: str) -> bool:
    """password, api_key, apiKey, x-api-key, clientSecret, raw_token ... but not max_tokens or token_type."""
    name = "".join(c for c in key.lower() if c.isalnum())
    return bool(name) and bool(_SENSITIVE_KEY.search(name)) and not _NOT_SENSITIVE_KEY.search(name)


@lru_cache(maxsize=4096)
def _is_id_key(key: str) -> bool:
    return bool(_ID_KEY.search(key) or _ID_KEY_CAMEL.search(key))


def scan_string(text: str, key: str | None) -> tuple[str, str, str] | None:
    """(detector, masked value, detail) for the first secret in ``text`` under ``key``, else None."""
    if len(text) < MIN_KEYED_VALUE_CHARS:
        return None
    if _FORMAT_HINT.search(text):
        match = _FORMATS.search(text)
        if match is not None:
            return f"format:{match.lastgroup.replace('_', '-')}", mask(match.group()), ""  # type: ignore[union-attr]
    if key is not None and is_sensitive_key(key) and not _REDACTED_VALUE.search(text.strip()):
        return "key-name", mask(text), f"under key {key!r}"
    if ("=" in text or ": " in text or '":' in text) and _TEXT_KEY_HINT.search(text):
        for assignment in _TEXT_ASSIGNMENT.finditer(text):
            name, value = assignment.group(1), assignment.group(2)
            # in free text (code, logs) a credential-looking value has a digit and is not a colour
            if is_sensitive_key(name) and any(c.isdigit() for c in value) and not _REDACTED_VALUE.search(value) and not _NOT_A_CREDENTIAL.match(value):
                return "key-name", mask(value), f"{name!r} set in text"
    if len(text) >= ENTROPY_MIN_CHARS and not (key is not None and _is_id_key(key)):
        for candidate in _CANDIDATE.finditer(text):
            token = _random_part(candidate.group())
            if token is not None:
                return "entropy", mask(token), f"{shannon_entropy(token.strip('=.-_~')):.1f} bits/char"
    return None


def scan_event(event: Event) -> list[Finding]:
    """Findings in one event, in document order (the app calls this for events that arrive in follow mode).

    An explicit stack rather than recursion: a line may nest 1,024 levels deep, past
    Python's recursion limit. A path is a chain of (parent, key) pairs, turned into
    text only for a finding.
    """
    findings: list[Finding] = []
    stack: list[tuple[Any, str | None, tuple[Any, str | int]]] = [(event.payload, None, (None, "payload"))]
    stack.extend(
        (value, name, (None, name))
        for name, value in reversed(event.raw.items())
        if name not in SKIPPED_ENVELOPE_FIELDS and name != "payload"
    )
    while stack:
        value, key, node = stack.pop()
        kind = type(value)
        if kind is str:
            if len(value) >= MIN_KEYED_VALUE_CHARS:
                hit = scan_string(value, key)
                if hit is not None:
                    findings.append(Finding(event.seq, _path_text(_parts_of(node)), hit[0], hit[1], event.kind, hit[2]))
        elif kind is dict:
            stack.extend((child, child_key, (node, child_key)) for child_key, child in reversed(value.items()) if type(child) not in _SCALARS)
        elif kind is list:
            stack.extend((value[index], key, (node, index)) for index in range(len(value) - 1, -1, -1) if type(value[index]) not in _SCALARS)
    return findings


def _parts_of(node: tuple[Any, str | int] | None) -> tuple[str | int, ...]:
    parts: list[str | int] = []
    while node is not None:
        node, part = node
        parts.append(part)
    return tuple(reversed(parts))


_SCALARS = frozenset({int, float, bool, type(None)})


MASK_MAX_DEPTH = 200


def mask_secrets(value: Any, key: str | None = None, *, _depth: int = 0) -> tuple[Any, int]:
    """A copy of a JSON value with every string a detector flags replaced by its masked form,
    and how many were masked: for showing payloads in exported reports and on screen.

    Anything nested deeper than MASK_MAX_DEPTH is replaced by a placeholder: nobody reads
    it on a page, and a line may nest deeper than Python's recursion limit.
    """
    kind = type(value)
    if kind is str:
        hit = scan_string(value, key)
        return (f"[masked {hit[0]}: {hit[1]}]", 1) if hit is not None else (value, 0)
    if kind is not dict and kind is not list:
        return value, 0
    if _depth >= MASK_MAX_DEPTH:
        return f"[nested deeper than {MASK_MAX_DEPTH} levels: not shown]", 0
    total = 0
    if kind is dict:
        masked_dict = {}
        for child_key, child in value.items():
            masked_dict[child_key], count = mask_secrets(child, child_key, _depth=_depth + 1)
            total += count
        return masked_dict, total
    masked_list = []
    for child in value:
        masked, count = mask_secrets(child, key, _depth=_depth + 1)
        masked_list.append(masked)
        total += count
    return masked_list, total


@dataclass
class ScanReport:
    path: str
    events: int = 0
    findings: list[Finding] = field(default_factory=list)
    total_findings: int = 0
    by_detector: Counter[str] = field(default_factory=Counter)
    unreadable: int = 0
    unreadable_examples: list[str] = field(default_factory=list)
    ignored: int = 0  # findings left out by --ignore patterns
    complete: bool = True
    _flagged: array = field(default_factory=lambda: array("Q"))

    @property
    def clean(self) -> bool:
        return self.total_findings == 0

    @property
    def flagged_seqs(self) -> frozenset[int]:
        """Seqs of events holding at least one finding: what the app marks in the timeline."""
        return frozenset(self._flagged)

    def add(self, findings: list[Finding]) -> None:
        if not findings:
            return
        self._flagged.append(findings[0].seq)
        self.total_findings += len(findings)
        for finding in findings:
            self.by_detector[finding.detector] += 1
        room = MAX_FINDINGS_KEPT - len(self.findings)
        if room > 0:
            self.findings.extend(findings[:room])

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "clean": self.clean,
            "complete": self.complete,
            "events": self.events,
            "total_findings": self.total_findings,
            "flagged_events": len(self._flagged),
            "by_detector": dict(self.by_detector.most_common()),
            "findings": [f.to_json() for f in self.findings],
            "findings_listed": len(self.findings),
            "ignored": self.ignored,
            "unreadable": {"count": self.unreadable, "examples": self.unreadable_examples},
        }

    def to_text(self) -> str:
        lines = [f.to_text() for f in self.findings]
        if self.total_findings > len(self.findings):
            lines.append(f"... and {self.total_findings - len(self.findings):,} more finding(s) not listed")
        if self.clean:
            summary = f"{self.path}: clean. {self.events:,} events scanned, no secrets found."
        else:
            detectors = ", ".join(f"{name} {count:,}" for name, count in self.by_detector.most_common())
            summary = (
                f"{self.path}: {self.total_findings:,} possible secret(s) in {len(self._flagged):,} event(s) "
                f"of {self.events:,} ({detectors}). Values are masked."
            )
        if self.ignored:
            summary += f" {self.ignored:,} finding(s) matched --ignore patterns and are not counted."
        if self.unreadable:
            summary += f" {self.unreadable} unreadable line(s) were skipped; first: {self.unreadable_examples[0]}"
        if not self.complete:
            summary += " Cancelled: only part of the journal was scanned."
        return "\n".join(lines + [summary])


class PathFilter:
    """Findings to leave out, by JSON path pattern: ``*`` is one path segment or index,
    ``**`` any run of them, the rest literal (``payload.result.rows[*].blob``, ``**.signature``)."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        self.patterns = tuple(patterns)
        self._regex = re.compile("|".join(f"(?:{self._translate(p)})" for p in self.patterns)) if self.patterns else None

    @staticmethod
    def _translate(pattern: str) -> str:
        parts = re.split(r"(\*\*|\*)", pattern)
        return "".join(".*" if part == "**" else r"[^.\[\]]*" if part == "*" else re.escape(part) for part in parts) + r"\Z"

    def ignores(self, finding: Finding) -> bool:
        return self._regex is not None and self._regex.match(finding.path) is not None


def scan_events(
    events: Iterable[Event | JournalError],
    *,
    path: str = "",
    total: int = 0,
    ignore: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    cancelled: CancelCheck | None = None,
) -> ScanReport:
    """Scan an event stream, leaving out findings whose path matches an ``ignore`` pattern
    (see PathFilter); stops early (``complete=False``) when ``cancelled()``."""
    report = ScanReport(path=path)
    path_filter = PathFilter(ignore)
    for done, item in enumerate(events, 1):
        if isinstance(item, JournalError):
            report.unreadable += 1
            if len(report.unreadable_examples) < 5:
                report.unreadable_examples.append(str(item))
        else:
            report.events += 1
            findings = scan_event(item)
            if findings and path_filter.patterns:
                kept = [finding for finding in findings if not path_filter.ignores(finding)]
                report.ignored += len(findings) - len(kept)
                findings = kept
            report.add(findings)
        if done % PROGRESS_EVERY == 0:
            if progress is not None:
                progress(done, max(total, done))
            if cancelled is not None and cancelled():
                report.complete = False
                break
    return report


def scan_journal(
    journal: Journal,
    *,
    ignore: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    cancelled: CancelCheck | None = None,
) -> ScanReport:
    """Scan the events indexed in ``journal`` (call ``journal.index()`` first)."""
    return scan_events(journal.events(), path=str(journal.path), total=len(journal), ignore=ignore, progress=progress, cancelled=cancelled)


def flagged_seqs(journal: Journal, *, progress: ProgressCallback | None = None, cancelled: CancelCheck | None = None) -> frozenset[int]:
    """Seqs of the events with a possible secret, for the app's timeline marks."""
    return scan_journal(journal, progress=progress, cancelled=cancelled).flagged_seqs
