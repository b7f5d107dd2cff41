"""pipelab.connect: the control protocol, against real servers.

A pipelabd without a data plane (``--plane none``: configurations are
checked, kept and journaled; no root needed) in a temporary registry, and
(as root) a live ``pipelab shell`` whose link is changed from Python while
pings cross it.
"""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

import pipelab


@pytest.fixture
def daemon(tmp_path, monkeypatch):
    """pipelabd with no data plane, its socket, journal and registry in a
    temporary directory (the registry through $PIPELAB_RUN_DIR, which
    pipelab.connect reads as the CLI does); stopped and checked after."""
    run_dir = tmp_path / "run"
    monkeypatch.setenv("PIPELAB_RUN_DIR", str(run_dir))
    name = f"pyd{os.getpid()}"
    sock = tmp_path / "d.sock"
    pipelabd = Path(pipelab.binary()).with_name("pipelabd")
    log = open(tmp_path / "pipelabd.log", "w")
    p = subprocess.Popen(
        [str(pipelabd), "--plane", "none", "--socket", str(sock), "--state-dir", str(tmp_path / "state"), "--name", name],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + 30
        while not any(e["name"] == name for e in pipelab.emulations()):
            assert p.poll() is None, (tmp_path / "pipelabd.log").read_text()
            assert time.monotonic() < deadline, "pipelabd did not register within 30 s"
            time.sleep(0.02)
        yield name, sock
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()


def test_unknown_target_is_an_error_at_once(tmp_path, monkeypatch):
    """connect('nobody') fails at once, naming the emulation."""
    monkeypatch.setenv("PIPELAB_RUN_DIR", str(tmp_path))
    with pytest.raises(pipelab.Error, match="nobody"):
        pipelab.connect("nobody")


def test_target_and_socket_together_are_refused():
    """A target names its socket: giving both is refused."""
    with pytest.raises(pipelab.Error, match="not both"):
        pipelab.connect("lab", socket="/tmp/x.sock")


def test_nothing_listening_names_the_socket(tmp_path):
    """A socket nobody serves: the request fails naming it."""
    sock = tmp_path / "nobody.sock"
    c = pipelab.connect(socket=sock)
    assert c.socket == str(sock) and c.target is None
    with pytest.raises(pipelab.Error, match=f"cannot connect to {sock}"):
        c.send("show")


def test_daemon_listed_and_reached_by_name(daemon):
    """The daemon registered under its name: listed (as `pipelab list
    --json`) with its mode and pid, and reached by that name."""
    name, sock = daemon
    c = pipelab.connect(name)
    (entry,) = [e for e in c.list() if e["name"] == name]
    assert entry["mode"] == "none" and entry["pid"] > 0
    assert Path(entry["socket"]) == Path(c.socket)
    assert c.target == name and repr(c) == f"Control(target={name!r})"


def test_commands_apply_and_show(daemon):
    """A pipe configured from Python is in the daemon's listing, in
    canonical form, and in its saved configuration."""
    name, sock = daemon
    c = pipelab.connect(name)
    c.send("pipe 1 config bw 2Mbit/s delay 10ms\nadd 100 pipe 1 ip from any to any")
    assert "pipe 1 config bw 2Mbit/s delay 10ms" in c.send("pipe show")
    saved = c.save()
    assert "pipe 1 config bw 2Mbit/s delay 10ms" in saved
    assert "add 100 pipe 1 ip from any to any" in saved


def test_refused_commands_change_nothing(daemon):
    """A batch with one bad command is refused whole, with the
    emulation's message naming the line and the word."""
    name, sock = daemon
    c = pipelab.connect(socket=sock)
    with pytest.raises(pipelab.Error) as e:
        c.send("pipe 2 config bw 1Mbit/s\npipe 3 config bw 5Mbps")
    assert "unknown unit 'Mbps'" in str(e.value)
    assert "2:" in str(e.value)
    assert "pipe 2" not in c.send("pipe show")
    assert c.send("pipe show") == ""


def test_restore_replaces_everything(daemon):
    """restore() replaces the configuration whole."""
    name, sock = daemon
    c = pipelab.connect(name)
    c.send("pipe 1 config bw 1Mbit/s")
    c.restore("pipe 7 config delay 25ms\n")
    shown = c.send("pipe show")
    assert "pipe 7 config delay 25ms" in shown and "pipe 1 " not in shown
    assert c.show() == "65535 allow ip from any to any\n"


def test_stats_is_a_dict_of_counters(daemon):
    """stats() is `pipelab stats --json` as a dict: the emulation's
    name and mode, the configuration's pipe count, the requests served."""
    name, sock = daemon
    c = pipelab.connect(name)
    c.send("pipe 1 config bw 1Mbit/s\npipe 2 config bw 2Mbit/s")
    c.send("add 100 pipe 1 ip from any to 10.0.0.0/8")
    s = c.stats()
    assert s["emulation"]["name"] == name and s["emulation"]["mode"] == "none"
    assert s["config"]["pipes"] == 2
    assert s["config"]["rules"] == 1
    # The two changes; the stats request counts once answered.
    assert s["daemon"]["requests"] == 2


def ping_rtt(host: str, count: int = 5) -> float:
    """The mean round-trip time of `count` pings, in ms."""
    p = subprocess.run(["ping", "-c", str(count), "-i", "0.2", "-W", "2", host], capture_output=True, text=True)
    m = re.search(r"= [\d.]+/([\d.]+)/", p.stdout)
    assert p.returncode == 0 and m, p.stdout + p.stderr
    return float(m.group(1))


def test_live_shell_reconfigured_from_python(live):
    """A live `pipelab shell` with 10 ms each way: pings from the host
    to the inside take about 20 ms; `pipe 1 config delay 50ms` sent from
    Python makes the way back 50 ms, so about 60 ms; the shell is listed
    while it runs and gone (with its socket) when it ends."""
    name = f"pysh{os.getpid()}"
    shell = subprocess.Popen(
        [pipelab.binary(), "shell", "--name", name, "--link", "delay 10ms", "--", "sleep", "60"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = shell.stderr.readline()
        m = re.search(r"inside ([\d.]+)", banner)
        assert m, banner
        inside = m.group(1)
        deadline = time.monotonic() + 30
        while not any(e["name"] == name for e in pipelab.emulations()):
            assert time.monotonic() < deadline, "the shell did not register"
            time.sleep(0.05)
        c = pipelab.connect(name)
        (entry,) = [e for e in c.list() if e["name"] == name]
        assert entry["mode"] == "shell"
        before = ping_rtt(inside)
        c.send("pipe 1 config delay 50ms")
        after = ping_rtt(inside)
        assert "pipe 1 config delay 50ms" in c.send("pipe show")
        pipes = {p["number"]: p for p in c.stats()["plane"]["pipes"]}
        assert pipes[1]["departures"] >= 10 and pipes[2]["departures"] >= 10
        # Bounds for a shared, loaded machine: the changes are 20 -> 60 ms.
        assert 19.5 <= before < 35, before
        assert 59.5 <= after < 80, after
    finally:
        shell.send_signal(signal.SIGTERM)
        try:
            shell.wait(timeout=30)
        except subprocess.TimeoutExpired:
            shell.kill()
            shell.wait()
    assert not any(e["name"] == name for e in pipelab.emulations())
    with pytest.raises(pipelab.Error, match=name):
        pipelab.connect(name)
