"""Topology.from_networkx and the Mininet-style Network: what they write,
what they refuse, and (as root) the delays and rates they bring up.

The live tests measure on a shared machine, so they read ping's minimum
RTT (queueing and scheduling only add to it) and give iperf3 three tries
to reach the link's rate; after each topology goes down nothing of it is
left (test_topology's check).
"""

import os
import re
import sys

import networkx as nx
import pytest

import pipelab
from pipelab import Network
from test_topology import leftovers



def min_rtt(output: str) -> float:
    """The minimum RTT of ping's summary, in ms."""
    m = re.search(r"= ([\d.]+)/[\d.]+/[\d.]+/", output)
    assert m, output
    return float(m.group(1))


def two_hosts_and_a_switch(**link) -> Network:
    net = Network(name="unused")
    h1, h2 = net.add_host("h1"), net.add_host("h2")
    s1 = net.add_switch("s1")
    net.add_link(h1, s1, **link)
    net.add_link(h2, s1, **link)
    return net


def edges(text: str) -> list:
    """The GraphML's edges: each a dict of its attributes by name."""
    import xml.etree.ElementTree as ET

    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    root = ET.fromstring(text)
    names = {k.get("id"): k.get("attr.name") for k in root.findall("g:key", ns)}
    return [
        {
            "source": e.get("source"),
            "target": e.get("target"),
            **{names[d.get("key")]: d.text for d in e.findall("g:data", ns)},
        }
        for e in root.findall("g:graph/g:edge", ns)
    ]


# Topology.from_networkx, without root.


def test_from_networkx_writes_graphml_the_reader_takes(cli):
    """A graph of two hosts and a switch: a temporary .graphml file
    (removed with the object) that `topo distill` reads as two VNs named
    by the node ids, four pipes; mixed int and float values are one
    numeric type."""
    G = nx.Graph()
    G.add_node("h1", type="host")
    G.add_node("h2", type="host")
    G.add_node("s1", type="switch")
    G.add_edge("h1", "s1", delay="3ms", bw=10)
    G.add_edge("h2", "s1", delay=2, bw=2.5)
    G.graph["note"] = None  # the graph's own data is not read
    t = pipelab.Topology.from_networkx(G, name="pynx")
    assert t.file.suffix == ".graphml"
    text = t.file.read_text()
    assert 'attr.name="bw" attr.type="double"' in text
    p = cli("topo", "distill", str(t.file))
    assert p.returncode == 0, p.stderr
    assert "pipes: 4" in p.stdout, p.stdout
    path = t.file
    del t
    assert not path.exists()


def test_from_networkx_refuses_what_graphml_cannot_hold():
    """None, a list, NaN and node ids that are neither strings nor whole
    numbers: refused naming the node or edge and the key."""
    G = nx.Graph()
    G.add_edge("h1", "s1", delay=None)
    with pytest.raises(pipelab.Error, match=r"edge 'h1'-'s1': delay=None \(NoneType\) cannot be written"):
        pipelab.Topology.from_networkx(G)
    G = nx.Graph()
    G.add_node("h1", role=["client"])
    with pytest.raises(pipelab.Error, match=r"node 'h1': role=\['client'\]"):
        pipelab.Topology.from_networkx(G)
    G = nx.Graph()
    G.add_edge(0, 1, bw=float("nan"))
    with pytest.raises(pipelab.Error, match=r"edge 0-1: bw=nan is not a finite number"):
        pipelab.Topology.from_networkx(G)
    with pytest.raises(pipelab.Error, match=r"node \(0, 0\) \(tuple\): a node id is a str"):
        pipelab.Topology.from_networkx(nx.grid_2d_graph(2, 2))
    with pytest.raises(pipelab.Error, match="node 'h 1': a node's name is one word"):
        pipelab.Topology.from_networkx(nx.path_graph(["h 1", "s1"]))
    with pytest.raises(pipelab.Error, match="give a networkx graph"):
        pipelab.Topology.from_networkx({"h1": ["s1"]})


def test_from_networkx_without_networkx(monkeypatch):
    """networkx missing: an error that says how to install it."""
    monkeypatch.setitem(sys.modules, "networkx", None)
    with pytest.raises(pipelab.Error, match=r"needs the networkx package: pip install networkx"):
        pipelab.Topology.from_networkx(object())


