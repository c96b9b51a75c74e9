"""Network isolation: the socket guard in-process, and the namespace in a real child."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap

import pytest

from replay_tui.replay.isolation import (
    AllowList,
    LookupRefusedError,
    NetworkRefusedError,
    SocketGuard,
    enter_network_namespace,
    split_host_port,
)


@pytest.fixture
def guard():
    installed = SocketGuard().install()
    try:
        yield installed
    finally:
        installed.uninstall()


def test_guard_refuses_connect_to_a_listening_loopback_server(guard, listener):
    with pytest.raises(NetworkRefusedError):
        socket.create_connection(("127.0.0.1", listener.port), timeout=1)
    plain = socket.socket()
    try:
        with pytest.raises(ConnectionRefusedError):
            plain.connect(("127.0.0.1", listener.port))
    finally:
        plain.close()
    targets = [(refusal.operation, refusal.target) for refusal in guard.refusals]
    assert targets == [("connect", f"127.0.0.1:{listener.port}")] * 2
    assert guard.refusals[0].where and "test_isolation.py" in guard.refusals[0].where
    assert listener.accepted == 0


def test_guard_refuses_connect_ex_without_reaching_the_server(guard, listener):
    plain = socket.socket()
    try:
        with pytest.raises(NetworkRefusedError):
            plain.connect_ex(("127.0.0.1", listener.port))
    finally:
        plain.close()
    assert listener.accepted == 0 and len(guard.refusals) == 1


def test_guard_refuses_dns_lookups(guard):
    with pytest.raises(socket.gaierror) as caught:
        socket.getaddrinfo("localhost", 80)
    assert isinstance(caught.value, LookupRefusedError)
    with pytest.raises(socket.gaierror):
        socket.gethostbyname("localhost")
    assert [r.operation for r in guard.refusals] == ["getaddrinfo", "gethostbyname"]
    assert guard.refusals[0].target == "localhost:80"


def test_guard_refuses_asyncio_connections(guard, listener):
    async def attempt() -> None:
        await asyncio.open_connection("127.0.0.1", listener.port)

    with pytest.raises(ConnectionRefusedError):
        asyncio.run(attempt())
    assert any(r.target == f"127.0.0.1:{listener.port}" for r in guard.refusals)
    assert listener.accepted == 0


def test_guard_refuses_unconnected_datagrams(guard):
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        with pytest.raises(NetworkRefusedError):
            udp.sendto(b"query", ("127.0.0.1", 53))
    finally:
        udp.close()
    assert guard.refusals[-1].operation == "sendto"


def test_allow_list_lets_only_the_named_host_and_port_through(listener):
    guard = SocketGuard([f"127.0.0.1:{listener.port}", "localhost"]).install()
    try:
        socket.create_connection(("127.0.0.1", listener.port), timeout=2).close()
        with pytest.raises(NetworkRefusedError):
            socket.create_connection(("127.0.0.1", listener.port + 1 if listener.port < 65535 else 1), timeout=1)
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo("example.invalid", 443)
    finally:
        guard.uninstall()
    assert [r.target for r in guard.refusals][-1] == "example.invalid:443"
    assert "not in the allowed hosts" in str(guard.refuse("connect", "x", NetworkRefusedError))


def test_uninstall_restores_the_socket_module(listener):
    original = socket.getaddrinfo
    guard = SocketGuard().install()
    guard.uninstall()
    assert socket.getaddrinfo is original
    assert "connect" not in vars(socket.socket)
    socket.create_connection(("127.0.0.1", listener.port), timeout=2).close()


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("api.example.com", ("api.example.com", None)),
        ("h:443", ("h", 443)),
        ("[::1]:8080", ("::1", 8080)),
        ("::1", ("::1", None)),
    ],
)
def test_split_host_port(entry, expected):
    assert split_host_port(entry) == expected


def test_allow_list_learns_resolved_addresses():
    allow = AllowList(["api.example.com:443"])
    assert not allow.allows("10.1.2.3", 443)
    allow.learn("api.example.com", 443, [(2, 1, 6, "", ("10.1.2.3", 443))])
    assert allow.allows("10.1.2.3", 443) and not allow.allows("10.1.2.3", 80)


NAMESPACE_PROBE = textwrap.dedent(
    """
    import socket, sys
    from replay_tui.replay.isolation import enter_network_namespace
    method, reason = enter_network_namespace()
    print("method", method, reason)
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
        print("reached")
    except OSError as error:
        print("unreachable", error.errno)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="network namespaces are Linux only")
def test_namespace_alone_cuts_the_child_off_from_the_parents_loopback(listener):
    """Without the guard, the namespace still keeps a child from the parent's listener."""
    probe = subprocess.run(
        [sys.executable, "-c", NAMESPACE_PROBE, str(listener.port)], capture_output=True, text=True, timeout=30
    )
    out = probe.stdout
    if "method None" in out:
        pytest.skip(f"this machine does not allow network namespaces: {out.strip()}")
    assert "unreachable" in out, out + probe.stderr
    assert listener.accepted == 0


def test_enter_namespace_refuses_a_threaded_process():
    import threading

    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        method, reason = enter_network_namespace()
    finally:
        stop.set()
        worker.join()
    assert method is None and "threads" in reason


def test_hosts_in_a_live_config(tmp_path):
    from replay_tui.replay.hosts import HostsConfigError, hosts_in_config

    config = tmp_path / "live.toml"
    config.write_text(
        '[[plugins]]\nid = "model"\ntype = "x:y"\n'
        'options = { base_url = "https://api.example.com/v1", fallback = { host = "10.0.0.5", port = 8443 } }\n'
        '[[plugins]]\nid = "tools"\ntype = "x:z"\noptions = { hosts = ["crm.internal:443"], url = "http://[::1]:9000/q" }\n'
        '[[plugins]]\nid = "off"\ntype = "x:w"\nenabled = false\noptions = { url = "https://disabled.example.com" }\n'
    )
    assert hosts_in_config(config) == ["api.example.com:443", "10.0.0.5:8443", "crm.internal:443", "[::1]:9000"]
    broken = tmp_path / "broken.toml"
    broken.write_text("[[plugins]\n")
    with pytest.raises(HostsConfigError, match="broken.toml"):
        hosts_in_config(broken)
    with pytest.raises(HostsConfigError, match="cannot read"):
        hosts_in_config(tmp_path / "missing.toml")
