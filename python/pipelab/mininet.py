"""Mininet's way of building a network, run as a pipelab live topology.

    from pipelab import Network

    net = Network(name="lab")
    h1, h2 = net.add_host("h1"), net.add_host("h2")
    s1 = net.add_switch("s1")
    net.add_link(h1, s1, bw=10, delay="5ms")
    net.add_link(h2, s1, bw=10, delay="5ms")
    with net:                                   # start() ... stop()
        print(h1.cmd("ping -c 3", h2.IP()))
        print(net.iperf((h1, h2)))              # goodput, bit/s

How Mininet's model maps onto pipelab's: a **host** is a virtual node
(a VN, a topology's ``client``: a network namespace ``pl-NAME-h1`` of its
own, with the address pipelab gives it); a **switch** or a **router** is
a ``stub`` node, which forwards inside the emulator and runs no
commands; a **link** is a pipe each way with the link's attributes.
Routes between the hosts are computed by pipelab (least delay), so hosts
reach each other across any mix of switches and routers with no
controller and no static routes.

:meth:`Network.add_link` takes the units of Mininet's ``TCLink``: ``bw``
in Mbit/s, ``delay`` and ``jitter`` a string (``"5ms"``) or a number of
ms, ``loss`` in per cent, ``max_queue_size`` in packets; any other word
of a pipe as a keyword (``codel="target 5ms"``). :meth:`Network.start`
writes the network as a GraphML file (:meth:`Network.write`) and brings
it up as :class:`pipelab.Topology` does; :attr:`Network.topology` is
that topology, for what Mininet does not have (``net.topology.link("h1",
"s1").set(delay="20ms")``, ``status()``). ``Mininet`` is another name of
:class:`Network`, and the camel-case names (``addHost``, ``addLink``,
``pingAll``) are there for scripts being ported.
"""

from __future__ import annotations

import json
import math
import numbers
import shutil
import subprocess
import tempfile
import time
import weakref
import xml.etree.ElementTree as ET
from decimal import Decimal
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ._pipelab import Error
from .topology import PathLike, Topology

__all__ = ["Host", "Mininet", "Network", "Router", "Switch"]

#: Mininet's link options that choose how Linux shapes a link (HTB or
#: TBF, the class of the link): no meaning here, accepted and ignored.
_IGNORED_LINK_OPTIONS = ("cls", "use_htb", "use_tbf", "speedup", "r2q")


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or any(c.isspace() for c in value):
        raise Error(f"error: {what} {value!r}: a node's name is one word (no spaces), e.g. 'h1'")
    return value


def _decimal(value: float) -> str:
    """A number as plain decimal digits: ``10``, ``0.5``, ``0.00001``
    (never ``1e-05``, which the language does not read)."""
    if isinstance(value, numbers.Integral):
        return str(int(value))
    text = format(Decimal(repr(float(value))), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _number(value: object) -> Optional[float]:
    """``value`` if it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return value if math.isfinite(float(value)) else None


def _text(value: str, where: str, key: str) -> str:
    if not value.strip():
        raise Error(f"error: {where}: {key}={value!r}: give a value, or leave {key} out")
    return value.strip()


class _Member:
    """A node of a :class:`Network`, by name."""

    kind = "node"
    role = "stub"

    def __init__(self, net: "Network", name: str) -> None:
        self.net = net
        self.name = name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def cmd(self, *args: object, **kwargs: object) -> str:
        """Only hosts run commands."""
        raise Error(
            f"error: {self.name} is a {self.kind} (a stub node inside the emulator): it has no "
            "namespace and runs no commands; run them in a host"
        )


class Host(_Member):
    """A host of a :class:`Network`: a virtual node (VN) with a network
    namespace of its own. ``str(host)`` is its name."""

    kind = "host"
    role = "client"

    def cmd(self, *args: object, timeout: Optional[float] = None) -> str:
        """Run a shell command in the host and return its output, standard
        output and standard error together, as Mininet's ``cmd`` does: the
        arguments are joined with spaces (``h1.cmd("ping -c 3",
        h2.IP())``). A command that ends in ``&`` runs in the background
        with its output discarded (``h2.cmd("iperf3 -s &")``); it is
        killed, if still running, by :meth:`Network.stop`."""
        command = " ".join(str(a) for a in args).strip()
        if not command:
            raise Error(f"error: {self.name}.cmd: give a command")
        if command.endswith("&") and not command.endswith("&&"):
            script = f"exec >/dev/null 2>&1 </dev/null\n{command}"
        else:
            script = f"exec 2>&1\n{command}"
        p = self.net.topology.exec(self.name, ["sh", "-c", script], timeout=timeout)
        return p.stdout

    def exec(self, cmd: Union[str, Sequence[str]], **kwargs: object) -> subprocess.CompletedProcess:
        """:meth:`pipelab.Topology.exec` in this host: the command's
        ``returncode``, ``stdout`` and ``stderr`` apart (``check``,
        ``timeout``, ``input`` as there)."""
        return self.net.topology.exec(self.name, cmd, **kwargs)

    def IP(self) -> str:
        """The host's IPv4 address (from the running topology's status)."""
        return self.net._addresses()[self.name][0]

    def IP6(self) -> Optional[str]:
        """The host's IPv6 address, if the topology gives one."""
        return self.net._addresses()[self.name][1]


