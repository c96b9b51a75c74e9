"""Secret detectors: the one table that redaction (harness) and ``scan`` (analysis) both use.

A value holds a secret when one of these finds it (names are the detector names both report):

* a known credential format (``FORMATS``: AWS, GitHub, GitLab, OpenAI, Anthropic, Slack, Stripe, ...);
* ``key-name``: a value under a sensitive key (``password``, ``api_key``, ``clientSecret``, a header
  pair such as ``["Authorization", "Basic ..."]``), a number there included;
* ``assignment``: a sensitive name set inside text (``DB_PASSWORD=...``, ``?client_secret=...``,
  ``password: ...`` in an exception message, ``AccountKey=...;`` in a connection string);
* ``command-line``: a password given to a command (``curl -u user:pw``, ``mysql -pPW``, ``--password PW``:
  ``journal/command_line.py``);
* ``json``: JSON encoded inside a string, decoded and checked to ``MAX_JSON_DEPTH``;
* ``base64``: base64 whose decoded text holds one of the above;
* ``entropy``: a token that looks random (ids, hashes, names and paths excluded).

Patterns compile on first use, so importing this module costs nothing at app start-up.
"""

from __future__ import annotations

import base64
import binascii
import heapq
import math
import re
from collections import _count_elements  # type: ignore[attr-defined]  # Counter's own C loop
from collections.abc import Callable, Iterator
from functools import cache, cached_property, lru_cache
from typing import Any, NamedTuple

import orjson

from .command_line import FLAG_GATE, FLAG_GATE_BYTES, ORACLE, command_line_spans
from .lazy_patterns import compile_every


class Format(NamedTuple):
    """A credential shape (a NamedTuple: a frozen dataclass compiled its methods at import, on the way to the
    viewer's first frame). ``anchors`` are regex fragments one of which every match contains
    (a cheap gate before the full pattern); a group named ``secret`` marks the secret part.

    Each anchor starts at an uncommon character (upper case, '_', '-', '.', '/'), a lookbehind
    checking what comes before it (``-(?<=sk-)`` is "sk-"): the gate is one alternation, and the
    regex engine skips quickly over positions where no alternative can start."""

    name: str
    pattern: str
    anchors: tuple[str, ...]  # case-sensitive regex fragments
    detect_secrets: str = ""  # the detect-secrets plugin this covers, for the README comparison
    check: Callable[[str], bool] | None = None  # a further test of the matched secret
    folded: tuple[str, ...] = ()  # lower-case literals looked for in the lower-cased text instead
    #: (match start, match end, secret start, secret end) of every match in a text, for a shape a regex cannot
    #: find in linear time (``pattern`` then only documents it): Python's engine tries a pattern again from
    #: every position, and a token that can start inside a run it already scanned to its end (``eyJ-eyJ-...``,
    #: ``a://a://...``) costs that run again at each such start.
    scanner: Callable[[str], Iterator[tuple[int, int, int, int]]] | None = None


def _basic_credentials(value: str) -> bool:
    """``Basic`` auth is base64 of ``user:password``; prose such as "Basic information" is not."""
    try:
        return b":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False


_START = r"(?<![A-Za-z0-9])"  # a token starts here ('_', '-' and punctuation may precede it)


def _token(first: str, rest: str, before: str = "A-Za-z0-9") -> str:
    """A token that starts with ``first`` (one character, or a class of them) not preceded by ``before``:
    the character comes first and the lookbehind after it, so the engine skips at C speed to where the token
    may start (a pattern that starts with a lookbehind is tried at every position: 30 times slower)."""
    return f"{first}(?<![{before}]{first}){rest}"


