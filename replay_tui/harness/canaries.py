"""Canary secrets for ``replay-tui redact-check`` and the tests: a fresh random secret for
every detector and every place a secret can sit, and the check that none survives.

``detector_canaries`` holds one canary per detector of ``journal.detectors`` (in free
text); ``canary_request`` adds the structural places (headers in every container,
key names, numbers, keys, URL queries, exception text, JSON in a string). Pass a
seeded ``random.Random`` for a reproducible sweep; the default draws from the OS.
"""

from __future__ import annotations

import base64
import itertools
import json
import random
import secrets
import string
from dataclasses import dataclass
from typing import Any

from ..journal import detectors
from .jsonpath import JsonPath
from .redaction import RedactionRules, Redactor, iter_string_paths

_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "_-"
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_B64 = _ALNUM + "+/"
_HEX = "0123456789abcdef"


def _pick(rng: random.Random, alphabet: str, count: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(count))


@dataclass(frozen=True)
class Canary:
    name: str  # the detector (or structural rule) that must catch it
    secret: str  # the part that must not survive
    kinds: tuple[str, ...] | None = None  # the event kinds its rule applies to (None: all)
    context: str = "{}"  # how the secret appears in text ("{}" is the secret)
    alphabet: str = ""  # the characters its random tail is drawn from (for boundary tests)
    whole: bool = False  # caught as a whole string only (a JSON document), not inside prose

    @property
    def text(self) -> str:
        return self.context.replace("{}", self.secret)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def random_token(rng: random.Random, length: int = 32) -> str:
    """A random token the entropy rule is defined to catch (a draw that happens to look
    like a word is drawn again, so the canary never fails by chance)."""
    while True:
        token = _pick(rng, _ALNUM, length)
        if detectors.looks_random(token):
            return token


