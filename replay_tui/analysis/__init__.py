"""Read-side views of a journal for the app and the CLI: state at any seq, causal
links, value diffs, search and marks. Never imports Textual or agent code."""
