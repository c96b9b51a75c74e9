"""An agent module that fails at import time, as a typo in agent code would."""

import this_module_does_not_exist  # noqa: F401

agent = None
