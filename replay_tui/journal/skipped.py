"""The lines a journal's index left out, as read-side reports (stats, the secret scan) count them.

Empty or too-short lines get no index entry, so a loop over the events never sees them: a report
adds them to its unreadable count here, with the first few as located messages.
"""

from __future__ import annotations

from .reader import Journal

#: How many unreadable lines a report names; the rest are only counted.
UNREADABLE_EXAMPLES = 5


def add_skipped_lines(journal: Journal, examples: list[str]) -> int:
    """How many lines the index skipped (add it to the report's unreadable count); their messages
    extend ``examples`` up to ``UNREADABLE_EXAMPLES``, after those the event loop found."""
    skipped, errors = journal.skipped_lines()
    examples.extend(str(error) for error in errors[: max(0, UNREADABLE_EXAMPLES - len(examples))])
    return skipped
