"""How replay views write durations (one place, so snapshot tests can mask it)."""

from __future__ import annotations


def elapsed_text(seconds: float) -> str:
    """``0.04 s``, ``12.3 s``, ``2 min 05 s``."""
    if seconds < 1:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest:02d} s"