FORMATS: tuple[Format, ...] = (
    Format(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[^-]|-(?!----END))*"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?",
        ("PRIVATE KEY",),
        "PrivateKeyDetector",
    ),
    Format(
        "aws-access-key-id",
        _token("A", r"(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|NPA|NVA|IPA|3T[A-Z0-9])[0-9A-Z]{16}"),
        ("A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|NPA|NVA|IPA|3T)",),
        "AWSKeyDetector",
    ),
    # an STS session token (base64 of a protobuf naming "origin" or "aws"), often longer than the entropy rule's
    # 512 characters: AWS_SESSION_TOKEN's value, or a SessionToken in a credentials document
    Format(
        "aws-session-token",
        r"[IAF](?:[Qg]oJb3JpZ2lu|[wQ]oGZXIvYXdz|QoDYXdz)[A-Za-z0-9+/]{100,}={0,2}",  # its 12-letter head is enough
        ("J(?<=oJ)b3JpZ2lu", "GZXIvYXdz(?<=oGZXIvYXdz)", "DYXdz(?<=QoDYXdz)"),
    ),
    Format(
        "github-token",
        _token("g", r"(?:h[pousr]_[A-Za-z0-9]{36,255}|ithub_pat_[A-Za-z0-9_]{22,255})"),
        ("_(?<=gh[pousr]_)", "_pat_(?<=github_pat_)"),
        "GitHubTokenDetector",
    ),
    Format(
        "gitlab-token",
        _token("g", r"l(?:pat|dt|ptt|rt|soat|ffct|cbt|imt|agent|oas)-[A-Za-z0-9_-]{20,}"),
        ("-(?:" + "|".join(f"(?<=gl{kind}-)" for kind in "pat dt ptt rt soat ffct cbt imt agent oas".split()) + ")",),
        "GitLabTokenDetector",
    ),
    Format("anthropic-key", _token("s", r"k-ant-(?:api|admin|oat)[0-9]{2}-[A-Za-z0-9_-]{20,}"), ("-ant-(?<=sk-ant-)",)),
    Format(
        "openai-key",
        _token("s", r"k-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"),
        ("-(?<=sk-)",),
        "OpenAIDetector",
    ),
    Format("slack-token", _token("x", r"ox[abposr]-[A-Za-z0-9-]{10,}"), ("-(?<=xox[abposr]-)",), "SlackDetector"),
    Format(
        "slack-webhook",
        r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+",
        (r"\.slack(?<=hooks\.slack)",),
        "SlackDetector",
    ),
    Format(
        "stripe-key",
        _token("[sr]", r"k_(?:live|test)_[0-9A-Za-z]{16,}"),
        ("_live_(?<=k_live_)", "_test_(?<=k_test_)"),
        "StripeDetector",
    ),
    Format("google-api-key", r"AIza[0-9A-Za-z_-]{35}", ("AIza",)),
    # an OAuth access token of Google Cloud: often longer than the entropy rule's 512 characters
    Format("google-oauth-token", _token("y", r"a29\.[0-9A-Za-z_-]{20,}"), (r"\.(?<=ya29\.)",)),
    Format("sendgrid-key", _token("S", r"G\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"), (r"SG\.",), "SendGridDetector"),
    Format("npm-token", _token("n", r"pm_[A-Za-z0-9]{36}"), ("_(?<=npm_)",), "NpmDetector"),
    Format("pypi-token", _token("p", r"ypi-AgE[A-Za-z0-9_-]{50,}"), ("-AgE(?<=pypi-AgE)",), "PypiTokenDetector"),
    Format("twilio-key", _token("S", r"K[0-9a-fA-F]{32}"), ("SK[0-9a-fA-F]",), "TwilioKeyDetector"),
    # hex keys behind a vendor prefix (the entropy rule leaves hex alone: hashes are hex)
    Format("digitalocean-token", _token("d", r"o[por]_v1_[a-f0-9]{64}"), ("_v1_(?<=do[por]_v1_)",)),
    Format("databricks-token", _token("d", r"(?:api|ose)[a-h0-9]{32}(?:-[0-9])?"), (), folded=("dapi", "dose")),
    Format("shopify-token", _token("s", r"hp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"), ("_(?<=shp[acps][acst]_)",)),
    Format("sentry-token", _token("s", r"ntry(?:u_[a-f0-9]{64}|s_[A-Za-z0-9+/=_-]{40,})"), ("_(?<=sntry[us]_)",)),
    Format(
        "mailchimp-key",
        _token("[0-9a-f]", r"[0-9a-f]{31}-us[0-9]{1,2}(?![0-9])"),
        ("-us(?=[0-9])",),
        "MailchimpDetector",
    ),
    Format("pulumi-token", _token("p", r"ul-[a-f0-9]{40}"), ("-(?<=pul-)",)),
    Format("rubygems-token", _token("r", r"ubygems_[a-f0-9]{48}"), ("_(?<=rubygems_)",)),
    Format("postman-key", _token("P", r"MAK-[a-f0-9]{24}-[a-f0-9]{34}"), ("PMAK-",)),
    Format(
        "discord-bot-token",
        _token("[MNO]", r"[A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}"),
        (r"\.[A-Za-z0-9_-]{6}\.",),
        "DiscordBotTokenDetector",
    ),
    Format(
        "telegram-bot-token",
        _token("[0-9]", r"[0-9]{7,9}:AA[0-9A-Za-z_-]{33}", "0-9"),
        ("AA(?<=:AA)",),
        "TelegramBotTokenDetector",
    ),
    Format(
        "azure-storage-key",
        r"[aAsS](?:(?<=[aA])(?i:ccountKey)|(?<=[sS])(?i:haredAccessKey))=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
        (),
        "AzureStorageKeyDetector",
        folded=("accountkey=", "sharedaccesskey="),
    ),
    Format(
        "jwt",
        _START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        ("J(?<=eyJ)",),
        "JwtTokenDetector",
        scanner=lambda text: _jwt_spans(text),
    ),
    # short values only with a digit, so prose ("bearer tokens are...") is not a token
    Format(
        "bearer-token",
        r"[bB](?<!\w[bB])(?i:earer)\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*|(?=[A-Za-z._~+/-]{0,14}[0-9])"
        r"[A-Za-z0-9._~+/-]{6,15}(?![A-Za-z0-9._~+/-])=*)",
        (),
        folded=("bearer",),
    ),
    Format(
        "basic-auth",
        r"[bB](?<!\w[bB])(?i:asic)\s+(?P<secret>[A-Za-z0-9+/]{4,}={0,2})",
        (),
        "BasicAuthDetector",
        check=_basic_credentials,
        folded=("basic",),
    ),
    Format(
        "url-password",
        # the password is what lies between the first ':' and the last '@' of the authority (as urllib splits it):
        # the user may be empty (redis://:pw@host) and the password may hold '@' (postgres://u:p@ss@db)
        r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:\"'<>]*:(?P<secret>[^\s/\"'<>]+)@",
        # the user:password@ too, not just "://": every model request holds its endpoint's URL
        (r"//(?<=://)[^\s/:\"'<>]*:[^\s/\"'<>]*@",),
        "BasicAuthDetector",
        scanner=lambda text: _url_password_spans(text),
    ),
)

_TOKEN_RUN = re.compile(r"[A-Za-z0-9_-]*")
_JWT_START = re.compile(_START + "eyJ")


def _jwt_spans(text: str) -> Iterator[tuple[int, int, int, int]]:
    """``eyJ<8+>.eyJ<8+>.<signature>``, each run of token characters read once as a first segment: a later
    "eyJ" inside the same run (after a '-' or '_') ends where it ends, so fails where the first one did."""
    run = _TOKEN_RUN
    skip = 0
    for found in _JWT_START.finditer(text):
        start = found.start()
        if start < skip:
            continue
        first_end = skip = _end_of(run, text, start + 3)
        if first_end - start < 11 or not text.startswith(".eyJ", first_end):
            continue
        second_end = _end_of(run, text, first_end + 4)
        if second_end - first_end < 12 or text[second_end : second_end + 1] != ".":
            continue
        skip = _end_of(run, text, second_end + 1)
        yield start, skip, start, skip


def _end_of(run: re.Pattern[str], text: str, at: int) -> int:
    """Where a run of ``run``'s characters (a pattern that also matches nothing) from ``at`` ends."""
    found = run.match(text, at)
    return at if found is None else found.end()


_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_AUTHORITY = re.compile(r"[^\s/\"'<>]*")


def _url_password_spans(text: str) -> Iterator[tuple[int, int, int, int]]:
    """The password of every ``scheme://user:password@host``: between the authority's first ':' and its last
    '@' (the user may be empty, the password may hold '@'). Each authority is read once, to its end."""
    at = text.find("://")
    while at >= 0:
        scheme = _scheme_start(text, at)
        if scheme >= 0:
            begin = at + 3
            end = _end_of(_AUTHORITY, text, begin)
            last_at = text.rfind("@", begin, end)
            colon = text.find(":", begin, last_at) if last_at > begin else -1
            if 0 <= colon < last_at - 1:
                yield scheme, last_at + 1, colon + 1, last_at
        at = text.find("://", at + 3)


def _scheme_start(text: str, at: int) -> int:
    """Where ``[a-zA-Z][a-zA-Z0-9+.-]*`` ending at ``at`` starts (its first letter), or -1 (looked for in the
    64 characters before ``at``: a scheme is a short word)."""
    position, start = at - 1, -1
    while position >= max(0, at - 64) and text[position] in _SCHEME_CHARS:
        if text[position].isalpha():
            start = position
        position -= 1
    return start


FORMAT_NAMES = tuple(f.name for f in FORMATS)
#: Every detector name both redaction and scan report (formats and the structural ones).
DETECTOR_NAMES = FORMAT_NAMES + ("key-name", "assignment", "command-line", "json", "base64", "entropy")

