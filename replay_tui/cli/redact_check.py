"""`replay-tui redact-check --config FILE [--json]`: prove the redaction rules catch secrets.

A request carrying a fresh random canary for every detector and every place a secret
can sit (headers in any container, key names, numbers, keys, URL queries, exception
text, JSON in a string, the configured JSONPath replacements) goes through
the configured rules as a model request, a tool call and a tool result. Any
canary that survives fails the check, naming the event kind and the path.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from ..harness.canaries import check_rules
from ..harness.config import ConfigError, load_config
from ..harness.redaction import RedactionConfigError, RedactionRules, Redactor
from .common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_json

HELP = "check that the redaction rules of a harness config remove canary secrets"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, type=Path, help="harness config (.toml, or .yaml with PyYAML)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--seed", type=int, default=None, help="draw the canaries from this seed (default: fresh random ones)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
        rules = RedactionRules.from_config(config.redaction, source=f"{args.config}: [redaction]")
        Redactor(rules)  # compiles the patterns: a bad one is a usage error
    except (ConfigError, RedactionConfigError) as error:
        print(f"replay-tui redact-check: {error}", file=sys.stderr)
        return EXIT_USAGE
    survivors, canaries, kinds = check_rules(rules, random.Random(args.seed) if args.seed is not None else None)
    report = {
        "config": str(args.config),
        "canaries": canaries,
        "kinds": kinds,
        "ok": not survivors,
        "survivors": survivors,
    }
    if args.json:
        print_json(report)
    elif survivors:
        print(f"{args.config}: FAILED. {len(survivors)} canary secret(s) survived the redaction rules:")
        for survivor in survivors:
            print(f"  {survivor['kind']} {survivor['path']}: {survivor['canary']}")
    else:
        print(f"{args.config}: OK. {canaries} canary secrets through {', '.join(kinds)}: none survived.")
    return EXIT_OK if not survivors else EXIT_FAILED