class Switch(_Member):
    """A switch of a :class:`Network`: a stub node that forwards inside
    the emulator (no namespace, no commands)."""

    kind = "switch"
    role = "switch"


class Router(_Member):
    """A router of a :class:`Network`: a stub node, as a switch is."""

    kind = "router"
    role = "router"


class NetLink:
    """A link of a :class:`Network` (:meth:`Network.add_link`): its two
    ends and its attributes as written to the topology file."""

    def __init__(self, a: _Member, b: _Member, attrs: Dict[str, Union[str, int]]) -> None:
        self.a = a
        self.b = b
        self.attrs = attrs

    def __repr__(self) -> str:
        words = "".join(f", {k}={v!r}" for k, v in self.attrs.items())
        return f"NetLink({self.a.name!r}, {self.b.name!r}{words})"


class Network:
    """A network built as in Mininet, run as a live topology named
    ``name`` (one network namespace ``pl-NAME-HOST`` per host).
    ``options`` are ``pipelab topo up``'s (``prefix="10.1.0.0/16"``,
    ``workers=2``, ``seed=7``, ...). Add hosts, switches, routers and
    links, then :meth:`start` (or ``with net:``, which always stops it,
    also when the block raises)."""

    def __init__(self, name: str = "main", **options: object) -> None:
        self.name = name
        self._options = options
        self._nodes: Dict[str, _Member] = {}
        self.links: List[NetLink] = []
        self._topology: Optional[Topology] = None
        self._addrs: Optional[Dict[str, Tuple[str, Optional[str]]]] = None

    # Building.

    def _add(self, cls: type, name: object, params: Dict[str, object], what: str) -> _Member:
        name = _name(name, what)
        if params:
            given = ", ".join(sorted(params))
            hint = ""
            if "ip" in params or "mac" in params:
                hint = (
                    ": pipelab gives each host its addresses (host.IP() once started; topo up's "
                    "prefix= option sets the range)"
                )
            raise Error(f"error: {what} {name}: unknown option(s) {given}{hint}")
        if self._topology is not None:
            raise Error(f"error: {what} {name}: the network is started; add nodes before start()")
        if name in self._nodes:
            raise Error(f"error: {what} {name}: a {self._nodes[name].kind} is named {name!r} already")
        node = cls(self, name)
        self._nodes[name] = node
        return node

    def add_host(self, name: str, **params: object) -> Host:
        """Add a host (a VN) named ``name``; the :class:`Host`."""
        return self._add(Host, name, params, "add_host")

    def add_switch(self, name: str, **params: object) -> Switch:
        """Add a switch (a stub node) named ``name``; the :class:`Switch`."""
        return self._add(Switch, name, params, "add_switch")

    def add_router(self, name: str, **params: object) -> Router:
        """Add a router (a stub node) named ``name``; the :class:`Router`."""
        return self._add(Router, name, params, "add_router")

    def _member(self, node: object, where: str) -> _Member:
        if isinstance(node, _Member):
            if node.net is not self or self._nodes.get(node.name) is not node:
                raise Error(f"error: {where}: {node.name} is a node of another network")
            return node
        if isinstance(node, str) and node in self._nodes:
            return self._nodes[node]
        raise Error(f"error: {where}: no node {node!r} (add it with add_host, add_switch or add_router)")

    def add_link(
        self,
        a: Union[_Member, str],
        b: Union[_Member, str],
        bw: Union[float, str, None] = None,
        delay: Union[float, str, None] = None,
        jitter: Union[float, str, None] = None,
        loss: Union[float, str, None] = None,
        max_queue_size: Optional[int] = None,
        **words: object,
    ) -> NetLink:
        """Link nodes ``a`` and ``b`` (nodes or names): a pipe each way,
        both with these attributes, in Mininet's units. ``bw``: Mbit/s
        (``10``), or a rate with its unit (``"640Kbit/s"``). ``delay``
        and ``jitter``: ``"5ms"``, or a number of ms. ``loss``: per cent
        (``1`` is 1 %, from 0 to 100), or ``"1%"`` or a netem loss model
        (``"gemodel 1% 10%"``). ``max_queue_size``: the queue, in packets.
        Any other word of a pipe is a keyword whose value is the rest of
        its words (``codel="target 5ms"``, ``ecn=True``). Mininet's
        ``cls``, ``use_htb``, ``use_tbf``, ``speedup`` and ``r2q`` choose
        how Linux would shape the link and are ignored. A value of the
        wrong kind raises :class:`pipelab.Error` here; the spelling of a
        string is checked by pipelab's reader at :meth:`start`. ``None``
        leaves an attribute out (no limit, no delay)."""
        where = "add_link"
        na, nb = self._member(a, where), self._member(b, where)
        where = f"add_link({na.name}, {nb.name})"
        if self._topology is not None:
            raise Error(
                f"error: {where}: the network is started; add links before start(), or change a "
                f"running link with net.topology.link({na.name!r}, {nb.name!r}).set(...)"
            )
        if na is nb:
            raise Error(f"error: {where}: a link joins two different nodes")
        attrs: Dict[str, Union[str, int]] = {}
        if bw is not None:
            attrs["bw"] = self._quantity(bw, where, "bw", "Mbit/s", "a rate in Mbit/s above 0", low=0.0)
        if delay is not None:
            attrs["delay"] = self._quantity(delay, where, "delay", "ms", "a time in ms, 0 or more")
        if jitter is not None:
            attrs["jitter"] = self._quantity(jitter, where, "jitter", "ms", "a time in ms, 0 or more")
        if loss is not None:
            n = _number(loss)
            if isinstance(loss, str):
                attrs["loss"] = _text(loss, where, "loss")
            elif n is not None and 0 <= n <= 100:
                attrs["loss"] = _decimal(n) + "%"
            else:
                raise Error(
                    f"error: {where}: loss={loss!r}: give a percentage from 0 to 100 (Mininet's "
                    "loss=1 is 1 %), or a string such as '0.1%'"
                )
        if max_queue_size is not None:
            if (
                isinstance(max_queue_size, bool)
                or not isinstance(max_queue_size, numbers.Integral)
                or max_queue_size < 1
            ):
                raise Error(
                    f"error: {where}: max_queue_size={max_queue_size!r}: give the queue in packets, "
                    "a whole number above 0"
                )
            attrs["max_queue_size"] = int(max_queue_size)
        for key, value in words.items():
            if key in _IGNORED_LINK_OPTIONS:
                continue
            if isinstance(value, bool):
                attrs[key] = "1" if value else "0"
            elif isinstance(value, str):
                attrs[key] = value.strip()
            elif _number(value) is not None:
                attrs[key] = _decimal(value)
            else:
                raise Error(
                    f"error: {where}: {key}={value!r}: a pipe word's value is a string of its "
                    "words (e.g. codel='target 5ms'), a number or a bool"
                )
        link = NetLink(na, nb, attrs)
        self.links.append(link)
        return link

    @staticmethod
    def _quantity(
        value: object, where: str, key: str, unit: str, want: str, low: Optional[float] = None
    ) -> str:
        if isinstance(value, str):
            return _text(value, where, key)
        n = _number(value)
        if n is None or n < 0 or (low is not None and n <= low):
            raise Error(f"error: {where}: {key}={value!r}: give {want}, or a string with its unit")
        return _decimal(n) + unit

    # Camel-case names, as Mininet spells them.
    addHost = add_host
    addSwitch = add_switch
    addRouter = add_router
    addLink = add_link

    # Looking up.

    @property
    def hosts(self) -> List[Host]:
        """The hosts, in the order they were added."""
        return [n for n in self._nodes.values() if isinstance(n, Host)]

    @property
    def switches(self) -> List[Switch]:
        """The switches, in the order they were added."""
        return [n for n in self._nodes.values() if isinstance(n, Switch)]

    @property
    def routers(self) -> List[Router]:
        """The routers, in the order they were added."""
        return [n for n in self._nodes.values() if isinstance(n, Router)]

    def get(self, *names: str) -> Union[_Member, List[_Member]]:
        """The node named so (one name), or the nodes (several), as
        Mininet's ``net.get("h1", "h2")``."""
        nodes = [self[n] for n in names]
        return nodes[0] if len(nodes) == 1 else nodes

    def __getitem__(self, name: str) -> _Member:
        try:
            return self._nodes[name]
        except KeyError:
            raise KeyError(f"no node {name!r} in network {self.name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    # The file.

    def graphml(self) -> str:
        """The network as GraphML in NetworkX's dialect, the text
        :meth:`write` writes: nodes with their ``role`` (``client`` for a
        host, ``switch``, ``router``) and ``name``, edges with the links'
        attributes, numbers written with their units (``bw`` ``10Mbit/s``,
        ``delay`` ``5ms``, ``loss`` ``1%``; ``max_queue_size`` in
        packets)."""
        ns = "http://graphml.graphdrawing.org/xmlns"
        root = ET.Element("graphml", {"xmlns": ns})
        keys: Dict[Tuple[str, str], str] = {}

        def key(domain: str, name: str, kind: str) -> str:
            if (domain, name) not in keys:
                keys[(domain, name)] = f"d{len(keys)}"
                ET.SubElement(
                    root,
                    "key",
                    {"id": keys[(domain, name)], "for": domain, "attr.name": name, "attr.type": kind},
                )
            return keys[(domain, name)]

        key("node", "role", "string")
        key("node", "name", "string")
        for link in self.links:
            for k, v in link.attrs.items():
                key("edge", k, "int" if isinstance(v, int) else "string")
        graph = ET.SubElement(root, "graph", {"edgedefault": "undirected"})
        for node in self._nodes.values():
            el = ET.SubElement(graph, "node", {"id": node.name})
            ET.SubElement(el, "data", {"key": keys[("node", "role")]}).text = node.role
            ET.SubElement(el, "data", {"key": keys[("node", "name")]}).text = node.name
        for link in self.links:
            el = ET.SubElement(graph, "edge", {"source": link.a.name, "target": link.b.name})
            for k, v in link.attrs.items():
                ET.SubElement(el, "data", {"key": keys[("edge", k)]}).text = str(v)
        ET.indent(root)
        return "<?xml version='1.0' encoding='utf-8'?>\n" + ET.tostring(root, encoding="unicode") + "\n"

    def write(self, path: PathLike) -> Path:
        """Write the network to ``path`` (GraphML, see :meth:`graphml`;
        name it ``.graphml``): the file ``pipelab topo up`` runs as
        :meth:`start` does. The path."""
        if not self.hosts:
            raise Error(f"error: network {self.name}: no hosts (add some with add_host)")
        path = Path(path)
        path.write_text(self.graphml(), encoding="utf-8")
        return path

    # Running.

    @property
    def topology(self) -> Topology:
        """The running :class:`pipelab.Topology` (after :meth:`start`)."""
        if self._topology is None:
            raise Error(f"error: network {self.name} is not started: call start() first")
        return self._topology

    def _prepare(self) -> Topology:
        if self._topology is None:
            tmp = tempfile.mkdtemp(prefix="pipelab-net-")
            try:
                file = self.write(Path(tmp) / "network.graphml")
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            t = Topology(file, self.name, **self._options)
            weakref.finalize(t, shutil.rmtree, tmp, True)
            self._topology = t
        return self._topology

    def start(self) -> "Network":
        """Bring the network up (``pipelab topo up`` of its file); returns
        once forwarding runs. Started already: nothing to do."""
        t = self._prepare()
        try:
            t.up()
        except BaseException:
            self._topology = None
            raise
        return self

    def stop(self) -> str:
        """Tear the network down (``pipelab topo down``): the hosts'
        processes are killed and their namespaces removed. pipelab's
        summary. The network can be started again."""
        t = self.topology
        summary = t.down()
        self._topology = None
        self._addrs = None
        return summary

    def __enter__(self) -> "Network":
        t = self._prepare()
        try:
            t.__enter__()
        except BaseException:
            self._topology = None
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        t = self._topology
        if t is None:
            # stop() ran inside the block.
            return
        try:
            t.__exit__(exc_type, exc, tb)
        finally:
            self._topology = None
            self._addrs = None

    def _addresses(self) -> Dict[str, Tuple[str, Optional[str]]]:
        if self._addrs is None:
            vns = self.topology.vns()
            self._addrs = {v["name"]: (v["addr"], v.get("addr6")) for v in vns}
        return self._addrs

    # Mininet's tests.

    def ping_all(self, timeout: float = 1.0) -> float:
        """Ping every host from every other, once each (``ping -c 1 -W
        timeout``); the percentage of pings lost, as Mininet's
        ``pingAll`` returns it."""
        hosts = self.hosts
        sent = lost = 0
        for src in hosts:
            for dst in hosts:
                if src is dst:
                    continue
                wait = max(1, math.ceil(timeout))
                r = src.exec(["ping", "-c", "1", "-W", str(wait), dst.IP()])
                sent += 1
                lost += r.returncode != 0
        return 100.0 * lost / sent if sent else 0.0

    def iperf(self, hosts: Optional[Sequence[Union[Host, str]]] = None, seconds: float = 5) -> float:
        """TCP goodput from the first host of ``hosts`` to the second
        (default: the first and the last host added), measured by iperf3
        for ``seconds``: the bits per second the receiver got (iperf3's
        ``end.sum_received.bits_per_second``). iperf3 must be installed.
        Where Mininet's ``iperf`` returns two strings, this returns the
        number."""
        if hosts is None:
            if len(self.hosts) < 2:
                raise Error(f"error: network {self.name}: iperf needs two hosts")
            hosts = (self.hosts[0], self.hosts[-1])
        if len(hosts) != 2:
            raise Error("error: iperf: give two hosts, the client and the server")
        client, server = (self._member(h, "iperf") for h in hosts)
        for h in (client, server):
            if not isinstance(h, Host):
                raise Error(f"error: iperf: {h.name} is a {h.kind}; iperf runs between hosts")
        if _number(seconds) is None or seconds <= 0:
            raise Error(f"error: iperf: seconds={seconds!r}: give a duration above 0")
        server.exec(["iperf3", "-s", "-1", "-D"], check=True)
        args = ["iperf3", "-c", server.IP(), "-t", _decimal(seconds), "-J"]
        for _ in range(20):
            r = client.exec(args, timeout=seconds + 30)
            if r.returncode == 0 or "refused" not in r.stdout + r.stderr:
                break
            # The daemon is not listening yet.
            time.sleep(0.1)
        try:
            report = json.loads(r.stdout)
        except ValueError:
            report = {}
        if r.returncode != 0 or "end" not in report:
            message = report.get("error") or r.stderr.strip() or r.stdout.strip()
            raise Error(f"error: iperf {client.name} -> {server.name}: iperf3 failed: {message}")
        return float(report["end"]["sum_received"]["bits_per_second"])

    pingAll = ping_all

    def __repr__(self) -> str:
        state = "started" if self._topology is not None and self._topology.is_up else "stopped"
        counts = [
            (len(self.hosts), "host"),
            (len(self.switches), "switch"),
            (len(self.routers), "router"),
            (len(self.links), "link"),
        ]
        text = ", ".join(f"{n} {w}{'' if n == 1 else 'es' if w == 'switch' else 's'}" for n, w in counts)
        return f"Network({self.name!r}: {text}) [{state}]"


#: Mininet's name, for scripts being ported.
Mininet = Network
