"""Adversarial inputs for the secret detectors: for each detector, long strings built to make a pattern
that scans ahead from every candidate start do so again and again (a run a token could start anywhere
inside, an anchor repeated with nothing valid after it, a value that holds further names).

Used by the bench (tests/bench/bench_detectors.py, 1 MB each) and the property test, which draws its own
from ``FRAGMENTS``.
"""

from __future__ import annotations

import base64
import random

from replay_tui.harness.canaries import detector_canaries
from replay_tui.journal import detectors

#: Pieces a detector pattern starts at, runs through or stops at; the property test repeats them.
FRAGMENTS = (
    "eyJ", "eyJhbGciOiJIUzI1NiJ9", ".", "-", "_", ":", "://", "a://", "@", ":@", "/", "=", " ", "\t", "\n", '"', "'",
    "[", "{", "}", ";", "&", "a", "A", "0", "aB3", "Zx9", "+", "==", "AccountKey=", "SharedAccessKey=", "password",
    "password=", "DB_PASS=", "token: ", "***", "bearer ", "Bearer\t", "basic ", "Basic QUFB", "-----BEGIN ", "RSA ",
    "PRIVATE KEY", "-----", "sk-", "sk-ant-api03-", "ghp_", "github_pat_", "glpat-", "xoxb-", "AKIA", "SG.", "npm_",
    "pypi-AgE", "SK0", "AIza", "https://hooks.slack.com/services/T", "/B", "123456789:AA", "M" * 24, "curl -u ",
    "mysql -p", "sshpass -p ", "--password ", "dop_v1_", "dapi", "shpat_", "sntryu_", "FwoGZXIvYXdz", "ya29.",
    "QUtJQ", "%",
)  # fmt: skip


def _fill(unit: str, size: int) -> str:
    return (unit * (size // max(len(unit), 1) + 1))[:size]


def shapes(size: int = 1 << 20) -> dict[str, list[tuple[str, str]]]:
    """detector name -> [(what the string is, the string)], each ``size`` characters."""
    found: dict[str, list[tuple[str, str]]] = {name: [] for name in detectors.DETECTOR_NAMES}

    def add(name: str, what: str, unit: str) -> None:
        found[name].append((what, _fill(unit, size)))

    for canary in detector_canaries(random.Random(0)):
        text = canary.text
        two_thirds = text[: max(3, 2 * len(text) // 3)]
        add(canary.name, "two thirds of it, again and again, joined by '-'", two_thirds + "-")
        add(canary.name, "two thirds of it, again and again", two_thirds)
        add(canary.name, "all but its last character, again and again, joined by '_'", text[:-1] + "_")
        add(canary.name, "its first six characters, again and again", text[:6])
    add("url-password", "a://b: again and again", "a://b:")
    add("url-password", "a long scheme, then :// and an authority without @", "a" * (size // 2) + "://" + "b:")
    add("url-password", "://: again and again", "://:")
    add("url-password", "x://:@ again and again", "x://:@")
    add("jwt", "eyJ- again and again", "eyJ-")
    add("jwt", "eyJ and eight characters and a dot, again and again", "eyJaaaaaaaa.")
    add("jwt", "two segments and no third dot, again and again, joined by '_'", "eyJaaaaaaaa.eyJbbbbbbbb_")
    add("azure-storage-key", "AccountKey= again and again", "AccountKey=")
    add("assignment", "password= again and again", "password=")
    add("assignment", "password=*** again and again", "password=***")
    add("assignment", "a= again and again, after one password", "password a=")
    add("assignment", "name: then a run of blanks", "token" + " " * 4096 + ":")
    add("assignment", "a long dotted value, again and again", "password=a.b.")
    add("bearer-token", "bearer again and again", "bearer ")
    add("basic-auth", "basic and a base64 run that decodes to no credential", "basic " + "QUFB" * 100)
    add("private-key", "BEGIN headers with no END", "-----BEGIN RSA PRIVATE KEY-----")
    add("private-key", "a BEGIN followed by words and no PRIVATE KEY", "-----BEGIN " + "A " * 1000)
    add("entropy", "one random-looking token run of the whole length", "aB3xQ9")
    add("entropy", "random-looking 24-character tokens", "kQ2mN7pL1vR9tY4wB6sHj5Kd ")
    blob = base64.b64encode(("x" * 40_000 + "AKIA").encode()).decode()
    add("base64", "base64 blobs of text, each decoded and searched", blob + " ")
    add("base64", "a base64 run longer than any decoded", "QUtJQUFB")
    add("json", "[ again and again", "[")
    add("json", '{"a": again and again', '{"a":')
    add("json", "JSON in a string holding JSON in a string", '["[\\"[\\\\\\"x\\\\\\"]\\"]"]')
    add("key-name", "a value under a sensitive name (1 MB of it)", "s3cr3t ")
    return found
