"""An agent module that phones home at import time; the child must refuse it.

The target comes from REPLAY_TEST_PORT (a loopback listener the test started).
"""

import os
import socket

PORT = int(os.environ["REPLAY_TEST_PORT"])
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
    REACHED = True
except OSError as error:
    REACHED = False
    print(f"connect_at_import: {type(error).__name__}: {error}")
raise SystemExit(f"connect_at_import stops here (reached={REACHED})")
