"""`replay-tui redact-check --config FILE [--json]`: prove the redaction rules catch secrets.

A request carrying a fresh random canary for every rule (headers, key names,
secret formats in free text, the configured JSONPath replacements) goes through
the configured rules as a model request, a tool call and a tool result. Any
canary that survives fails the check, naming the event kind and the path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..harness.canaries import canary_request
from ..harness.config import ConfigError, load_config
from ..harness.redaction import RedactionConfigError, RedactionRules, Redactor, iter_string_paths
from .common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_json

HELP = "check that the redaction rules of a harness config remove canary secrets"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, type=Path, help="harness config (.toml, or .yaml with PyYAML)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
        rules = RedactionRules.from_config(config.redaction, source=f"{args.config}: [redaction]")
        redactor = Redactor(rules)
    except (ConfigError, RedactionConfigError) as error:
        print(f"replay-tui redact-check: {error}", file=sys.stderr)
        return EXIT_USAGE
    request, canaries = canary_request(rules)
    outputs: dict[str, Any] = {
        "model.request": redactor.redact("model.request", {"request": request}),
        "tool.call": redactor.redact("tool.call", {"tool": "canary", "arguments": request}),
        "tool.result": redactor.redact("tool.result", {"call_id": "c", "call_key": "k", "tool": "canary", "result": request}),
    }
    survivors = []
    for kind, payload in outputs.items():
        for text, path in iter_string_paths(payload):
            for canary in canaries:
                if canary.secret in text and (canary.kinds is None or kind in canary.kinds):
                    survivors.append({"kind": kind, "path": path, "canary": canary.name})
    if not rules.enabled:
        survivors = survivors or [{"kind": "*", "path": "$", "canary": "redaction disabled"}]
    report = {
        "config": str(args.config),
        "canaries": len(canaries),
        "kinds": list(outputs),
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
        print(f"{args.config}: OK. {len(canaries)} canary secrets through {', '.join(outputs)}: none survived.")
    return EXIT_OK if not survivors else EXIT_FAILED
