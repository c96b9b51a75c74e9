"""The replay modes, on their own: the app names them for its first frame, which loads no wire protocol.

``strict`` and ``new-code`` serve every observation from the journal in order; ``model-live`` and
``tools-live`` make one group of dependencies live; ``shuffle`` serves everything from the journal with
the completion order of concurrent calls permuted.
"""

from __future__ import annotations

STRICT, NEW_CODE, MODEL_LIVE, TOOLS_LIVE, SHUFFLE = "strict", "new-code", "model-live", "tools-live", "shuffle"
MODES = (STRICT, NEW_CODE, MODEL_LIVE, TOOLS_LIVE, SHUFFLE)
#: Modes with something live (the broker, the allowed hosts).
LIVE_MODES = (MODEL_LIVE, TOOLS_LIVE)
#: Modes whose verdict the parent makes from the journal the child wrote, not from the events it streamed.
JOURNAL_JUDGED_MODES = (MODEL_LIVE, TOOLS_LIVE, SHUFFLE)
