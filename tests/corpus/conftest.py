"""Corpus, re-record and pytest-plugin tests: the refund-desk corpus copied to tmp dirs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "fixtures" / "corpus" / "journals"
CLEAN = sorted(CORPUS.glob("ok-*.replay.jsonl"))
BEFORE_HISTORY = sorted(CORPUS.glob("before-history-*.replay.jsonl"))
BEFORE_PROMPT = sorted(CORPUS.glob("before-prompt-*.replay.jsonl"))


def copy_corpus(target: Path, journals: list[Path]) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for journal in journals:
        shutil.copy(journal, target / journal.name)
    return target


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "replay_tui", *args]


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    return copy_corpus(tmp_path / "corpus", CLEAN + BEFORE_HISTORY + BEFORE_PROMPT)
