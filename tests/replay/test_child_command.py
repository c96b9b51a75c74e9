"""The replay child starts without ``site`` (``-S``) on the path the parent's ``site`` made (child_command.py).

Checked where it matters: the path equals a normal start's (this interpreter, and Debian's system Python with its
dist-packages and sitecustomize), and a replay finds an agent that only a venv's ``.pth`` files name, with the
package itself installed as an editable path; an import hook installed by a ``.pth`` line (an editable install done
with a finder) makes the child start the ordinary way, and that replay works too. Both sandbox mechanisms.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from replay_tui.replay.parent.child_command import CHILD_MODULE, RUN_CHILD, child_command, site_bootstrap, spec_of
from replay_tui.replay.sandbox import bwrap_path

from .conftest import REPO

COUNTER = REPO / "tests" / "replay" / "agents" / "counter.py"
SYSTEM_PYTHON = Path("/usr/bin/python3")
#: Printed by a normal start and by the bootstrap (with the child's run replaced by it): what site decides.
PROBE = (
    "import builtins, json, sys; print(json.dumps([sys.path[1:], sys.prefix, sys.exec_prefix, "
    "[callable(getattr(builtins, name, None)) for name in ('exit', 'quit', 'help')], 'sitecustomize' in sys.modules]))"
)
PROBE_ENV = {"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1", "PYTHONPATH": str(REPO), "LANG": "C.UTF-8"}


def started(python: str, *argv: str) -> list:
    done = subprocess.run([python, *argv], env=PROBE_ENV, cwd="/", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def bootstrap_of(python: str) -> str:
    """The bootstrap ``python``'s own site would make (the probe in place of the child's run)."""
    code = "from replay_tui.replay.parent.child_command import site_bootstrap; print(repr(site_bootstrap()))"
    done = subprocess.run([python, "-c", code], env=PROBE_ENV, cwd="/", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    bootstrap = eval(done.stdout.strip())  # noqa: S307 - a repr we printed ourselves
    assert bootstrap is not None, f"{python}: no -S start (an import hook from a .pth line?)"
    return bootstrap.replace(RUN_CHILD, PROBE)


@pytest.mark.parametrize(
    "python",
    [
        sys.executable,
        pytest.param(
            str(SYSTEM_PYTHON),
            marks=pytest.mark.skipif(
                not SYSTEM_PYTHON.exists() or SYSTEM_PYTHON.resolve() == Path(sys.executable).resolve(),
                reason="no system Python apart from this one",
            ),
        ),
    ],
)
def test_the_bootstrap_gives_the_path_prefixes_and_builtins_of_a_normal_start(python):
    assert started(python, "-S", "-c", bootstrap_of(python)) == started(python, "-c", PROBE)


def test_the_child_command_carries_its_spec_both_ways():
    fast = child_command(sys.executable, '{"x": 1}')
    assert fast[1:3] == ["-S", "-c"] and fast[3] == site_bootstrap() and spec_of(fast) == '{"x": 1}'
    assert spec_of([sys.executable, "-m", CHILD_MODULE, "{}"]) == "{}"
    assert child_command("/no/such/python", "{}") == ["/no/such/python", "-m", CHILD_MODULE, "{}"]
    assert spec_of([sys.executable, "-S", "-c", "import os", "{}"]) is None


def test_a_parent_started_without_site_starts_its_child_the_ordinary_way():
    code = "import sys; from replay_tui.replay.parent.child_command import child_command; print(child_command(sys.executable, '{}')[1])"
    done = subprocess.run([sys.executable, "-S", "-c", code], env=PROBE_ENV, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "-m", done.stderr


FINDER = textwrap.dedent(
    """
    import importlib.abc, importlib.util, sys

    MAPPING = {"finder_agent": %r}

    class _EditableFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in MAPPING:
                return importlib.util.spec_from_file_location(name, MAPPING[name])
            return None

    def install():
        sys.meta_path.append(_EditableFinder())
    """
)

REPLAY = textwrap.dedent(
    """
    import json, sys
    from replay_tui.harness import record_run
    from replay_tui.replay.parent.child_command import child_command
    from replay_tui.replay.protocol import ReplaySpec
    from replay_tui.replay.parent.runner import ReplayRunner

    agent, config, journal, mechanisms, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(","), sys.argv[5:]
    record_run(config, agent + ":agent", ["3"], journal=journal)
    found = {"argv": child_command(sys.executable, "{}")[:3]}
    for mechanism in mechanisms:
        spec = ReplaySpec(journal=journal, sys_path=extra, isolation=mechanism, require_isolation=True)
        outcome = ReplayRunner(spec, timeout_s=120, cwd="/").run()
        found[mechanism] = [outcome.status, outcome.to_text()[-1500:]]
    print(json.dumps(found))
    """
)


def dependency_dirs() -> list[str]:
    """This interpreter's site-packages (a venv's own, or the system's), without the checkout."""
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return [d for d in dirs if Path(d).is_dir() and Path(d).resolve() != REPO]