def detector_canaries(rng: random.Random | None = None) -> list[Canary]:
    """One canary per detector in ``journal.detectors.DETECTOR_NAMES`` except key-name (structural)."""
    rng = rng or secrets.SystemRandom()
    jwt_head = _b64url(b'{"alg":"HS256","typ":"JWT"}')
    jwt_body = _b64url(('{"sub":"' + _pick(rng, _ALNUM, 12) + '"}').encode())
    key_body = "\n".join(_pick(rng, _B64, 64) for _ in range(3))
    basic = base64.b64encode(f"admin:{_pick(rng, _ALNUM, 16)}".encode()).decode()
    aws_in_base64 = base64.b64encode(("AKIA" + _pick(rng, _UPPER_DIGITS, 16)).encode()).decode()
    return [
        Canary("private-key", f"-----BEGIN RSA PRIVATE KEY-----\n{key_body}\n-----END RSA PRIVATE KEY-----"),
        Canary("aws-access-key-id", "AKIA" + _pick(rng, _UPPER_DIGITS, 16), alphabet=_UPPER_DIGITS),
        Canary("aws-session-token", "IQoJb3JpZ2luX2VjE" + _pick(rng, _B64, 700), alphabet=_B64),
        Canary("github-token", "ghp_" + _pick(rng, _ALNUM, 36), alphabet=_ALNUM),
        Canary("gitlab-token", "glpat-" + _pick(rng, _URLSAFE, 20), alphabet=_URLSAFE),
        Canary("anthropic-key", "sk-ant-api03-" + _pick(rng, _URLSAFE, 40), alphabet=_URLSAFE),
        Canary("openai-key", "sk-proj-" + _pick(rng, _URLSAFE, 40), alphabet=_URLSAFE),
        Canary("slack-token", "xoxb-" + _pick(rng, string.digits, 12) + "-" + _pick(rng, _ALNUM, 24), alphabet=_ALNUM),
        Canary(
            "slack-webhook",
            _pick(rng, _ALNUM, 24),
            alphabet=_ALNUM,
            context=f"https://hooks.slack.com/services/T{_pick(rng, _UPPER_DIGITS, 8)}/B{_pick(rng, _UPPER_DIGITS, 8)}/{{}}",
        ),
        Canary("stripe-key", "sk_live_" + _pick(rng, _ALNUM, 24), alphabet=_ALNUM),
        Canary("google-api-key", "AIza" + _pick(rng, _URLSAFE, 35), alphabet=_URLSAFE),
        Canary("google-oauth-token", "ya29.a0" + _pick(rng, _URLSAFE, 600), alphabet=_URLSAFE),
        Canary("sendgrid-key", "SG." + _pick(rng, _URLSAFE, 22) + "." + _pick(rng, _URLSAFE, 43), alphabet=_URLSAFE),
        Canary("npm-token", "npm_" + _pick(rng, _ALNUM, 36), alphabet=_ALNUM),
        Canary("pypi-token", "pypi-AgEIcHlwaS5vcmc" + _pick(rng, _URLSAFE, 60), alphabet=_URLSAFE),
        Canary("twilio-key", "SK" + _pick(rng, string.hexdigits.lower(), 32), alphabet=string.hexdigits),
        Canary("digitalocean-token", "dop_v1_" + _pick(rng, _HEX, 64), alphabet=_HEX),
        Canary("databricks-token", "dapi" + _pick(rng, _HEX, 32), alphabet=_HEX),
        Canary("shopify-token", "shpat_" + _pick(rng, _HEX, 32), alphabet=_HEX),
        Canary("sentry-token", "sntryu_" + _pick(rng, _HEX, 64), alphabet=_HEX),
        Canary("mailchimp-key", _pick(rng, _HEX, 32) + "-us" + str(rng.randrange(1, 22))),
        Canary("pulumi-token", "pul-" + _pick(rng, _HEX, 40), alphabet=_HEX),
        Canary("rubygems-token", "rubygems_" + _pick(rng, _HEX, 48), alphabet=_HEX),
        Canary("postman-key", f"PMAK-{_pick(rng, _HEX, 24)}-{_pick(rng, _HEX, 34)}", alphabet=_HEX),
        Canary(
            "discord-bot-token",
            rng.choice("MNO")
            + _pick(rng, _URLSAFE, 23)
            + "."
            + _pick(rng, _URLSAFE, 6)
            + "."
            + _pick(rng, _URLSAFE, 27),
            alphabet=_URLSAFE,
        ),
        Canary(
            "telegram-bot-token", _pick(rng, string.digits, 9) + ":AA" + _pick(rng, _URLSAFE, 33), alphabet=_URLSAFE
        ),
        Canary(
            "azure-storage-key",
            _pick(rng, _B64, 86) + "==",
            context="DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net",
        ),
        Canary("jwt", f"{jwt_head}.{jwt_body}.{_pick(rng, _URLSAFE, 32)}", alphabet=_URLSAFE),
        Canary("bearer-token", _pick(rng, _ALNUM, 24), context="Bearer {}", alphabet=_ALNUM),
        Canary("basic-auth", basic, context="Basic {}"),
        Canary(
            "url-password", _pick(rng, _ALNUM, 20), context="postgres://admin:{}@db.internal:5432/app", alphabet=_ALNUM
        ),
        Canary("assignment", _pick(rng, _ALNUM, 20), context="export DB_PASSWORD={}", alphabet=_ALNUM),
        Canary(
            "command-line",
            _pick(rng, _ALNUM, 20),
            context="run: curl -u admin:{} https://api.example.com",
            alphabet=_ALNUM,
        ),
        Canary(
            "json", _pick(rng, string.ascii_lowercase, 12), context='[["X-Api-Key", "{}"]]', whole=True
        ),  # only decoding sees it
        Canary("base64", aws_in_base64, context="blob {} end"),
        Canary("entropy", random_token(rng), context="ref {} end"),
    ]


