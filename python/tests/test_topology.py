"""pipelab.Topology: live topologies from Python, and what they leave.

The live tests (root) bring real topologies up (a network namespace per
VN, TAPs held by the emulator), ping across them, change a link over the
control protocol and tear them down, then look for anything left: the
VNs' namespaces, the registry's entry and socket, the emulator's state
file and process.
"""

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

import pipelab
from pipelab.topology import Link

RUN = Path(os.environ.get("PIPELAB_RUN_DIR") or "/run/pipelab")


def leftovers(name: str, pid=None) -> list:
    """What a topology called `name` left on the host: its namespaces
    (`pl-NAME-*`), its registry entry and socket, its state file, a
    live emulator process."""
    left = []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left += [f"netns {l.split()[0]}" for l in netns.splitlines() if l.startswith(f"pl-{name}-")]
    left += [f"registry {e['name']}" for e in pipelab.emulations() if e["name"] == name]
    for f in (RUN / "emu" / f"{name}.json", RUN / "emu" / f"{name}.sock", Path("/run/pipelab/topo") / f"{name}.json"):
        if f.exists():
            left.append(f"file {f}")
    if pid is not None and alive(pid):
        left.append(f"process {pid}")
    return left


def alive(pid) -> bool:
    """Whether process `pid` runs (a zombie has exited: it waits only
    for init, its parent once `topo up` returned, to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat.rsplit(")", 1)[1].strip().startswith("Z")


def rtt(t: pipelab.Topology, src: str, dst_addr: str) -> float:
    """Mean RTT of 5 pings from VN `src` to `dst_addr`, in ms."""
    r = t.exec(src, ["ping", "-c", "5", "-i", "0.2", "-W", "2", dst_addr])
    m = re.search(r"= [\d.]+/([\d.]+)/", r.stdout)
    assert r.returncode == 0 and m, r.stdout + r.stderr
    return float(m.group(1))


def test_binary_from_environment(monkeypatch, tmp_path):
    """$PIPELAB_BIN wins; one that is not an executable is an error
    naming it, never a fall-back to another binary."""
    monkeypatch.setenv("PIPELAB_BIN", str(tmp_path / "nope"))
    with pytest.raises(pipelab.Error, match=f"PIPELAB_BIN={tmp_path}/nope is not an executable"):
        pipelab.binary()


def test_no_binary_anywhere(monkeypatch):
    """Without $PIPELAB_BIN and nothing on PATH: an error that says
    how to get one."""
    monkeypatch.delenv("PIPELAB_BIN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pipelab.Error, match="cannot find the pipelab binary"):
        pipelab.binary()


def test_generate_writes_a_topology_and_removes_it():
    """generate() runs `topo gen` into a temporary file: a star of three
    VNs around a hub, links of the class given; the file goes with the
    object."""
    t = pipelab.Topology.generate("star", name="pygen", clients=3, access="bw 10Mbit/s delay 5ms")
    text = t.file.read_text()
    assert text.count('role = "client"') == 3 and 'name = "hub"' in text
    assert text.count('delay = "5000000ns"') == 3
    assert repr(t) == f"Topology({str(t.file)!r}, name='pygen') [down]"
    path = t.file
    del t
    assert not path.exists()


def test_generate_refusal_is_pipelabs_message():
    """A spelling `topo gen` refuses is refused with its message."""
    with pytest.raises(pipelab.Error, match="unknown unit 'Mbps'"):
        pipelab.Topology.generate("star", clients=3, access="bw 10Mbps")


def test_link_values_are_one_word_each():
    """A value with a space or a line break would be a second word or a
    second command: refused before anything is sent."""
    t = pipelab.Topology("unused.toml", name="pyword")
    with pytest.raises(pipelab.Error, match="give one word"):
        t.link("vn0", "hub").set(delay="5ms\nnode hub down")
    with pytest.raises(pipelab.Error, match="give at least one of bw, delay, loss, queue"):
        Link(t, "vn0", "hub").set()


def test_up_of_a_missing_file_names_it():
    """`topo up` of a file that is not there: pipelab's error, and the
    topology is not up."""
    t = pipelab.Topology("/nonexistent/t.toml", name="pymissing")
    with pytest.raises(pipelab.Error, match="/nonexistent/t.toml"):
        t.up()
    assert not t.is_up


def test_three_vns_up_pinged_reconfigured_down(live):
    """A star of three VNs, 5 ms per link: VN to VN crosses two links,
    so pings take about 20 ms; `link vn0 hub set delay 20ms` from Python
    makes it 25 + 5 each way, about 60 ms; every VN reaches every other;
    after down() nothing of it is left."""
    name = f"py3vn{os.getpid() % 100000}"
    t = pipelab.Topology.generate("star", name=name, clients=3, access="bw 100Mbit/s delay 5ms")
    assert leftovers(name) == []
    with t:
        assert t.is_up
        vns = t.vns()
        assert [v["name"] for v in vns] == ["vn0", "vn1", "vn2"]
        addrs = [v["addr"] for v in vns]
        assert addrs == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
        pid = t.status()["state"]["pid"]
        (entry,) = [e for e in pipelab.emulations() if e["name"] == name]
        assert entry["mode"] == "topo" and entry["pid"] == pid
        for i, src in enumerate(["vn0", "vn1", "vn2"]):
            for dst in addrs[:i] + addrs[i + 1 :]:
                r = t.exec(src, f"ping -c 1 -W 2 {dst}")
                assert r.returncode == 0, f"{src} -> {dst}: {r.stdout}{r.stderr}"
        before = rtt(t, "vn0", "10.0.0.2")
        reply = t.link("vn0", "hub").set(delay="20ms")
        assert "2 pipes changed" in reply
        after = rtt(t, "vn0", "10.0.0.2")
        # Bounds for a shared, loaded machine: the change is 20 -> 50 ms.
        assert 19.5 <= before < 35, before
        assert 49.5 <= after < 70, after
    assert not t.is_up
    assert leftovers(name, pid) == []


def test_context_manager_cleans_up_after_an_exception(live):
    """An exception inside the block: the topology is torn down all the
    same, and the exception is the one the caller sees."""
    name = f"pyexc{os.getpid() % 100000}"
    t = pipelab.Topology.generate("dumbbell", name=name, left=1, right=2)
    with pytest.raises(ZeroDivisionError):
        with t:
            pid = t.status()["state"]["pid"]
            assert len(t.vns()) == 3
            1 / 0
    assert leftovers(name, pid) == []


def test_exec_returns_a_completed_process(live, tmp_path):
    """exec() gives the command's status and output; a string runs in
    sh -c with the VN's name and address in the environment; check=True
    turns a failure into pipelab.Error; processes left in a VN are
    killed by down()."""
    name = f"pyexe{os.getpid() % 100000}"
    f = tmp_path / "two.toml"
    f.write_text(
        '[[node]]\nid = 0\nrole = "client"\nname = "a"\n\n'
        '[[node]]\nid = 1\nrole = "client"\nname = "b"\n\n'
        '[[link]]\na = 0\nb = 1\nbw = "10Mbit/s"\ndelay = "1ms"\n'
    )
    with pipelab.Topology.from_file(f, name=name) as t:
        r = t.exec("b", "echo $PIPELAB_VN $PIPELAB_ADDR; exit 3")
        assert (r.returncode, r.stdout) == (3, "b 10.0.0.2\n")
        assert t.exec("10.0.0.1", ["sh", "-c", "echo $PIPELAB_VN"]).stdout == "a\n"
        with pytest.raises(pipelab.Error, match="exited with 3"):
            t.exec("a", "exit 3", check=True)
        with pytest.raises(pipelab.Error, match="no VN 'c'"):
            t.exec("c", "true", check=True)
        # A server left running in a VN: down() kills it.
        nap = f"sleep {300 + os.getpid() % 1000}"
        t.exec("a", f"setsid {nap} >/dev/null 2>&1 < /dev/null &")
        time.sleep(0.2)
        sleeper = subprocess.run(["pgrep", "-x", "-f", nap], capture_output=True, text=True).stdout.split()
        assert sleeper, "the background sleep is not running"
        pid = t.status()["state"]["pid"]
    assert leftovers(name, pid) == []
    assert not any(alive(p) for p in sleeper)