#: detect-secrets plugins this table does not cover, and why (README lists them too).
NOT_COVERED = {
    "ArtifactoryDetector": "rare; its tokens are caught by entropy",
    "CloudantDetector": "rare; passwords in its URLs are caught by url-password",
    "IbmCloudIamDetector": "rare; caught by key-name (apikey) and entropy",
    "IbmCosHmacDetector": "rare; caught by key-name and entropy",
    "SoftlayerDetector": "rare; caught by key-name (api_key)",
    "SquareOAuthDetector": "rare; caught by entropy",
}

# -- sensitive names -------------------------------------------------------------------------
# Names are compared lower-cased with everything but letters and digits removed,
# so api_key, apiKey, API-KEY and x-api-key all become "apikey"/"xapikey".
_SENSITIVE_NAME = (
    r"(password|passwd|passphrase|pwd|pass|pw|secret|token|apikey|accesskey|privatekey|signingkey|encryptionkey|"
    r"secretkey|accountkey|sharedaccesskey|masterkey|credential|credentials|creds|authorization|cookie|sessionkey|"
    r"sessiontoken|auth|bearer)$|^(auth|secret|password|passwd|privatekey|apikey|accesstoken|refreshtoken|bearer)"
)
# ... except names that only talk about tokens or secrets: counts, limits, types, pagination.
_NOT_SENSITIVE_NAME = (
    r"tokens$|tokenizer|tokentype|tokencount|tokenlimit|tokenusage|maxtoken|pagetoken|nexttoken|continuationtoken|"
    r"cursor|secretname|secretref|secretid|passwordpolicy|author$|authors$|authority|authored|authmethod|authtype|"
    r"authurl|authprovider|authenabled|authrequired|(type|count|limit|name|id|ids|url|uri|path|hash|hint|length|"
    r"expiry|expires|expiresat|expiresin|scope|scopes|usage|details)$|"
    # words that end in "pass" (DB_PASS, SMTP_PASS are passwords; a bypass, a compass or a render pass is not)
    r"(by|com|encom|sur|tres|over|under|multi|render|sub|first|second|third|final|one|two|single|high|low|band|"
    r"all|boarding|mountain|hall|day|season|free|ski|bus|guest)pass$"
)
#: Whole names that are always sensitive (checked before the exceptions above).
ALWAYS_SENSITIVE = frozenset(
    {"pass", "pw", "sig", "sessionid", "sessid", "phpsessid", "jsessionid", "connectionstring"}
)
#: Lower-case literals one of which every sensitive name contains (a cheap gate before a parse).
NAME_HINTS = ("pass", "pw", "secret", "token", "key", "auth", "cred", "cookie", "sess", "bearer", "sig", "connection")
_PLACEHOLDER = (
    r"^[\[<({]?\s*(redacted|masked|removed|hidden|filtered|omitted)\b|\*{3,}|^x{3,}$|^<[^>]*>$|^\[[^\]]*\]$"
    r"|^\{\{.*\}\}$|^\$\{.*\}$|^\$[A-Z_][A-Z0-9_]*$|^sha256:[0-9a-f]{64}$"
    r"|^(none|null|true|false|changeme|example|placeholder|test|dummy|required|optional|string)$"
)
MIN_KEYED_VALUE_CHARS = 6  # a shorter value under a sensitive key is reported by scan only if it is a number
MIN_SECRET_NUMBER_DIGITS = 4
# ... a colour, a version or OID, or a dotted name such as ed25519.Ed25519PrivateKey is no credential
_NOT_A_CREDENTIAL = r"#[0-9a-fA-F]{3,8}$|\d+(\.\d+)+$|[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$"
_AUTH_SCHEMES = r"basic|bearer|token|digest|negotiate|apikey|sso-key"
#: A name and its operator; the value after it (an optional auth scheme, then "..." or '...' of up to 300
#: characters or a bare run up to a space, quote or one of &,;<>(){}[]) is read by ``_assignments``.
_ASSIGNMENT = r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,60})[\"']?(?P<lead>[ \t]*)(?P<op>=|:)(?P<trail>[ \t]*)"
MAX_JSON_DEPTH = 4
MAX_BASE64_CHARS = 65536

# -- entropy -----------------------------------------------------------------------------
_CANDIDATE = r"[A-Za-z0-9+/_\-.~]{20,}={0,3}"  # '=' only as base64 padding, so a=b splits
ENTROPY_MIN_CHARS = 20
ENTROPY_MAX_CHARS = 512  # longer runs are blobs (images, base64 documents), not credentials
# bits per character, by token length: a random base62 token of 20 chars measures
# about 4.0, of 32 about 4.6, of 40+ about 5.0; English-like identifiers stay below.
_ENTROPY_FLOOR = ((20, 3.9), (28, 4.2), (40, 4.5))
IDENTIFIER_WORD_LENGTH = 3.5
MIN_CLASS_SWITCH_RATIO = 0.3  # tokens under 32 chars
MIN_CLASS_SWITCH_RATIO_LONG = 0.25  # tokens of 32+ chars, where entropy already separates well
_ID_KEY = r"(^|[_\-.])(id|ids|key|hash|digest|checksum|etag|sha|uuid|ulid|nonce|cursor|ref)$"
_ID_KEY_CAMEL = r"[a-z0-9](Id|Ids|Hash|Key|Digest|Uuid|Sha)$"


class Hit(NamedTuple):
    """A secret in a string: its span, the detector and a short note (never the value)."""

    start: int
    end: int
    detector: str
    detail: str = ""


class _Compiled:
    """Every pattern compiled on first use, each on its own: the viewer's first frame masks a few strings,
    which need a few of these, and compiling them all (about 10 ms) was a fifth of its own part of that frame."""

    # Each format, searched on its own only where its anchors are (one alternation of every pattern was
    # tried at every position of a text: 0.6 s a megabyte), and the matches merged in order (_format_hits).
    @cached_property
    def formats(self) -> tuple[tuple[int, Format, re.Pattern[str] | None, re.Pattern[str] | None], ...]:
        return tuple(
            (
                index,
                fmt,
                re.compile("|".join(fmt.anchors)) if fmt.anchors else None,
                None if fmt.scanner else re.compile(fmt.pattern),
            )
            for index, fmt in enumerate(FORMATS)
        )

    # Grouped into one alternation whose first characters are few: the engine skips most positions.
    @cached_property
    def format_gate(self) -> re.Pattern[str]:
        return re.compile("|".join(anchor for fmt in FORMATS for anchor in fmt.anchors))

    @cached_property
    def format_gate_bytes(self) -> re.Pattern[bytes]:
        return re.compile(self.format_gate.pattern.encode())

    @cached_property
    def folded(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(anchor for fmt in FORMATS for anchor in fmt.folded))

    @cached_property
    def folded_bytes(self) -> tuple[bytes, ...]:
        return tuple(anchor.encode() for anchor in self.folded)

    @cached_property
    def folded_gate(self) -> re.Pattern[str]:
        return re.compile("|".join(map(re.escape, self.folded)))

    @cached_property
    def name_gate(self) -> re.Pattern[str]:
        return re.compile("|".join(NAME_HINTS))

    @cached_property
    def candidate(self) -> re.Pattern[str]:
        return re.compile(_CANDIDATE)

    @cached_property
    def candidate_bytes(self) -> re.Pattern[bytes]:
        return re.compile(_CANDIDATE.encode())

    @cached_property
    def name_gate_bytes(self) -> re.Pattern[bytes]:
        return re.compile("|".join(NAME_HINTS).encode())

    # every byte but ASCII letters, digits and the quote: what is left of a name when is_secret_key compares it
    @cached_property
    def not_name_bytes(self) -> bytes:
        return bytes(byte for byte in range(256) if not (chr(byte).isascii() and chr(byte).isalnum()) and byte != 0x22)

    # an escape sequence of one level of JSON or more (an escaped backslash is two control bytes, see
    # ``_flattened``), never the quote that closes a string
    @cached_property
    def escape_sequence(self) -> re.Pattern[bytes]:
        return re.compile(rb'(?:\\|\x02\x02)+(?:u[0-9a-f]{4}|[^"])')

    # a \\u escape that spells an ASCII character (or one that folds to it), or an escaped slash, in JSON kept in
    # a string (its backslash escaped, which ``_flattened`` turned into two control bytes): decoded, that JSON may
    # hold a name or a URL's password its raw bytes do not show
    @cached_property
    def hiding_escape(self) -> re.Pattern[bytes]:
        return re.compile(rb"(?:\x02\x02|\\)(?:u(?:00[2-7][0-9a-f]|212a|017f|013[01])|/)", re.IGNORECASE)

    # _CANDIDATE's characters as b"a", every other byte as b" ": a candidate is a run of ENTROPY_MIN_CHARS
    @cached_property
    def candidate_class(self) -> bytes:
        return bytes(
            0x61 if chr(byte).isascii() and (chr(byte).isalnum() or chr(byte) in "+/_-.~") else 0x20
            for byte in range(256)
        )

    # The only characters outside ASCII that lower-case to ASCII letters ("\u212a" -> "k", "\u0130" -> "i")
    # or match them case-insensitively ("\u017f" ~ "s", "\u0131" ~ "i"): a name spelled with one is a sensitive
    # name to the str tests (``is_secret_key`` lower-cases), not to a byte search of ``bytes.lower()``.
    @cached_property
    def folds_to_ascii(self) -> re.Pattern[bytes]:
        return re.compile(rb"\xc4[\xb0\xb1]|\xc5\xbf|\xe2\x84\xaa")

    @cached_property
    def sensitive(self) -> re.Pattern[str]:
        return re.compile(_SENSITIVE_NAME)

    @cached_property
    def not_sensitive(self) -> re.Pattern[str]:
        return re.compile(_NOT_SENSITIVE_NAME)

    @cached_property
    def placeholder(self) -> re.Pattern[str]:
        return re.compile(_PLACEHOLDER, re.IGNORECASE)

    @cached_property
    def not_credential(self) -> re.Pattern[str]:
        return re.compile(_NOT_A_CREDENTIAL)

    @cached_property
    def assignment(self) -> re.Pattern[str]:
        return re.compile(_ASSIGNMENT)

    @cached_property
    def flag_gate(self) -> re.Pattern[str]:
        return re.compile(FLAG_GATE)

    @cached_property
    def flag_gate_bytes(self) -> re.Pattern[bytes]:
        return re.compile(FLAG_GATE_BYTES)

    @cached_property
    def oracle_bytes(self) -> tuple[bytes, ...]:
        return tuple(name.encode() for name in ORACLE)

    @cached_property
    def auth_scheme(self) -> re.Pattern[str]:
        return re.compile(rf"(?i:{_AUTH_SCHEMES})[ \t]+")

    @cached_property
    def hex(self) -> re.Pattern[str]:
        return re.compile(r"(?:sha256:|0x)?[0-9a-fA-F]+")

    @cached_property
    def uuid(self) -> re.Pattern[str]:
        return re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

    @cached_property
    def id_key(self) -> re.Pattern[str]:
        return re.compile(_ID_KEY, re.IGNORECASE)

    @cached_property
    def id_key_camel(self) -> re.Pattern[str]:
        return re.compile(_ID_KEY_CAMEL)

    @cached_property
    def words(self) -> re.Pattern[str]:
        return re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")

    @cached_property
    def name_part(self) -> re.Pattern[str]:
        return re.compile(r"[a-z]+\d*|[A-Z]+\d*|[A-Z][a-z]+\d*|\d+")


@cache
def compiled() -> _Compiled:
    return _Compiled()


def compile_all() -> None:
    """Every pattern compiled now (see ``lazy_patterns``)."""
    compile_every(compiled())


# -- names -----------------------------------------------------------------------------------
@lru_cache(maxsize=8192)
def is_secret_key(key: str) -> bool:
    """password, api_key, apiKey, x-api-key, clientSecret, raw_token, DB_PASSWORD ... not max_tokens or token_type."""
    name = "".join(c for c in key.lower() if c.isalnum())
    if not name:
        return False
    if name in ALWAYS_SENSITIVE:
        return True
    patterns = compiled()
    return bool(patterns.sensitive.search(name)) and not patterns.not_sensitive.search(name)


@lru_cache(maxsize=8192)
def is_id_key(key: str) -> bool:
    """call_id, request_hash, etag, requestId: values that are random by design."""
    patterns = compiled()
    return bool(patterns.id_key.search(key) or patterns.id_key_camel.search(key))


def is_placeholder(value: str) -> bool:
    """[REDACTED], <redacted>, ***, ${VAR}, a sha256: hash, true/none: not a secret."""
    return bool(compiled().placeholder.search(value.strip()))


def is_secret_number(value: Any) -> bool:
    """A number that, under a sensitive key, is a secret (a numeric password or PIN: 4+ integer digits)."""
    kind = type(value)
    return (kind is int or kind is float) and abs(value) >= _SMALLEST_SECRET_NUMBER


_SMALLEST_SECRET_NUMBER = 10 ** (MIN_SECRET_NUMBER_DIGITS - 1)


def pair_name(container: Any) -> str | None:
    """The name of a header pair: ``["Authorization", value]`` or ``{"name": ..., "value": ...}``."""
    if type(container) is list:
        if len(container) == 2 and type(container[0]) is str and _HEADER_NAME.fullmatch(container[0]):
            return container[0]
        return None
    if type(container) is dict and len(container) == 2 and "value" in container:
        for field in ("name", "key", "header", "field"):
            name = container.get(field)
            if type(name) is str and _HEADER_NAME.fullmatch(name):
                return name
    return None


_HEADER_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


def pair_secret_index(container: Any) -> str | int | None:
    """Where the value of a sensitive header pair sits (1 or "value"), else None."""
    name = pair_name(container)
    if name is None or not is_secret_key(name):
        return None
    return 1 if type(container) is list else "value"


# -- entropy ---------------------------------------------------------------------------------
def shannon_entropy(text: str) -> float:
    """Bits per character of ``text``'s own character distribution: log2(n) - sum(c log2 c) / n over the
    counts c, the products looked up (a Python expression per character made the entropy rule the slowest
    detector on a megabyte of tokens)."""
    length = len(text)
    if not length:
        return 0.0
    counts = _counts(text).values()
    if length < len(_C_LOG2_C):
        return math.log2(length) - sum(map(_C_LOG2_C.__getitem__, counts)) / length
    return math.log2(length) - sum(count * math.log2(count) for count in counts) / length


def _counts(text: str) -> dict[str, int]:
    """How often each character occurs (``Counter`` without its constructor: 1.3 µs for 20 characters, not 3)."""
    counts: dict[str, int] = {}
    _count_elements(counts, text)
    return counts


# (as long as the longest candidate: a longer text's entropy takes the loop)
_C_LOG2_C = tuple(count * math.log2(count) if count else 0.0 for count in range(ENTROPY_MAX_CHARS + 1))


def _entropy_floor(length: int) -> float:
    floor = _ENTROPY_FLOOR[0][1]
    for min_length, bits in _ENTROPY_FLOOR:
        if length >= min_length:
            floor = bits
    return floor


def random_part(token: str) -> str | None:
    """The part of a candidate token that looks random, or None."""
    return next((part for _, part, _ in _random_parts(token)), None)


def _random_parts(token: str) -> Iterator[tuple[int, str, float]]:
    """(offset, part, bits per character) of each part of a candidate token that looks random: the token, or
    of a dotted name, URL or file path (base64 has no '.') each part between dots and slashes. Every part,
    not the first alone: redaction left the others, and a scan of what it wrote found them."""
    if "." in token or "//" in token:
        for part in re.finditer(r"[^./]+", token):
            bits = _randomness(part.group()) if part.end() - part.start() >= ENTROPY_MIN_CHARS else None
            if bits is not None:
                yield part.start(), part.group(), bits
        return
    bits = _randomness(token)
    if bits is not None:
        yield 0, token, bits


def looks_random(token: str) -> bool:
    """Whether an ASCII token (a candidate: ``_CANDIDATE``'s characters) looks random."""
    return _randomness(token) is not None


def _randomness(token: str) -> float | None:
    """The bits per character of a token that looks random (``looks_random``), else None."""
    stripped = token.strip("=.-_~")
    if len(stripped) < ENTROPY_MIN_CHARS or len(stripped) > ENTROPY_MAX_CHARS or not stripped.isascii():
        return None
    patterns = compiled()
    if patterns.hex.fullmatch(stripped) or patterns.uuid.search(stripped):
        return None
    # random tokens mix classes; a word, a slug or an ALL_CAPS name does not
    classes = stripped.translate(_CLASS_OF)  # one letter a character: l(ower), u(pper), d(igit), o(ther)
    has_digit, has_lower, has_upper = "d" in classes, "l" in classes, "u" in classes
    separators = stripped.count("-") + stripped.count("_") + stripped.count(".")
    if has_digit + has_lower + has_upper < 2 or not has_digit and separators >= 2:
        return None
    if _class_switch_ratio(classes) < (MIN_CLASS_SWITCH_RATIO if len(stripped) < 32 else MIN_CLASS_SWITCH_RATIO_LONG):
        return None
    if _mean_word_length(stripped) >= IDENTIFIER_WORD_LENGTH or _is_snake_name(stripped):
        return None
    bits = shannon_entropy(stripped)
    return bits if bits >= _entropy_floor(len(stripped)) else None


def _mean_word_length(token: str) -> float:
    """Mean length of the letter runs: about 1.5 in random text, 4 or more in names."""
    words = compiled().words.findall(token)
    return sum(map(len, words)) / len(words) if words else 0.0


def _is_snake_name(token: str) -> bool:
    """EC_KEY_get0_public_key, ORDER_STATUS_2024_Q3: three or more parts, each one word."""
    if "_" not in token and "-" not in token:
        return False
    parts = re.split(r"[_\-]+", token.strip("_-"))
    name_part = compiled().name_part
    return len(parts) >= 3 and all(name_part.fullmatch(part) for part in parts)


#: Each character as its class, for ``str.translate`` (the candidates are ASCII: ``_CANDIDATE``'s characters).
_CLASS_OF = {
    code: "l" if chr(code).islower() else "u" if chr(code).isupper() else "d" if chr(code).isdigit() else "o"
    for code in range(128)
}


def _class_switch_ratio(classes: str) -> float:
    """How often neighbours differ in class (``classes``: a token through ``_CLASS_OF``): ~0.45 for random
    base62/base64, under 0.3 for identifiers; upper -> lower does not count (how a capitalised word starts).
    At C speed: the classes against themselves shifted by one, as two big integers XORed, leave a zero byte
    where neighbours agree (a Python loop over the characters made the entropy rule the slowest detector)."""
    pairs = len(classes) - 1
    agree = (int.from_bytes(classes[:-1].encode()) ^ int.from_bytes(classes[1:].encode())).to_bytes(pairs).count(0)
    return (pairs - agree - classes.count("ul")) / pairs


# -- strings ---------------------------------------------------------------------------------
def might_hold_secret(data: bytes) -> bool:
    """Cheap test over serialized JSON: False means no detector can fire on any key or value in it.

    Any contiguous piece of a serialization (a nested object or list as orjson writes it) can be
    tested on its own, which is how redaction skips the clean parts of a payload it must walk.

    Every test here looks inside one *piece* (a JSON string: a key or a value), so a piece found clean is
    clean wherever it turns up. Most pieces of a model call repeat from call to call (keys, header values,
    the conversation every request resends): those are found in ``_CLEAN_PIECES`` and only the fresh ones
    are searched, instead of the whole payload."""
    flat = _flattened(data)
    parts = flat.split(b'"')
    fresh = set(parts[1::2]) - _CLEAN_PIECES.pieces
    if fresh and b"sha256:" in data:
        fresh = {piece for piece in fresh if not _our_hash(piece)}
    if not fresh:
        return False
    ids: set[bytes] = set()
    if _fresh_pieces_may_hold_secret(fresh, flat, parts, ids):
        return True
    _CLEAN_PIECES.add(fresh - ids if ids else fresh)
    return False


def _our_hash(piece: bytes) -> bool:
    """A hash the harness writes (``sha256:`` and 64 letters and digits), which ``find_secrets`` passes over:
    a request's hash is fresh in every answer."""
    return len(piece) == 71 and piece[:7] == b"sha256:" and piece[7:].isalnum()


def _flattened(data: bytes) -> bytes:
    """``data`` with each escaped quote or backslash turned into two control bytes of the same length,
    which no test below looks for and which are never a name or token character: its only quotes are the
    ones that open and close its strings, so a string holding ``\\"`` stays one piece. Split at its quotes,
    every other part (from the second) is a string, a *piece*; what lies between strings (punctuation,
    numbers, true, false, null) is no piece: no detector looks at it (a number is a secret only under a
    sensitive key, a string)."""
    if b"\\\\" in data:
        data = data.replace(b"\\\\", b"\x02\x02")
    if b'\\"' in data:
        data = data.replace(b'\\"', b"\x01\x01")
    return data


def _fresh_pieces_may_hold_secret(fresh: set[bytes], flat: bytes, parts: list[bytes], ids: set[bytes]) -> bool:
    """The tests of ``might_hold_secret`` over the pieces not yet found clean (``flat``: the payload
    ``_flattened``, ``parts``: it split at its quotes);
    ``ids``: the pieces whose random tokens were let through as the plain values of id-named members (not
    clean anywhere else)."""
    patterns = compiled()
    ordered = list(fresh)
    joined = b'"'.join(ordered)
    if patterns.format_gate_bytes.search(joined) or folds_to_ascii(joined):
        return True
    if patterns.flag_gate_bytes.search(joined) or any(name in joined for name in patterns.oracle_bytes):
        return True  # a flag: its name or its command says whether its value is a password
    if (b"\x02\x02" in joined or b"\\" in joined) and patterns.hiding_escape.search(joined):
        return True  # JSON kept in a string spells a character with an escape the byte tests cannot see through
    lowered = joined.lower()
    if any(anchor in lowered for anchor in patterns.folded_bytes):
        return True
    if _a_piece_names_a_secret(ordered, lowered):
        return True
    if _CANDIDATE_RUN not in joined.translate(patterns.candidate_class):
        return False  # no run of token characters long enough to be a candidate (one C pass, not a regex)
    index, counted = 0, 0  # the piece the last candidate was in, and where the quotes were counted to
    lookups, verdicts = 0, None  # past _ID_LOOKUPS, every piece's verdict in one pass (see _only_id_values)
    for candidate in patterns.candidate_bytes.finditer(joined):
        start = candidate.start()
        index += joined.count(b'"', counted, start)  # matches come in order: the count goes once over joined
        counted = start
        if start == 0 or joined[start - 1] == 0x22:  # a token that starts its piece may be an id
            piece = ordered[index]
            if piece in ids:
                continue
            lookups += 1
            if lookups > _ID_LOOKUPS:
                verdicts = verdicts or _id_verdicts(parts)
            if verdicts.get(piece, False) if verdicts is not None else _only_id_values(flat, piece):
                ids.add(piece)  # first: a fresh id is judged random only after ~25 µs of character statistics
                continue
        text = candidate.group().decode("ascii")
        if (_token_may_be_secret if len(text) <= _CACHED_TOKEN_CHARS else _token_may_be_secret.__wrapped__)(text):
            return True
    return False


def _a_piece_names_a_secret(ordered: list[bytes], lowered: bytes) -> bool:
    """Whether a piece holding a name hint is a sensitive name or may assign one. Hints are looked for
    with every byte but ASCII letters, digits and the quotes between pieces left out, as ``is_secret_key``
    leaves them out of the names it compares (``pa-ss_word`` is ``password`` to it); where a piece holds
    an escape, also with its escape sequences left out (``au\\nthorization`` decodes to a name with a
    line break in it, which ``is_secret_key`` leaves out too)."""
    patterns = compiled()
    squeezed = [lowered.translate(None, patterns.not_name_bytes)]
    if b"\\" in lowered or b"\x02" in lowered:
        squeezed.append(patterns.escape_sequence.sub(b"", lowered).translate(None, patterns.not_name_bytes))
    for names in squeezed:
        if patterns.name_gate_bytes.search(names) is None:
            continue
        for index, piece in enumerate(names.split(b'"')):
            if patterns.name_gate_bytes.search(piece) and _names_a_secret(ordered[index].lower()):
                return True
    return False


def _only_id_values(flat: bytes, piece: bytes) -> bool:
    """Whether every place the candidate ``piece`` (a string that starts with a token character) appears in
    ``flat`` (``_flattened``) is the plain value of an object member whose name marks values random by
    design (``id``, ``call_id``, ``etag``, not a sensitive name): ``find_secrets`` looks for no random or
    base64 token there (formats, names and assignments it does look for, and the tests before this one
    have). A model answer's ``chatcmpl-…`` and ``call_…`` ids made the gate fail at every level above them,
    so each new answer was searched again level by level down to its ids. Anything else (an escape, JSON in
    the string, a list item, a name with an escape) answers False.

    The piece is found quoted, by a byte search: in orjson's compact JSON only a separator (``:,]}``, never
    a token character) follows a closing quote, so ``"piece"`` matches the whole string and nothing else.
    Each call searches the payload: a payload of many fresh strings asks ``_id_verdicts`` once instead."""
    if _has_escape(piece):
        return False
    quoted = b'"' + piece + b'"'
    at = flat.find(quoted)
    while at >= 0:
        # "name":"piece": the name's closing quote and a colon right before the piece's opening quote
        opens = flat.rfind(b'"', 0, at - 2) if flat[at - 2 : at] == b'":' else -1
        if opens < 0:
            return False
        name = flat[opens + 1 : at - 2]
        if _has_escape(name) or not _is_id_name(name):
            return False
        at = flat.find(quoted, at + len(quoted))
    return True


_ID_LOOKUPS = 16


def _id_verdicts(parts: list[bytes]) -> dict[bytes, bool]:
    """``_only_id_values`` of every piece of ``parts``, in one pass."""
    verdicts: dict[bytes, bool] = {}
    for index in range(1, len(parts), 2):
        piece = parts[index]
        verdicts[piece] = verdicts.get(piece, True) and _an_id_value_at(parts, index)
    return verdicts


def _an_id_value_at(parts: list[bytes], index: int) -> bool:
    # "name":"piece" splits into ..., name, ":", piece, ...: pieces sit at odd places
    if index % 2 == 0 or index < 3 or parts[index - 1] != b":":
        return False
    piece, name = parts[index], parts[index - 2]
    if _has_escape(piece) or piece[:1] in (b"{", b"[") or _has_escape(name):
        return False
    return _is_id_name(name)


def _has_escape(piece: bytes) -> bool:
    """A backslash, or the control bytes ``_flattened`` put for an escaped quote or backslash (one C pass:
    three ``in`` tests took four times as long on a name)."""
    return len(piece.translate(None, _ESCAPE_BYTES)) != len(piece)


_ESCAPE_BYTES = b"\\\x01\x02"


class _CleanPieces:
    """Pieces the detectors found nothing in (bounded: cleared when full). They are judged by the
    shared detectors alone, so one set serves every caller in the process."""

    MAX_BYTES = 8 * 1024 * 1024  # what the set holds in memory, its own slots and objects counted
    PER_PIECE = 90  # a bytes object's header and its slot in the set: most pieces are names of a few bytes

    def __init__(self) -> None:
        self.pieces: set[bytes] = set()
        self.bytes = 0

    def add(self, fresh: set[bytes]) -> None:
        size = sum(map(len, fresh)) + self.PER_PIECE * len(fresh)
        if size > self.MAX_BYTES // 4:
            return  # one huge payload would flush everything else
        if self.bytes + size > self.MAX_BYTES:
            self.pieces.clear()
            self.bytes = 0
        self.pieces |= fresh
        self.bytes += size


_CLEAN_PIECES = _CleanPieces()


@lru_cache(maxsize=4096)
def _is_id_name(name: bytes) -> bool:
    text = name.decode("utf-8", "replace")
    return is_id_key(text) and not is_secret_key(text)


_CACHED_TOKEN_CHARS = 128


@lru_cache(maxsize=8192)
def _token_may_be_secret(token: str) -> bool:
    """A candidate token that looks random or is base64 of a secret (identifiers such as
    ``additionalProperties`` turn up in every request: judged once)."""
    return random_part(token) is not None or _base64_hit(token, 0) is not None


_CANDIDATE_RUN = b"a" * ENTROPY_MIN_CHARS


def folds_to_ascii(data: bytes) -> bool:
    """Whether UTF-8 ``data`` holds a character that case-folds to an ASCII letter: byte gates that
    compare lower-cased ASCII must then give way to the str tests."""
    return not data.isascii() and compiled().folds_to_ascii.search(data) is not None


def _names_a_secret(piece: bytes) -> bool:
    """Whether a lower-cased piece holding a name hint is a sensitive key or name (a header pair's name), or
    text that may assign one (holds '=' or ':'). An escape in it (a backslash, or the control bytes
    ``_flattened`` put for one): assume it may. A name is judged once (the same ones turn up in every payload:
    ``prompt_tokens``, ``authorization``)."""
    if len(piece) > _CACHED_NAME_BYTES:  # prose, not a name: judged, never kept in a cache
        return _judge_piece(piece)
    return _judge_piece_cached(piece)


_CACHED_NAME_BYTES = 256


def _judge_piece(piece: bytes) -> bool:
    if _has_escape(piece) or b"=" in piece or b":" in piece:
        return True
    # uncached: a name's verdict is kept whole by _judge_piece_cached, and prose is never kept
    return bool(is_secret_key.__wrapped__(piece.decode("utf-8", "replace")))


_judge_piece_cached = lru_cache(maxsize=8192)(_judge_piece)


def find_secrets(text: str, key: str | None = None, *, first: bool = False, depth: int = 0) -> list[Hit]:
    """The secrets in ``text`` (a value under ``key``, or a key when ``key`` is None), in order found.

    ``first`` stops at the first hit (scan); redaction wants them all. JSON inside the
    string is decoded and checked as a whole: its hit spans the whole string.
    """
    if len(text) < (MIN_KEYED_VALUE_CHARS if key is not None else 8):
        return []
    if len(text) == 71 and text[:7] == "sha256:":
        return []  # our own hashes (and a hashed password is a placeholder anyway)
    patterns = compiled()
    hits: list[Hit] = []
    lowered = text.lower()
    if patterns.format_gate.search(text) or patterns.folded_gate.search(lowered):
        hits.extend(_format_hits(text, lowered, first))
        if first and hits:
            return hits
    if key is not None and is_secret_key(key) and not is_placeholder(text):
        hits.append(Hit(0, len(text), "key-name", f"under key {key!r}"))
        return hits
    if ("=" in text or ":" in text) and patterns.name_gate.search(lowered):
        for hit in _assignments(text):
            hits.append(hit)
            if first:
                return hits
    if patterns.flag_gate.search(text) or any(name in text for name in ORACLE):
        for start, end, what in command_line_spans(text, is_secret_key):
            if not is_placeholder(text[start:end]):
                hits.append(Hit(start, end, "command-line", what))
                if first:
                    return hits
    if depth < MAX_JSON_DEPTH and text.lstrip()[:1] in ("{", "["):
        inner = _json_hit(text, depth)
        if inner is not None:
            return [*hits, Hit(0, len(text), "json", f"{inner.detector} {inner.detail}".strip())]
    if len(text) >= ENTROPY_MIN_CHARS and not (key is not None and is_id_key(key)):
        for candidate in patterns.candidate.finditer(text):
            token = candidate.group()
            base64_hit = _base64_hit(token, depth)
            if base64_hit is not None:
                hits.append(Hit(candidate.start(), candidate.end(), "base64", f"decodes to {base64_hit.detector}"))
            else:
                found = False
                for offset, part, bits in _random_parts(token):
                    start = candidate.start() + offset
                    hits.append(Hit(start, start + len(part), "entropy", f"{bits:.1f} bits/char"))
                    found = True
                    if first:
                        return hits
                if not found:
                    continue
            if first:
                return hits
    return hits


def _format_hits(text: str, lowered: str, first: bool) -> list[Hit]:
    """The credential formats in ``text``, as one alternation of them all would find them (leftmost first, the
    earlier format at one start, nothing that starts inside a match), from each format's own search."""
    streams = [
        _format_matches(index, fmt, pattern, text)
        for index, fmt, gate, pattern in compiled().formats
        if (gate is not None and gate.search(text))
        or (fmt.folded and any(literal in lowered for literal in fmt.folded))
    ]
    hits, position = [], 0
    for start, _index, end, secret_start, secret_end, name in heapq.merge(*streams):
        if start >= position:
            hits.append(Hit(secret_start, secret_end, name))
            position = end
            if first:
                break
    return hits


def _format_matches(
    index: int, fmt: Format, pattern: re.Pattern[str] | None, text: str
) -> Iterator[tuple[int, int, int, int, int, str]]:
    """(start, format index, end, secret start, secret end, name) of each match of one format, in order."""
    if pattern is None:
        assert fmt.scanner is not None
        for start, end, secret_start, secret_end in fmt.scanner(text):
            if _is_secret(fmt, text[secret_start:secret_end]):
                yield start, index, end, secret_start, secret_end, fmt.name
        return
    has_secret_group = "secret" in pattern.groupindex
    position = 0
    while (match := pattern.search(text, position)) is not None:
        secret_start, secret_end = match.span("secret") if has_secret_group else match.span()
        if secret_start < 0 or not _is_secret(fmt, text[secret_start:secret_end]):
            position = match.start() + 1  # not this one; a real one may start inside it ("basic Basic dXNlcjpwdw==")
            continue
        yield match.start(), index, match.end(), secret_start, secret_end, fmt.name
        position = match.end()


def _is_secret(fmt: Format, secret: str) -> bool:
    """A match's secret passes its format's check and is no marker of a redaction ("[REDACTED:...]")."""
    return (fmt.check is None or fmt.check(secret)) and not (secret[:1] == "[" and is_placeholder(secret))


@lru_cache(maxsize=65536)
def secret_in_key(key: str) -> Hit | None:
    """The first secret in an object key (keys repeat across events, so this is cached)."""
    hits = find_secrets(key, first=True)
    return hits[0] if hits else None


def _assignments(text: str) -> Iterator[Hit]:
    """``name=value`` and ``name: value`` with a sensitive name, in linear time: the name and operator come from
    a regex that reads no further than them; the value is read here (a bare value's end is found once for
    the run it is in, not again from each assignment inside it), and a long value is judged by its head."""
    patterns = compiled()
    head, scheme = patterns.assignment, patterns.auth_scheme
    runs = _RunEnds(text)
    position = 0
    while (match := head.search(text, position)) is not None:
        # a value may hold further assignments (a URL's query string, a cookie): look on after the name
        position = match.end("op")
        name = match.group("name")
        if not is_secret_key(name):
            continue
        at = match.end()
        with_scheme = scheme.match(text, at)
        value = _value_at(text, with_scheme.end(), runs) if with_scheme is not None else None
        value = value or _value_at(text, at, runs)
        if value is None:
            continue
        group, start, end = value
        if _assigns_a_secret(text, match, group, text[start : min(end, start + _JUDGED_VALUE_CHARS)], end - start):
            yield Hit(start, end, "assignment", f"{name!r} set in text")
            position = max(position, end)  # what a later name inside the value would find lies inside this hit


#: A value longer than this is judged by its head: no placeholder, version or dotted name is this long.
_JUDGED_VALUE_CHARS = 320
_QUOTED_VALUE = {'"': re.compile(r'"([^"\n]{1,300})"'), "'": re.compile(r"'([^'\n]{1,300})'")}


def _value_at(text: str, at: int, runs: _RunEnds) -> tuple[str, int, int] | None:
    """The value of an assignment at ``at``: ("dq" | "sq" | "bare", start, end), or None."""
    quote = text[at : at + 1]
    if quote in _QUOTED_VALUE:
        quoted_value = _QUOTED_VALUE[quote].match(text, at)
        return None if quoted_value is None else ("dq" if quote == '"' else "sq", at + 1, quoted_value.end() - 1)
    end = runs.end(at)
    return ("bare", at, end) if end > at else None


class _RunEnds:
    """Where the bare value starting at a position ends (its next break character), for positions asked in
    increasing order: one search per run, however many assignments it holds (``a=a=a=...``)."""

    _BREAK = re.compile(r"[\s\"'&,;<>(){}\[\]]")

    def __init__(self, text: str) -> None:
        self.text = text
        self.next_break = -1  # the first break character at or after the last position asked, once known

    def end(self, at: int) -> int:
        if at > self.next_break:
            found = self._BREAK.search(self.text, at)
            self.next_break = len(self.text) if found is None else found.start()
        return self.next_break


def _assigns_a_secret(text: str, match: re.Match[str], group: str, value: str, length: int) -> bool:
    """Whether the value (its head, ``length`` characters in all) of a sensitive name is a credential."""
    patterns = compiled()
    tight = match.group("op") == "=" and not match.group("lead") and not match.group("trail")
    # "name": "value" is JSON (or a dict literal) kept in text: as structured as name=value
    tight = tight or group != "bare" and match.start("name") > 0 and text[match.start("name") - 1] in "\"'"
    if length > _JUDGED_VALUE_CHARS:
        return not is_placeholder(value)
    # a dotted name ("token = Name.Namespace") is code, unless bound tightly (password=s3cr3t.x)
    if is_placeholder(value) or (patterns.not_credential.match(value) and not (tight and "." in value)):
        return False
    has_digit = any(c.isdigit() for c in value)
    # in prose "password: required" is not a secret; in code and URLs name=value is one
    return length >= 16 or has_digit and length >= 4 or tight and length >= 6


def _json_hit(text: str, depth: int) -> Hit | None:
    stripped = text.strip()
    if depth >= MAX_JSON_DEPTH or stripped[-1:] not in ("}", "]"):
        return None
    try:
        value = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
    hit = first_secret_in_value(value, depth=depth + 1)
    return None if hit is None else Hit(0, len(text), hit.detector, hit.detail)


def _base64_hit(token: str, depth: int) -> Hit | None:
    """A hit in the text a base64 token decodes to (formats, names; not entropy), else None."""
    if depth >= MAX_JSON_DEPTH or "." in token or "~" in token or len(token) > MAX_BASE64_CHARS:
        return None
    body = token.rstrip("=")
    if len(body) % 4 == 1 or body[::4].translate(_WITHOUT_ASCII_LEADS):
        return None  # a first character of a group of four that no ASCII text's base64 has (a random token's)
    try:
        if "-" in body or "_" in body:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        else:
            raw = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) < 12 or not raw.isascii():
        return None
    decoded = raw.decode("ascii")
    if not decoded.isprintable() and not decoded.replace("\n", "").replace("\r", "").replace("\t", "").isprintable():
        return None
    hits = [hit for hit in find_secrets(decoded, depth=depth + 1) if hit.detector != "entropy"]
    return hits[0] if hits else None


