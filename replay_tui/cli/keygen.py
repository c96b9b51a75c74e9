"""`replay-tui keygen PATH`: write an Ed25519 key pair for signed journal seals."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..journal.seal import generate_key_pair
from .common import EXIT_OK, EXIT_USAGE


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        help="private key file to write (readable by you only); the public key goes to PATH.pub",
    )


def run(args: argparse.Namespace) -> int:
    private_path = Path(args.path)
    public_path = private_path.with_name(private_path.name + ".pub")
    for existing in (private_path, public_path):
        if existing.exists():
            print(f"replay-tui keygen: {existing} exists; a key is never overwritten", file=sys.stderr)
            return EXIT_USAGE
    try:
        key_id = generate_key_pair(private_path, public_path)
    except OSError as error:
        print(f"replay-tui keygen: cannot write {error.filename}: {error.strerror}", file=sys.stderr)
        return EXIT_USAGE
    print(
        f"key {key_id}\n  private: {private_path} (set signing_key in the harness config's [harness] table)\n"
        f"  public:  {public_path} (give it to 'replay-tui verify --key')"
    )
    return EXIT_OK
