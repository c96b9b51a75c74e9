"""The replay sandbox under attack: one test per attack of issue 11, each against real listeners.

Every attack runs in a real replay child (bubblewrap, and the child's own namespaces as
the fallback), with a TCP listener on 127.0.0.1 and on ::1, a UDP socket, and pathname
unix sockets in /tmp, /run and a directory the sandbox shows read-only. After each run:
no listener saw anything, the journal's bytes are unchanged, nothing appeared outside
the scratch dir, the parent's secret was not visible, and the verdict is the parent's.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from replay_tui.replay.parent.outcome import ReplayOutcome
from replay_tui.replay.parent.runner import CRASHED, FAILED, MATCH, ReplayRunner
from replay_tui.replay.protocol import ReplaySpec
from replay_tui.replay.sandbox import (
    ALL_LAYERS,
    KEYRINGS_HIDDEN,
    PLACEHOLDER_CREDENTIAL,
    PLACEHOLDER_CREDENTIAL_VARIABLES,
    bwrap_path,
    child_environment,
    namespace_inode,
)

from . import host_holdings
from .conftest import REPO, LoopbackListener
from .helpers import record_probe

HOSTILE = "tests.replay.agents.hostile:agent"
SECRET_NAME = "REPLAY_TUI_TEST_SECRET"
MECHANISMS = [
    pytest.param("bwrap", marks=pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")),
    "namespaces",
]
# what an attack prints when it got through
ESCAPED = (
    "CONNECTED",
    "SENT",
    "SETNS OK",
    "WROTE THE JOURNAL",
    "escaped",
    "READ /etc/shadow",
    "SECRET SEEN",
    "SAW HOST",
    "KILLED",
    "SHM READ",
)


class Listener:
    """A socket that counts whoever reaches it (stream: accepted connections; datagram: packets)."""

    def __init__(self, family: int, kind: int, address: object) -> None:
        self.sock = socket.socket(family, kind)
        if family != socket.AF_UNIX:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(address)
        if kind == socket.SOCK_STREAM:
            self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.address = self.sock.getsockname()
        self.seen = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(kind,), daemon=True)
        self._thread.start()

    def _serve(self, kind: int) -> None:
        while not self._stop.is_set():
            try:
                if kind == socket.SOCK_STREAM:
                    connection, _ = self.sock.accept()
                    connection.close()
                else:
                    self.sock.recv(64)
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            self.seen += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


class Targets:
    def __init__(self) -> None:
        self.tcp = LoopbackListener()
        self.tcp6 = Listener(socket.AF_INET6, socket.SOCK_STREAM, ("::1", 0))
        self.udp = Listener(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0))
        # below /tmp (hidden); not below tmp_path: a socket path over 107 bytes cannot be bound, and a longer
        # TMPDIR or user name (pytest-of-USER) would push tmp_path's past it
        self.unix_dirs = [Path(tempfile.mkdtemp(prefix="replay-tui-test-", dir="/tmp"))]
        for parent in ("/run", "/var/lib"):  # /run: hidden; /var/lib: visible read-only, only seccomp stops it
            if os.access(parent, os.W_OK):
                self.unix_dirs.append(Path(tempfile.mkdtemp(prefix="replay-tui-test-", dir=parent)))
        self.unix = [
            Listener(socket.AF_UNIX, socket.SOCK_STREAM, str(folder / "agent.sock")) for folder in self.unix_dirs
        ]
        for folder in self.unix_dirs:
            folder.chmod(0o755)
            (folder / "agent.sock").chmod(0o777)  # reachable by anyone: only the sandbox may stop it

    def seen(self) -> dict[str, int]:
        counts = {"tcp": self.tcp.accepted, "tcp6": self.tcp6.seen, "udp": self.udp.seen}
        counts.update({f"unix:{listener.address}": listener.seen for listener in self.unix})
        return counts

    def close(self) -> None:
        for listener in (self.tcp, self.tcp6, self.udp, *self.unix):
            listener.close()
        for folder in self.unix_dirs:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_probe(
        tmp_path_factory.mktemp("hostile") / "probe.jsonl", entry_point=HOSTILE
    )  # no attack while recording


@pytest.fixture
def targets() -> Iterator[Targets]:
    found = Targets()
    try:
        yield found
    finally:
        found.close()


def attack(
    journal: Path,
    targets: Targets,
    tmp_path: Path,
    name: str,
    mechanism: str,
    unix: int = 0,
    extra: dict[str, str] | None = None,
) -> ReplayOutcome:
    """Replay ``journal`` with the hostile agent running attack ``name``; the parent holds a secret."""
    hostile_env = {
        **(extra or {}),
        "HOSTILE_ATTACK": name,
        "HOSTILE_TCP": str(targets.tcp.port),
        "HOSTILE_TCP6": str(targets.tcp6.address[1]),
        "HOSTILE_UDP": str(targets.udp.address[1]),
        "HOSTILE_UNIX": str(targets.unix[unix].address),
        "HOSTILE_JOURNAL": str(journal),
        "HOSTILE_OUTSIDE": str(tmp_path / "escaped.txt"),
        "HOSTILE_REPO": str(REPO),
        "HOSTILE_PARENT_PID": str(os.getpid()),
        "HOSTILE_SECRET_NAME": SECRET_NAME,
    }
    secret = f"sk-{uuid.uuid4().hex}"
    spec = ReplaySpec(
        journal=str(journal), agent=HOSTILE, sys_path=[str(REPO)], isolation=mechanism, pass_env=sorted(hostile_env)
    )
    runner = ReplayRunner(spec, timeout_s=60, cwd=str(REPO), env={**os.environ, **hostile_env, SECRET_NAME: secret})
    before = journal.read_bytes()
    outcome = runner.run()
    output = "\n".join(outcome.stderr_tail + outcome.stdout_tail)
    assert journal.read_bytes() == before, "the journal changed"
    assert targets.seen() == {key: 0 for key in targets.seen()}, f"a listener was reached: {targets.seen()}\n{output}"
    assert not (tmp_path / "escaped.txt").exists() and not (REPO / "hostile-marker.txt").exists()
    assert secret not in output and "SECRET SEEN" not in output
    assert not any(word in line for line in output.splitlines() if line.startswith("ATTACK") for word in ESCAPED), (
        output
    )
    return outcome


def said(outcome: ReplayOutcome, name: str) -> str:
    return next(line for line in outcome.stderr_tail if line.startswith(f"ATTACK {name}:"))


NETWORK_ATTACKS = [
    "setns-parent",
    "setns-init",
    "raw-socket",
    "raw-socket-ipv6",
    "udp",
    "ctypes-connect",
    "dns",
    "curl",
    "python-c",
    "os-system",
    "multiprocessing-fork",
    "multiprocessing-spawn",
    "reload-socket",
]


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("name", NETWORK_ATTACKS)
def test_no_way_back_to_the_network(journal, targets, tmp_path, name, mechanism):
    outcome = attack(journal, targets, tmp_path, name, mechanism)
    assert outcome.status == MATCH, outcome.to_text()  # the agent swallowed its failure; the run is as recorded
    said(outcome, name)  # the attack did run


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_setns_fails_because_capabilities_are_gone(journal, targets, tmp_path, mechanism):
    outcome = attack(journal, targets, tmp_path, "setns-parent", mechanism)
    result = said(outcome, "setns-parent")
    # no capability to setns; or (a PID namespace) no parent to be seen at all
    assert "setns refused" in result or "refused: PermissionError" in result or "No such file" in result, result


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_pathname_unix_sockets_anywhere_cannot_be_connected(journal, targets, tmp_path, mechanism):
    for index in range(len(targets.unix)):
        outcome = attack(journal, targets, tmp_path, "unix-socket", mechanism, unix=index)
        assert outcome.status == MATCH and "refused" in said(outcome, "unix-socket")


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("name", ["write-journal", "write-outside", "read-shadow", "read-secret"])
def test_files_and_secrets(journal, targets, tmp_path, name, mechanism):
    outcome = attack(journal, targets, tmp_path, name, mechanism)
    assert outcome.status == MATCH, outcome.to_text()
    result = said(outcome, name)
    assert "refused" in result or result.endswith("no secret visible")


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("name", ["forge-result", "exit-early", "garbage", "flood"])
def test_the_child_cannot_decide_its_verdict(journal, targets, tmp_path, name, mechanism):
    outcome = attack(journal, targets, tmp_path, name, mechanism)
    assert not outcome.ok and outcome.exit_code != 0 and outcome.status in (FAILED, CRASHED), outcome.to_text()
    assert "Replay matched" not in outcome.to_text()
    if name == "forge-result":
        assert "never reached the recorded run.ended" in outcome.error["message"]
    if name == "flood":
        assert "protocol line over 64 MiB" in outcome.error["message"]


def test_a_forged_result_after_a_real_divergence_is_still_a_divergence(tmp_path, targets):
    """The incident journal diverges at step 23 with the fixed agent; a forged "match" changes nothing."""
    incident = REPO / "fixtures" / "journals" / "crm-incident.jsonl"
    spec = ReplaySpec(journal=str(incident), agent="fixtures.agents.crm:agent", sys_path=[str(REPO)])
    outcome = ReplayRunner(spec, timeout_s=60, cwd=str(REPO)).run()
    assert outcome.status == "diverged" and outcome.divergence.step == "step-23"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_every_layer_holds_as_root_and_the_scratch_dir_goes(journal, tmp_path, mechanism, monkeypatch):
    if os.getuid() != 0:
        pytest.skip("the full set of layers is checked as root here; unprivileged runs report what they have")
    made: list[str] = []  # this run's scratch dir: not any replay-tui-scratch-* another run on the machine has

    def recording_mkdtemp(*args: object, **kwargs: object) -> str:
        made.append(real_mkdtemp(*args, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", recording_mkdtemp)
    spec = ReplaySpec(journal=str(journal), sys_path=[str(REPO)], isolation=mechanism, require_isolation=True)
    outcome = ReplayRunner(spec, timeout_s=60, cwd=str(REPO)).run()
    assert outcome.status == MATCH, outcome.to_text()
    layers = {layer["name"]: layer["in_force"] for layer in outcome.isolation.sandbox["layers"]}
    assert layers == {name: True for name in ALL_LAYERS}
    assert outcome.isolation.sandbox["mechanism"] == mechanism and outcome.isolation.network_namespace
    scratch = [path for path in made if Path(path).name.startswith("replay-tui-scratch-")]
    assert len(scratch) == 1 and not os.path.exists(scratch[0]), "the run's scratch dir is removed afterwards"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_nested_paths_on_the_childs_sys_path_keep_every_layer(journal, mechanism):
    """A sys.path entry below another (Ray adds site-packages/ray/thirdparty_files once imported) is bound once,
    through its parent: a second, nested bind of it was once refused by the read-only remount (EINVAL) in a
    full run after the Ray tests, leaving the filesystem writable."""
    from replay_tui.replay.sandbox import needed_paths

    if os.getuid() != 0:
        pytest.skip("the full set of layers is checked as root here")
    outer = Path(tempfile.mkdtemp(prefix="replay-tui-nested-"))
    try:
        (outer / "inner").mkdir()
        sys_path = [str(REPO), str(outer), str(outer / "inner")]
        kept = needed_paths(sys_path)
        assert str(outer.resolve()) in kept and str((outer / "inner").resolve()) not in kept
        spec = ReplaySpec(journal=str(journal), sys_path=sys_path, isolation=mechanism, require_isolation=True)
        outcome = ReplayRunner(spec, timeout_s=60, cwd=str(REPO)).run()
        assert outcome.status == MATCH, outcome.to_text()
    finally:
        shutil.rmtree(outer, ignore_errors=True)


def test_require_isolation_makes_a_missing_layer_exit_2(journal):
    spec = ReplaySpec(journal=str(journal), sys_path=[str(REPO)], isolation="guard-only", require_isolation=True)
    outcome = ReplayRunner(spec, timeout_s=60, cwd=str(REPO)).run()
    assert outcome.exit_code == 2 and outcome.error["kind"] == "isolation"
    assert "network namespace" in outcome.error["message"]
    relaxed = ReplayRunner(
        ReplaySpec(journal=str(journal), sys_path=[str(REPO)], isolation="guard-only"), timeout_s=60, cwd=str(REPO)
    ).run()
    assert relaxed.status == MATCH and "MISSING: network namespace" in relaxed.to_text()


def test_the_environment_is_an_allowlist():
    source = {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "OPENAI_API_KEY": "sk-x",
        "AWS_SECRET_ACCESS_KEY": "y",
        "MINE": "z",
    }
    env = child_environment(source, ["MINE"], "/tmp/scratch")
    assert env["HOME"] == "/tmp/scratch" and env["MINE"] == "z" and env["LC_ALL"] == "C"
    assert "AWS_SECRET_ACCESS_KEY" not in env
    # the SDKs' key variables hold a placeholder, never the parent's value; one passed on purpose is kept
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == PLACEHOLDER_CREDENTIAL
    assert set(PLACEHOLDER_CREDENTIAL_VARIABLES) <= set(env) and "sk-x" not in env.values()
    assert child_environment(source, ["OPENAI_API_KEY"], "/tmp/scratch")["OPENAI_API_KEY"] == "sk-x"


def test_no_verify_hash_chain_is_said_in_the_report(journal):
    outcome = ReplayRunner(
        ReplaySpec(journal=str(journal), sys_path=[str(REPO)], verify_hash_chain=False), timeout_s=60, cwd=str(REPO)
    ).run()
    assert outcome.status == MATCH and outcome.verification is None
    assert "hash chain: not verified (--no-verify-hash-chain)" in outcome.to_text()
    checked = ReplayRunner(ReplaySpec(journal=str(journal), sys_path=[str(REPO)]), timeout_s=60, cwd=str(REPO)).run()
    assert checked.verification["ok"] and "hash chain: verified" in checked.to_text()


def test_the_cli_lists_the_layers_and_takes_the_sandbox_options(journal, capsys, monkeypatch):
    from replay_tui.cli import main

    monkeypatch.chdir(REPO)
    assert main(["replay", str(journal), "--agent", HOSTILE, "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [layer["name"] for layer in data["isolation"]["sandbox"]["layers"]] == list(ALL_LAYERS)
    assert main(["replay", str(journal), "--agent", HOSTILE, "--isolation", "guard-only", "--require-isolation"]) == 2
    assert "--require-isolation: missing sandbox layer(s): network namespace" in capsys.readouterr().out
    monkeypatch.setenv("HOSTILE_ATTACK", "read-secret")
    monkeypatch.setenv(SECRET_NAME, "sk-from-the-cli")
    assert (
        main(["replay", str(journal), "--agent", HOSTILE, "--pass-env", "HOSTILE_ATTACK", "--no-verify-hash-chain"])
        == 0
    )
    out = capsys.readouterr().out
    assert "hash chain: not verified (--no-verify-hash-chain)" in out and "sk-from-the-cli" not in out


def test_enter_sandbox_works_in_a_freshly_forked_child(tmp_path):
    """What a fork server does: fork a warm worker, enter the sandbox, report the layers."""
    if os.getuid() != 0:
        pytest.skip("the full set of layers is checked as root here")
    from replay_tui.replay.sandbox import NAMESPACES, SandboxPolicy, enter_sandbox

    scratch = Path(tempfile.mkdtemp(prefix="replay-tui-scratch-"))
    read_end, write_end = os.pipe()
    policy = SandboxPolicy(
        scratch=str(scratch),
        mechanism=NAMESPACES,
        host_netns=namespace_inode("net"),
        host_pidns=namespace_inode("pid"),
        host_ipcns=namespace_inode("ipc"),
        parent_pid=os.getpid(),
        environment=child_environment(dict(os.environ, **{SECRET_NAME: "sk-forked"}), [], str(scratch)),
    )
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked child
        try:
            report = enter_sandbox(policy)
            os.write(write_end, json.dumps({**report.to_json(), "secret": os.environ.get(SECRET_NAME)}).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = json.loads(pipe.read())
    os.waitpid(pid, 0)
    shutil.rmtree(scratch, ignore_errors=True)
    assert {layer["name"]: layer["in_force"] for layer in data["layers"]} == {name: True for name in ALL_LAYERS}, data
    assert data["secret"] is None


# -- what a process of the host holds: its session keyring, its processes, its System V IPC (issue 27) ----


@pytest.fixture
def session_key() -> Iterator[tuple[str, str]]:
    with host_holdings.session_key() as key:
        yield key


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    with host_holdings.victim() as process:
        yield process


@pytest.fixture
def shared_memory() -> Iterator[tuple[int, bytes, int]]:
    with host_holdings.shared_memory() as segment:
        yield segment


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_parents_session_keyring_is_out_of_reach(journal, targets, tmp_path, mechanism, session_key):
    name, secret = session_key
    outcome = attack(journal, targets, tmp_path, "keyring", mechanism, extra={"HOSTILE_KEY_NAME": name})
    result = said(outcome, "keyring")
    assert secret not in result and "Operation not permitted" in result, result
    layers = {layer["name"]: layer for layer in outcome.isolation.sandbox["layers"]}
    assert layers[KEYRINGS_HIDDEN]["in_force"], layers[KEYRINGS_HIDDEN]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_host_processes_can_be_neither_seen_nor_signalled(journal, targets, tmp_path, mechanism, victim):
    outcome = attack(
        journal, targets, tmp_path, "host-process", mechanism, extra={"HOSTILE_VICTIM_PID": str(victim.pid)}
    )
    assert victim.poll() is None, "the agent killed a process of the host"
    assert "No such process" in said(outcome, "host-process")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_host_shared_memory_can_be_neither_read_nor_written(journal, targets, tmp_path, mechanism, shared_memory):
    key, secret, address = shared_memory
    outcome = attack(journal, targets, tmp_path, "sysv-shm", mechanism, extra={"HOSTILE_SHM_KEY": str(key)})
    assert host_holdings.read(address, len(secret)) == secret, "the agent wrote the host's segment"
    assert "shmget refused: No such file or directory" in said(outcome, "sysv-shm")
