"""Live topologies from Python, as Mininet users expect them.

A live topology is a process of its own (the emulator ``pipelab topo up``
leaves running in the background, with one network namespace per virtual
node), so :class:`Topology` drives the installed ``pipelab`` binary for
``gen``, ``up``, ``exec``, ``status`` and ``down`` (found by
:func:`binary`), and changes links and nodes over the control protocol
(:func:`pipelab.connect` with the topology's name), as ``pipelab --target
NAME link A B set ...`` does. Every value is passed on as written and
checked by pipelab's own parsers, so a spelling refused on the command
line is refused here with the same message.

    with Topology.generate("star", name="lab", clients=3) as t:
        print(t.exec("vn0", "ping -c 3 10.0.0.2").stdout)
        t.link("vn0", "hub").set(bw="2Mbit/s", delay="20ms")
    # down: namespaces, processes and the emulator are gone
"""

from __future__ import annotations

import json
import math
import numbers
import os
import shutil
import subprocess
import tempfile
import warnings
import weakref
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

from ._pipelab import Error
from .control import Control

__all__ = ["Link", "Node", "Topology", "binary"]

PathLike = Union[str, "os.PathLike[str]"]


def binary() -> str:
    """The ``pipelab`` executable: ``$PIPELAB_BIN``, else one inside this
    package's directory (a bundled build), else the first on ``PATH``."""
    env = os.environ.get("PIPELAB_BIN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise Error(f"error: PIPELAB_BIN={env} is not an executable file")
        return env
    bundled = Path(__file__).resolve().parent / "pipelab"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    found = shutil.which("pipelab")
    if found:
        return found
    raise Error(
        "error: cannot find the pipelab binary: install it (the Debian package, or "
        "`cargo install --path crates/cli`), put it on PATH, or set PIPELAB_BIN to its path"
    )


def _flags(options: Dict[str, object]) -> List[str]:
    """``name=value`` keyword arguments as the command line's
    ``--name value`` (``_`` becomes ``-``; ``True`` is a bare flag,
    ``False`` and ``None`` are left out)."""
    out: List[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, os.PathLike):
            out += [flag, os.fspath(value)]
        else:
            out += [flag, str(value)]
    return out


def _run(args: Sequence[str], what: str) -> subprocess.CompletedProcess:
    """``pipelab ARGS``; a failure raises :class:`Error` with pipelab's
    own message."""
    p = subprocess.run([binary(), *args], capture_output=True, text=True)
    if p.returncode != 0:
        message = p.stderr.strip() or p.stdout.strip() or f"exit status {p.returncode}"
        raise Error(f"{what}: {message}")
    return p


def _word(value: object, what: str) -> str:
    """One word of a topology command: a value with a space or a line
    break would be a second word or a second command."""
    text = str(value)
    if not text or any(c.isspace() for c in text):
        raise Error(f"error: {what} {text!r}: give one word (no spaces), e.g. 10Mbit/s")
    return text


def _check_networkx(graph: object) -> None:
    """Refuse, naming the node or edge and the key, what GraphML cannot
    hold: node ids that are neither strings of one word nor whole numbers,
    attribute values that are not a str, int, float or bool (``None``, a
    list), and NaN or infinite numbers."""

    def value(v: object, where: str, key: object) -> None:
        if not isinstance(key, str):
            raise Error(
                f"error: Topology.from_networkx: {where}: attribute key {key!r} is a "
                f"{type(key).__name__}: GraphML keys are strings"
            )
        if isinstance(v, str) or isinstance(v, numbers.Integral):
            return
        if isinstance(v, numbers.Real):
            if math.isfinite(float(v)):
                return
            raise Error(f"error: Topology.from_networkx: {where}: {key}={v!r} is not a finite number")
        raise Error(
            f"error: Topology.from_networkx: {where}: {key}={v!r} ({type(v).__name__}) cannot be "
            "written to GraphML: give a str, int, float or bool, or delete the attribute"
        )

    for n, data in graph.nodes(data=True):
        if isinstance(n, str):
            if not n or any(c.isspace() for c in n):
                raise Error(
                    f"error: Topology.from_networkx: node {n!r}: a node's name is one word "
                    "(no spaces), e.g. 'h1'"
                )
        elif isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise Error(
                f"error: Topology.from_networkx: node {n!r} ({type(n).__name__}): a node id is a "
                "str ('h1') or an int; relabel the nodes, e.g. with "
                "networkx.convert_node_labels_to_integers(G)"
            )
        for k, v in data.items():
            value(v, f"node {n!r}", k)
    for e in graph.edges(data=True):
        u, v, data = e
        for k, x in data.items():
            value(x, f"edge {u!r}-{v!r}", k)


class Link:
    """The link(s) between two nodes of a running topology
    (:meth:`Topology.link`)."""

    def __init__(self, topology: "Topology", a: str, b: str) -> None:
        self._topology = topology
        self.a = _word(a, "node")
        self.b = _word(b, "node")

    def _send(self, words: str) -> str:
        return self._topology.control().send(f"link {self.a} {self.b} {words}")

    def set(
        self,
        bw: object = None,
        delay: object = None,
        loss: object = None,
        queue: object = None,
    ) -> str:
        """Change the link's attributes now, both directions (``link A B
        set``): any subset of ``bw`` (``"10Mbit/s"``; a number is bit/s),
        ``delay`` (``"5ms"``; a number is ms), ``loss`` (``0.001`` or
        ``"0.1%"``) and ``queue`` (slots ``50`` or ``"100KB"``). Pipes
        keep their queued packets. The emulator's reply."""
        given = {"bw": bw, "delay": delay, "loss": loss, "queue": queue}
        words = [f"{k} {_word(v, k)}" for k, v in given.items() if v is not None]
        if not words:
            raise Error(
                f"error: link {self.a} {self.b} set: give at least one of bw, delay, loss, queue"
            )
        return self._send("set " + " ".join(words))

    def down(self, duration: object = None) -> str:
        """Fail the link (routes are recomputed), or with ``duration``
        (``"5s"``) black-hole its pipes that long without rerouting."""
        if duration is None:
            return self._send("down")
        return self._send("down " + _word(duration, "duration"))

    def up(self) -> str:
        """Restore the link."""
        return self._send("up")

    def __repr__(self) -> str:
        return f"Link({self.a!r}, {self.b!r})"


class Node:
    """A node of a running topology (:meth:`Topology.node`)."""

    def __init__(self, topology: "Topology", node: str) -> None:
        self._topology = topology
        self.name = _word(node, "node")

    def down(self) -> str:
        """Fail the node: every link of it (routes are recomputed)."""
        return self._topology.control().send(f"node {self.name} down")

    def up(self) -> str:
        """Restore the node."""
        return self._topology.control().send(f"node {self.name} up")

    def __repr__(self) -> str:
        return f"Node({self.name!r})"


class Topology:
    """A topology to run live, by name (one network namespace
    ``pl-NAME-VN`` per virtual node).

    ``file`` is a GML, GraphML or TOML topology; ``options`` are ``pipelab topo
    up``'s (``distill="last-mile"``, ``prefix="10.0.0.0/8"``,
    ``workers=2``, ``config="shares.conf"``, ``seed=7``, ...). Use it as
    a context manager: ``with Topology(...) as t:`` brings it up and
    always tears it down, also when the block raises.
    """

    def __init__(self, file: PathLike, name: str = "main", **options: object) -> None:
        self.file = Path(file)
        self.name = name
        self._options = options
        self._up = False
        self._tmp: Optional[str] = None

    @classmethod
    def from_file(cls, path: PathLike, name: str = "main", **options: object) -> "Topology":
        """A topology read from ``path`` (``.gml``, ``.graphml`` or
        ``.toml``)."""
        return cls(path, name, **options)

    @classmethod
    def from_networkx(cls, graph: object, name: str = "main", **options: object) -> "Topology":
        """A topology from a NetworkX graph (``Graph``, ``DiGraph``,
        ``MultiGraph``): written with ``networkx.write_graphml`` to a
        temporary ``.graphml`` file (removed with the object) and read as
        ``topo up`` reads GraphML. ``options`` are ``topo up``'s.

        Node ids that are strings (``"h1"``) are the nodes' names, whole
        numbers their ids (named ``n0``, ... unless a ``name`` or
        ``label`` attribute says otherwise). Node attributes: ``role`` or
        ``type`` (``"host"``/``"client"`` for an end host, a VN;
        ``"switch"``/``"router"``/``"stub"``; ``"transit"``; the default
        is a stub), ``isSwitch``, ``name``/``label``, Shadow's
        ``host_bandwidth_up``/``host_bandwidth_down``. Edge attributes,
        in Mininet's units where a number is bare: ``bw`` (Mbit/s, or
        ``"10Mbit/s"``), ``delay`` (ms, or ``"5ms"``), ``jitter``
        (``"1ms"``), ``loss`` (per cent, or ``"1%"``), ``max_queue_size``
        (packets), ``queue``, Shadow's ``latency`` (bare: seconds) and
        ``packet_loss`` (a fraction), and any other pipe word as a string
        (``codel="target 5ms"``). A value GraphML cannot hold (``None``,
        a list, NaN) raises :class:`pipelab.Error` naming the node or
        edge and the key; pipelab's reader checks the rest when the
        topology comes up. The graph's own attributes are not read.
        """
        try:
            import networkx as nx
        except ImportError:
            raise Error(
                "error: Topology.from_networkx needs the networkx package: "
                "pip install networkx (or pip install 'pipelab[networkx]')"
            ) from None
        if not isinstance(graph, nx.Graph):
            raise Error(
                "error: Topology.from_networkx: give a networkx graph (Graph, DiGraph, "
                f"MultiGraph), not {type(graph).__name__}"
            )
        _check_networkx(graph)
        if graph.graph:
            # The graph's own data is not read; a value the writer cannot
            # write there must not refuse the graph.
            graph = graph.copy()
            graph.graph.clear()
        tmp = tempfile.mkdtemp(prefix="pipelab-topo-")
        try:
            out = Path(tmp) / "topology.graphml"
            try:
                # Numeric types inferred over all values: an attribute
                # that is 10 on one edge and 2.5 on another is a double.
                nx.write_graphml(graph, str(out), infer_numeric_types=True)
            except (nx.NetworkXError, TypeError, ValueError) as e:
                raise Error(
                    f"error: Topology.from_networkx: networkx cannot write the graph as GraphML: {e}"
                ) from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        t = cls(out, name, **options)
        t._tmp = tmp
        weakref.finalize(t, shutil.rmtree, tmp, True)
        return t

    @classmethod
    def generate(
        cls,
        kind: str,
        name: str = "main",
        options: Optional[Dict[str, object]] = None,
        **params: object,
    ) -> "Topology":
        """A generated topology (``pipelab topo gen KIND``): ``kind`` is
        ``ring``, ``star``, ``dumbbell``, ``tree``, ``transit-stub`` or
        ``waxman``; ``params`` are its options (``clients=3``,
        ``routers=4``, ``access="bw 10Mbit/s delay 5ms"``,
        ``seed=7``, ...); ``options`` are ``topo up``'s. The file lives in
        a temporary directory removed with the object."""
        tmp = tempfile.mkdtemp(prefix="pipelab-topo-")
        try:
            out = Path(tmp) / "topology.toml"
            _run(
                ["topo", "gen", _word(kind, "kind"), *_flags(params), "-o", str(out)],
                f"error: topo gen {kind}",
            )
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        t = cls(out, name, **(options or {}))
        t._tmp = tmp
        weakref.finalize(t, shutil.rmtree, tmp, True)
        return t

    @property
    def is_up(self) -> bool:
        """Whether :meth:`up` ran and :meth:`down` has not."""
        return self._up

    def up(self) -> "Topology":
        """Bring the topology up (``pipelab topo up``); returns once
        forwarding runs. Up already: nothing to do."""
        if self._up:
            return self
        _run(
            ["topo", "up", os.fspath(self.file), "--name", self.name, *_flags(self._options)],
            f"error: topo up {self.name}",
        )
        self._up = True
        return self

    def down(self) -> str:
        """Tear the topology down (``pipelab topo down``): the emulator
        stops, processes left in its namespaces are killed and the
        namespaces removed, also after a crash. pipelab's summary."""
        p = _run(["topo", "down", "--name", self.name], f"error: topo down {self.name}")
        self._up = False
        return p.stdout.strip()

    def exec(
        self,
        vn: str,
        cmd: Union[str, Sequence[str]],
        *,
        check: bool = False,
        timeout: Optional[float] = None,
        input: Optional[str] = None,
    ) -> subprocess.CompletedProcess:
        """Run ``cmd`` in the VN ``vn`` (its name, id or address): a
        string runs in ``sh -c``, a list as it is. The result has
        ``returncode``, ``stdout`` and ``stderr`` (text); with ``check``,
        a non-zero status raises :class:`pipelab.Error`. The command
        finds its VN's name and addresses in ``PIPELAB_VN``,
        ``PIPELAB_ADDR`` and ``PIPELAB_ADDR6``."""
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else [str(a) for a in cmd]
        if not argv:
            raise Error("error: exec: give a command")
        args = [binary(), "topo", "exec", "--name", self.name, str(vn), "--", *argv]
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, input=input)
        except subprocess.TimeoutExpired as e:
            raise Error(f"error: exec in {vn}: {argv!r} did not finish within {timeout} s") from e
        if check and p.returncode != 0:
            raise Error(
                f"error: exec in {vn}: {argv!r} exited with {p.returncode}: {p.stderr.strip()}"
            )
        return p

    def status(self) -> dict:
        """The topology's state and counters (``pipelab topo status
        --json``): ``state`` (``vns`` with ``name``, ``addr``,
        ``addr6``, ...) and ``status`` (the emulator's counters)."""
        p = _run(["topo", "status", "--name", self.name, "--json"], f"error: topo status {self.name}")
        return json.loads(p.stdout)

    def vns(self) -> List[dict]:
        """The virtual nodes, in node order: ``name``, ``addr``, ... each."""
        return self.status()["state"]["vns"]

    def control(self) -> Control:
        """The running topology's control socket (``pipelab --target
        NAME``): topology commands and commands of the language."""
        return Control(self.name)

    def link(self, a: str, b: str) -> Link:
        """The link(s) between nodes ``a`` and ``b`` (names or ids)."""
        return Link(self, a, b)

    def node(self, node: str) -> Node:
        """The node ``node`` (a name or an id)."""
        return Node(self, node)

    def __enter__(self) -> "Topology":
        try:
            self.up()
        except Error:
            # pipelab refused or failed, and undid what it made itself; a
            # topology of this name that is up already is someone else's.
            raise
        except BaseException:
            # Interrupted (Ctrl-C) while the emulator came up in the
            # background: take down what there is.
            try:
                self.down()
            except Error:
                pass
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.down()
        except Error as e:
            if exc is None:
                raise
            # The block's own exception is the one to see.
            warnings.warn(f"pipelab: {e}", RuntimeWarning, stacklevel=2)

    def __repr__(self) -> str:
        state = "up" if self._up else "down"
        return f"Topology({os.fspath(self.file)!r}, name={self.name!r}) [{state}]"