def test_a_replay_finds_the_agent_a_venvs_pth_files_name_with_and_without_an_import_hook(tmp_path):
    """A venv whose dependencies, replay_tui (an editable install: a path in a .pth file) and the agent come from
    .pth files. Then an editable finder (a .pth import line) for a second agent: the child starts with site."""
    if os.getuid() != 0:
        pytest.skip("the sandbox's full set of layers is checked as root here")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    purelib = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    agents = tmp_path / "agents"
    agents.mkdir()
    for name in ("path_agent", "finder_agent"):
        (agents / f"{name}.py").write_text(COUNTER.read_text().replace("tests.replay.agents.counter", name))
        (agents / f"{name}.toml").write_text(
            (COUNTER.with_suffix(".toml")).read_text().replace("tests.replay.agents.counter", name)
        )
    (purelib / "deps.pth").write_text("\n".join(dependency_dirs()) + "\n")
    (purelib / "_editable_replay_tui.pth").write_text(f"{REPO}\n")
    (purelib / "agents.pth").write_text(f"{agents}\n")
    for folder in [tmp_path, *tmp_path.rglob("*")]:  # the child runs as nobody
        if folder.is_dir():
            folder.chmod(0o755)
    script = tmp_path / "replay.py"
    script.write_text(REPLAY)
    mechanisms = ",".join(["namespaces"] + (["bwrap"] if bwrap_path() else []))
    environment = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def replay(agent: str, *sys_path: str) -> dict:
        journal = tmp_path / f"{agent}.jsonl"
        done = subprocess.run(
            [python, str(script), agent, str(agents / f"{agent}.toml"), str(journal), mechanisms, *sys_path],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    found = replay("path_agent")
    assert found["argv"][1:] == ["-S", "-c"]
    for mechanism in mechanisms.split(","):
        assert found[mechanism][0] == "match", found[mechanism][1]

    # As setuptools does it: the finder module in site-packages, the agent's source elsewhere, under another name
    # (the sandbox binds back directories on the replay's sys_path: so the finder, not the path, finds the agent).
    source = tmp_path / "finder_src"
    source.mkdir(mode=0o755)
    source.chmod(0o755)
    (agents / "finder_agent.py").rename(source / "finder_agent_impl.py")
    (purelib / "__editable___finder_agent_finder.py").write_text(FINDER % str(source / "finder_agent_impl.py"))
    (purelib / "__editable__.finder_agent.pth").write_text(
        "import __editable___finder_agent_finder; __editable___finder_agent_finder.install()\n"
    )
    found = replay("finder_agent", str(source))
    assert found["argv"][1:] == ["-m", CHILD_MODULE]
    for mechanism in mechanisms.split(","):
        assert found[mechanism][0] == "match", found[mechanism][1]