def test_from_networkx_bad_spelling_is_the_readers_error(cli):
    """A spelling pipelab refuses is refused by its reader, naming the
    key."""
    G = nx.Graph()
    G.add_edge("h1", "s1", delay="5 msec")
    t = pipelab.Topology.from_networkx(G)
    p = cli("topo", "distill", str(t.file))
    assert p.returncode == 2 and "delay" in p.stderr, p.stderr


# The Mininet-style Network, without root.


def test_add_link_writes_mininets_units(cli, tmp_path):
    """add_link's arguments in Mininet's units become values with their
    units in the file; other pipe words pass as written; Mininet's
    shaping options are ignored; the file is one `topo distill` reads."""
    net = Network(name="unused")
    h1, h2 = net.addHost("h1"), net.add_host("h2")
    s1, r1 = net.add_switch("s1"), net.add_router("r1")
    net.add_link(h1, s1, bw=10, delay="5ms", jitter=1, loss=1, max_queue_size=100, use_htb=True)
    net.addLink("s1", r1, bw=0.5, delay=2.5, loss=0.001, codel="target 5ms", ecn=True)
    net.add_link(r1, h2, bw="640Kbit/s", loss="gemodel 1% 10%")
    assert edges(net.graphml()) == [
        {
            "source": "h1",
            "target": "s1",
            "bw": "10Mbit/s",
            "delay": "5ms",
            "jitter": "1ms",
            "loss": "1%",
            "max_queue_size": "100",
        },
        {
            "source": "s1",
            "target": "r1",
            "bw": "0.5Mbit/s",
            "delay": "2.5ms",
            "loss": "0.001%",
            "codel": "target 5ms",
            "ecn": "1",
        },
        {"source": "r1", "target": "h2", "bw": "640Kbit/s", "loss": "gemodel 1% 10%"},
    ]
    text = net.graphml()
    assert 'attr.name="max_queue_size" attr.type="int"' in text
    assert '<node id="h1">' in text and ">client</data>" in text and ">switch</data>" in text
    assert [h.name for h in net.hosts] == ["h1", "h2"] and net.switches == [s1] and net.routers == [r1]
    assert net.get("h1") is h1 and net.get("h1", "s1") == [h1, s1] and net["r1"] is r1 and "h2" in net
    f = net.write(tmp_path / "net.graphml")
    p = cli("topo", "distill", str(f))
    assert p.returncode == 0, p.stderr
    assert "pipes: 6" in p.stdout, p.stdout


@pytest.mark.parametrize(
    "link, message",
    [
        ({"bw": 0}, r"bw=0: give a rate in Mbit/s above 0"),
        ({"bw": -10}, r"bw=-10: give a rate in Mbit/s above 0"),
        ({"bw": True}, r"bw=True: give a rate"),
        ({"bw": float("inf")}, r"bw=inf: give a rate"),
        ({"delay": -1}, r"delay=-1: give a time in ms, 0 or more"),
        ({"delay": [5]}, r"delay=\[5\]: give a time"),
        ({"jitter": ""}, r"jitter='': give a value, or leave jitter out"),
        ({"loss": 101}, r"loss=101: give a percentage from 0 to 100"),
        ({"loss": -0.5}, r"loss=-0.5: give a percentage"),
        ({"max_queue_size": 0}, r"max_queue_size=0: give the queue in packets"),
        ({"max_queue_size": 1.5}, r"max_queue_size=1.5: give the queue in packets"),
        ({"codel": None}, r"codel=None: a pipe word's value is a string"),
    ],
)
def test_add_link_refuses_bad_values(link, message):
    """A value of the wrong kind or out of range: refused by add_link,
    naming the link and the argument."""
    net = Network()
    h1, s1 = net.add_host("h1"), net.add_switch("s1")
    with pytest.raises(pipelab.Error, match=r"add_link\(h1, s1\): " + message):
        net.add_link(h1, s1, **link)
    assert net.links == []


