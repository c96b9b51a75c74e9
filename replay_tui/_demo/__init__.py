"""The bundled demo's agent, so ``r`` on the demo works after a plain ``pip install``.

The one home of its code is ``fixtures/agents`` (the module names its journal records): the wheel
copies ``crm_incident.py``, ``crm.py`` and ``crm_backend.py`` into this package (pyproject
force-include), and in a checkout this package's path reaches into ``fixtures/agents``. Nothing in
replay_tui imports it; the app names it (``DEMO_AGENT`` in tui/launch.py) to the replay child, which imports it there.
"""

from __future__ import annotations

from pathlib import Path

_CHECKOUT_AGENTS = Path(__file__).resolve().parents[2] / "fixtures" / "agents"
if not (Path(__file__).parent / "crm_incident.py").is_file() and _CHECKOUT_AGENTS.is_dir():
    __path__.append(str(_CHECKOUT_AGENTS))  # a checkout: the modules live in fixtures/agents
