"""An agent module whose import kills the interpreter (as a segfaulting extension would)."""

import os
import sys

print("crash_at_import: about to abort", file=sys.stderr, flush=True)
os.abort()