def test_network_refuses_bad_nodes():
    """Names of one word, each once; links between two nodes of this
    network; Mininet's ip= with the reason; commands only in hosts;
    addresses only once started."""
    net = Network()
    h1 = net.add_host("h1")
    s1 = net.add_switch("s1")
    with pytest.raises(pipelab.Error, match="add_host 'h 2': a node's name is one word"):
        net.add_host("h 2")
    with pytest.raises(pipelab.Error, match="add_switch h1: a host is named 'h1' already"):
        net.add_switch("h1")
    with pytest.raises(
        pipelab.Error, match=r"add_host h3: unknown option\(s\) ip: pipelab gives each host its addresses"
    ):
        net.add_host("h3", ip="10.0.0.3/24")
    with pytest.raises(pipelab.Error, match="add_link: no node 'h9'"):
        net.add_link(h1, "h9")
    with pytest.raises(pipelab.Error, match=r"add_link\(s1, s1\): a link joins two different nodes"):
        net.add_link(s1, s1)
    other = Network()
    with pytest.raises(pipelab.Error, match="h1 is a node of another network"):
        net.add_link(other.add_host("h1"), s1)
    with pytest.raises(pipelab.Error, match="s1 is a switch .* runs no commands"):
        s1.cmd("true")
    with pytest.raises(pipelab.Error, match="network main is not started: call start"):
        h1.IP()
    with pytest.raises(pipelab.Error, match="network main: no hosts"):
        Network().write("/nonexistent/x.graphml")
    assert pipelab.Mininet is Network
    assert repr(net) == "Network('main': 1 host, 1 switch, 0 routers, 0 links) [stopped]"


# Live.


def test_networkx_graph_runs_with_its_delays(live):
    """Two hosts and a switch from a NetworkX graph, 3 ms and 2 ms (a
    bare number: ms): the VNs go by the node ids, and ping's minimum RTT
    is twice the delays' sum, 10 ms, within a millisecond."""
    name = f"pynx{os.getpid() % 100000}"
    G = nx.Graph()
    G.add_nodes_from(["h1", "h2"], type="host")
    G.add_node("s1", type="switch")
    G.add_edge("h1", "s1", delay="3ms", bw=100)
    G.add_edge("s1", "h2", delay=2, bw=100)
    with pipelab.Topology.from_networkx(G, name=name) as t:
        vns = {v["name"]: v["addr"] for v in t.vns()}
        assert sorted(vns) == ["h1", "h2"]
        pid = t.status()["state"]["pid"]
        r = t.exec("h1", ["ping", "-c", "10", "-i", "0.2", "-W", "2", vns["h2"]])
        assert r.returncode == 0, r.stdout + r.stderr
        rtt = min_rtt(r.stdout)
        assert 10 <= rtt <= 11, r.stdout
        print(f"min RTT {rtt} ms")
    assert leftovers(name, pid) == []


def test_mininet_script_gets_its_rate_and_delay(live):
    """Mininet's example, ported: two hosts behind a switch, each link
    bw=10, delay='5ms'. Every host reaches the other (pingAll loses
    none), ping's minimum RTT is 20 ms (within [20, 21]), and iperf3
    gets 9.5-10 Mbit/s of TCP goodput in 5 s (one of three tries on a
    busy machine)."""
    name = f"pymn{os.getpid() % 100000}"
    net = Network(name=name)
    h1, h2 = net.add_host("h1"), net.add_host("h2")
    s1 = net.add_switch("s1")
    net.add_link(h1, s1, bw=10, delay="5ms")
    net.add_link(h2, s1, bw=10, delay="5ms")
    with net:
        pid = net.topology.status()["state"]["pid"]
        assert [h1.IP(), h2.IP()] == ["10.0.0.1", "10.0.0.2"]
        assert net.pingAll() == 0.0
        out = h1.cmd("ping -c 10 -i 0.2 -W 2", h2.IP())
        rtt = min_rtt(out)
        assert 20 <= rtt <= 21, out
        assert "No such" in h1.cmd("ls /nonexistent")  # stderr with stdout
        assert h2.cmd("sleep 300 &") == ""  # in the background: returns at once
        goodputs = []
        for _ in range(3):
            bps = net.iperf((h1, h2), seconds=5)
            goodputs.append(round(bps / 1e6, 3))
            if 9.5e6 <= bps <= 10e6:
                break
        else:
            pytest.fail(f"goodput outside 9.5-10 Mbit/s in three tries: {goodputs} Mbit/s")
        print(f"min RTT {rtt} ms, goodput {goodputs} Mbit/s")
    assert leftovers(name, pid) == []