#: The base64 characters that can start a group of four encoding ASCII (its first byte's top bit is 0: an index
#: under 32), removed by ``str.translate``: what is left of the group starts shows a byte ASCII cannot hold.
_WITHOUT_ASCII_LEADS = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef")


def first_secret_in_value(value: Any, key: str | None = None, *, depth: int = 0) -> Hit | None:
    """The first secret anywhere in a decoded JSON value (keys, values, header pairs, numbers)."""
    stack: list[tuple[Any, str | None]] = [(value, key)]
    while stack:
        item, item_key = stack.pop()
        kind = type(item)
        if kind is str:
            hits = find_secrets(item, item_key, first=True, depth=depth)
            if hits:
                return hits[0]
        elif is_secret_number(item) and item_key is not None and is_secret_key(item_key):
            return Hit(0, 0, "key-name", f"number under key {item_key!r}")
        elif kind is dict:
            for child_key, child in item.items():
                key_hits = find_secrets(child_key, first=True, depth=depth) if len(child_key) >= 8 else []
                if key_hits:
                    return Hit(0, 0, key_hits[0].detector, "in a key")
                stack.append((child, child_key))
            if pair_secret_index(item) is not None:
                stack.append((item["value"], pair_name(item)))
        elif kind is list:
            if pair_secret_index(item) is not None:
                stack.append((item[1], item[0]))
            stack.extend((child, item_key) for child in item)
    return None
