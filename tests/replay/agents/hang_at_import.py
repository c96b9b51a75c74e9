"""An agent module that never finishes importing; also starts a grandchild that must die with it."""

import subprocess
import sys
import time

GRANDCHILD = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(f"grandchild pid {GRANDCHILD.pid}", file=sys.stderr, flush=True)
time.sleep(600)