def canary_request(rules: RedactionRules, rng: random.Random | None = None) -> tuple[dict[str, Any], list[Canary]]:
    """A model request carrying a canary for every rule and every place; returns it and the canaries."""
    rng = rng or secrets.SystemRandom()
    canaries: list[Canary] = []

    def plant(name: str, kinds: tuple[str, ...] | None = None, value: str | None = None) -> str:
        value = value or random_token(rng)
        canaries.append(Canary(name, value, kinds))
        return value

    found_in_text = detector_canaries(rng)
    canaries.extend(found_in_text)
    in_prose = [canary for canary in found_in_text if not canary.whole]
    text = "Deployment notes: " + "; ".join(f"{canary.name.split('-')[0]} {canary.text}" for canary in in_prose) + "."
    headers = {
        "Authorization": "Bearer " + plant("header:authorization"),
        "X-Api-Key": plant("header:x-api-key"),
        "Cookie": "session=" + plant("header:cookie"),
        "Content-Type": "application/json",
    }
    for header in rules.drop_headers:
        if header not in {name.lower() for name in headers}:
            headers[header] = plant(f"header:{header}")
    basic_password = plant("pair:authorization-basic")
    number = rng.randrange(10_000_000, 99_999_999)
    canaries.append(Canary("key:numeric-password", str(number)))
    key_token = "ghp_" + _pick(rng, _ALNUM, 36)
    canaries.append(Canary("key-as-secret", key_token))
    json_password = plant("json:nested-password")
    request: dict[str, Any] = {
        "model": "canary-model",
        "headers": headers,
        "messages": [
            {"role": "system", "content": "You are a deployment assistant."},
            {"role": "user", "content": text},
        ],
        "metadata": {
            "raw_token": plant("key:raw_token"),
            "x_api_key": plant("key:x_api_key"),
            "clientSecret": plant("key:clientSecret"),
            "password": plant("key:password"),
            "db": {"credentials": {"user": "admin", "pass": plant("key:credentials")}},
            "sessionId": plant("key:sessionId"),
            "pin_password": number,
            "by_token": {key_token: "granted"},
            "header_pairs": [
                ["authorization", "Basic " + base64.b64encode(f"admin:{basic_password}".encode()).decode()],
                ["X-API-KEY", plant("pair:x-api-key")],
            ],
            "short_bearer": [
                ["AUTHORIZATION", "Bearer " + plant("pair:short-bearer", value=_pick(rng, _ALNUM, 9) + "7")]
            ],
            "header_objects": [{"name": "Proxy-Authorization", "value": plant("pair:proxy-authorization")}],
            "callback": "https://app.example.com/cb?state=ok&client_secret="
            + plant("query:client_secret")
            + "&auth="
            + plant("query:auth"),
            "error_text": "ValueError: login failed: password=" + plant("text:exception-password") + " for admin",
            "config_json": json.dumps({"service": {"db": {"password": json_password}}}),
            "documents": [canary.text for canary in found_in_text if canary.whole],
        },
        # outside the model.request capture allowlist, so dropped there (other kinds keep it)
        "debug_dump": {"note": plant("capture:debug_dump", ("model.request",))},
    }
    for replacement in rules.replacements:
        if replacement.kind in (None, "model.request"):
            _plant_at(request, replacement.path, plant(f"replace:{replacement.path.text}", ("model.request",)))
    return request, canaries


def _plant_at(request: dict[str, Any], path: JsonPath, value: str) -> None:
    """Create the (wildcard-free) path under the payload's ``request`` and put ``value`` there."""
    steps = list(path.steps)
    if not steps or steps[0] != ("key", "request") or any(step[0] in ("any", "deep") for step in steps):
        return
    node: Any = request
    for (kind, arg), (next_kind, _) in itertools.pairwise(steps[1:]):
        if kind != "key" or not isinstance(node, dict):
            return
        node = node.setdefault(arg, [] if next_kind == "index" else {})
    last_kind, last = steps[-1]
    if last_kind == "key" and isinstance(node, dict):
        node[last] = value


def survivors_in(kind: str, payload: Any, canaries: list[Canary]) -> list[dict[str, str]]:
    """Every canary left in ``payload`` (strings, keys and numbers), with the event kind and path."""
    found = []
    for text, path in iter_string_paths(payload):
        for canary in canaries:
            if canary.secret in text and (canary.kinds is None or kind in canary.kinds):
                found.append({"kind": kind, "path": path, "canary": canary.name})
    return found


def check_rules(rules: RedactionRules, rng: random.Random | None = None) -> tuple[list[dict[str, str]], int, list[str]]:
    """Push a canary request through ``rules`` as a model request, a tool call and a tool result:
    (survivors, number of canaries, kinds)."""
    redactor = Redactor(rules)
    request, canaries = canary_request(rules, rng)
    outputs: dict[str, Any] = {
        "model.request": redactor.redact("model.request", {"request": request}),
        "tool.call": redactor.redact("tool.call", {"tool": "canary", "arguments": request}),
        "tool.result": redactor.redact(
            "tool.result", {"call_id": "c", "call_key": "k", "tool": "canary", "result": request}
        ),
    }
    survivors = [survivor for kind, payload in outputs.items() for survivor in survivors_in(kind, payload, canaries)]
    if not rules.enabled:
        survivors = survivors or [{"kind": "*", "path": "$", "canary": "redaction disabled"}]
    return survivors, len(canaries), list(outputs)
