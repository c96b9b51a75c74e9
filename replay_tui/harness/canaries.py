"""Canary secrets for ``replay-tui redact-check``: one fresh random secret per rule,
placed where that rule must catch it, in a request that goes through the rules."""

from __future__ import annotations

import base64
import secrets
import string
from dataclasses import dataclass
from typing import Any

from .jsonpath import JsonPath
from .redaction import RedactionRules

_ALNUM = string.ascii_letters + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits


def _pick(alphabet: str, count: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(count))


@dataclass(frozen=True)
class Canary:
    name: str  # which rule must catch it
    secret: str  # the part that must not survive
    kinds: tuple[str, ...] | None = None  # the event kinds its rule applies to (None: all)
    context: str = "{}"  # how the secret appears in text ("{}" is the secret)

    @property
    def text(self) -> str:
        return self.context.replace("{}", self.secret)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def detector_canaries() -> list[Canary]:
    jwt_head = _b64url(b'{"alg":"HS256","typ":"JWT"}')
    jwt_body = _b64url(('{"sub":"' + _pick(_ALNUM, 12) + '"}').encode())
    key_body = "\n".join(_pick(_ALNUM + "+/", 64) for _ in range(3))
    return [
        Canary("aws-access-key", "AKIA" + _pick(_UPPER_DIGITS, 16)),
        Canary("github-token", "ghp_" + _pick(_ALNUM, 36)),
        Canary("slack-token", "xoxb-" + _pick(string.digits, 12) + "-" + _pick(_ALNUM, 24)),
        Canary("stripe-key", "sk_live_" + _pick(_ALNUM, 24)),
        Canary("openai-anthropic-key", "sk-proj-" + _pick(_ALNUM, 40)),
        Canary("google-api-key", "AIza" + _pick(_ALNUM + "_-", 35)),
        Canary("jwt", f"{jwt_head}.{jwt_body}.{_pick(_ALNUM, 32)}"),
        Canary("private-key", f"-----BEGIN RSA PRIVATE KEY-----\n{key_body}\n-----END RSA PRIVATE KEY-----"),
        Canary("url-credentials", _pick(_ALNUM, 20), context="postgres://admin:{}@db.internal:5432/app"),
        Canary("url-query-secret", _pick(_ALNUM, 32), context="https://api.example.com/v1/models?region=eu&api_key={}"),
        Canary("sendgrid-key", "SG." + _pick(_ALNUM, 22) + "." + _pick(_ALNUM, 43)),
        Canary("npm-token", "npm_" + _pick(_ALNUM, 36)),
    ]


def canary_request(rules: RedactionRules) -> tuple[dict[str, Any], list[Canary]]:
    """A model request carrying a canary for every rule; returns it and the canaries."""
    canaries: list[Canary] = []

    def plant(name: str, kinds: tuple[str, ...] | None = None) -> str:
        value = _pick(_ALNUM, 32)
        canaries.append(Canary(name, value, kinds))
        return value

    found_in_text = detector_canaries()
    canaries.extend(found_in_text)
    text = "Deployment notes: " + "; ".join(f"{canary.name.split('-')[0]} {canary.text}" for canary in found_in_text) + "."
    headers = {
        "Authorization": "Bearer " + plant("header:authorization"),
        "X-Api-Key": plant("header:x-api-key"),
        "Cookie": "session=" + plant("header:cookie"),
        "Content-Type": "application/json",
    }
    for header in rules.drop_headers:
        if header not in {name.lower() for name in headers}:
            headers[header] = plant(f"header:{header}")
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
    for (kind, arg), (next_kind, _) in zip(steps[1:-1], steps[2:]):
        if kind != "key" or not isinstance(node, dict):
            return
        node = node.setdefault(arg, [] if next_kind == "index" else {})
    last_kind, last = steps[-1]
    if last_kind == "key" and isinstance(node, dict):
        node[last] = value
