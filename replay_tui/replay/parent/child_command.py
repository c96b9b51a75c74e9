"""The replay child's command line: an interpreter started without ``site``, on the path the parent's ``site`` made.

A normal start runs ``site``: it reads every ``.pth`` file of every site directory and executes
their ``import`` lines (a machine's certificate hooks, setuptools' distutils shim...), which costs
the child tens of milliseconds of CPU before it has done anything, on every replay. The parent
has already run ``site`` with the same interpreter, so it knows the result: the site directories
and the directories the ``.pth`` files add. The child starts with ``-S`` and a short bootstrap that
appends exactly those (after the standard library, where ``site`` puts them), sets the prefixes a
venv gives, installs the builtins ``site`` adds (``exit``, ``quit``, ``help``...) and imports
``sitecustomize`` when the parent had one. So the agent's packages are found as before: a venv's,
the system's (Debian's dist-packages), an editable install that is a path in a ``.pth`` file.

What cannot be carried over is an import hook a ``.pth`` line installs (an editable install done
with a meta path finder, say): when the parent holds one, the child starts the ordinary way.
Another interpreter than the parent's starts the ordinary way too (its ``site`` is not ours to know), and so does
the child of a parent that itself started without ``site``.
"""

from __future__ import annotations

import functools
import os
import site
import sys

CHILD_MODULE = "replay_tui.replay.child.main"
#: The bootstrap's last statement: how a fork server recognises a child command (``spec_of``).
RUN_CHILD = f"from {CHILD_MODULE} import run;run()"
#: The finders and path hooks a plain interpreter has, by the module that defines them.
STANDARD_HOOK_MODULES = frozenset(
    {
        "_frozen_importlib",
        "_frozen_importlib_external",
        "importlib._bootstrap",
        "importlib._bootstrap_external",
        "zipimport",
    }
)
#: setuptools' shim (from distutils-precedence.pth): the bootstrap installs it again, as cheaply as site does.
DISTUTILS_SHIM = "_distutils_hack"


def child_command(python: str, spec_json: str) -> list[str]:
    """``python`` running the replay child on ``spec_json``: without site when the parent's site can be carried over."""
    bootstrap = site_bootstrap() if _same_interpreter(python) else None
    if bootstrap is None:
        return [python, "-m", CHILD_MODULE, spec_json]
    return [python, "-S", "-c", bootstrap, spec_json]


def spec_of(argv: list[str] | tuple[str, ...]) -> str | None:
    """The spec argument of a command ``child_command`` made, or None for any other command."""
    if len(argv) == 4 and list(argv[1:3]) == ["-m", CHILD_MODULE]:
        return argv[3]
    if len(argv) == 5 and list(argv[1:3]) == ["-S", "-c"] and argv[3].endswith(RUN_CHILD):
        return argv[4]
    return None


def _same_interpreter(python: str) -> bool:
    try:
        return os.path.samefile(python, sys.executable)
    except OSError:
        return False


@functools.cache
def site_bootstrap() -> str | None:
    """The ``-c`` code that rebuilds what the parent's site did, or None when an import hook forbids it."""
    directories = None if sys.flags.no_site else site_directories()  # a parent without site knows no result
    if directories is None or any(os.pathsep in path or "\n" in path for path in directories):
        return None
    lines = [
        "import sys",
        f"sys.prefix,sys.exec_prefix={sys.prefix!r},{sys.exec_prefix!r}",
        f"sys.path+=[p for p in {directories!r} if p not in sys.path]",
        "import site;site.setquit();site.setcopyright();site.sethelper()",
    ]
    if DISTUTILS_SHIM in sys.modules:
        lines.append(_optional_import(f"__import__({DISTUTILS_SHIM!r}).add_shim()"))
    if "sitecustomize" in sys.modules:
        lines.append(_optional_import("import sitecustomize"))
    lines.append(RUN_CHILD)
    return "\n".join(lines)


def _optional_import(statement: str) -> str:
    return f"try:\n {statement}\nexcept Exception:\n pass"


def site_directories() -> list[str] | None:
    """The site directories and the ``.pth`` path lines in them, in site's order (no user site: the child
    never has one); None when a ``.pth`` line installed an import hook that the parent still holds."""
    found: list[str] = []
    import_lines: list[str] = []
    for directory in site.getsitepackages():
        if not os.path.isdir(directory):
            continue
        found.append(directory)
        try:
            names = sorted(name for name in os.listdir(directory) if name.endswith(".pth") and not name.startswith("."))
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(directory, name), encoding="locale") as handle:
                    lines = handle.read().splitlines()
            except (OSError, UnicodeDecodeError):
                return None  # site would have read it somehow: do what site does
            for line in lines:
                if line.startswith("#") or not line.strip():
                    continue
                if line.startswith(("import ", "import\t")):
                    import_lines.append(line)
                    continue
                path = os.path.abspath(os.path.join(directory, line.rstrip()))
                if path not in found and os.path.exists(path):
                    found.append(path)
    if _hooks_from(import_lines):
        return None
    return found


def _hooks_from(import_lines: list[str]) -> list[str]:
    """The parent's import hooks that one of these ``.pth`` lines names (an editable install's finder...).

    A hook the parent program installed itself (pytest's assertion rewriter) is in no ``.pth`` line; a
    fresh interpreter would not have it either."""
    modules = {
        (getattr(hook, "__module__", None) or type(hook).__module__).partition(".")[0]
        for hook in [*sys.meta_path, *sys.path_hooks]
    }
    modules -= {name.partition(".")[0] for name in STANDARD_HOOK_MODULES} | {DISTUTILS_SHIM}
    return sorted(module for module in modules if any(module in line for line in import_lines))
