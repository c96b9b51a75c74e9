"""An agent module that never finishes importing; also starts a grandchild that must die with it.

The grandchild's pid is printed (inside a PID namespace it means nothing to the parent),
and so is its working directory: the sandbox's scratch dir, unique to the run.
"""

import os
import subprocess
import sys
import time

GRANDCHILD = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(f"grandchild pid {GRANDCHILD.pid} cwd {os.getcwd()}", file=sys.stderr, flush=True)
time.sleep(600)
