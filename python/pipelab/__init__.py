"""pipelab from Python: the simulator, the control protocol, live topologies.

Three doors, each the same as the command line's:

* :func:`sim` runs a configuration of the command language against
  synthetic traffic in virtual time and returns the report of
  ``pipelab sim --json`` as a dict: computed in process by the same Rust
  code (no subprocess), the same for the same seed, on any number of
  workers.
* :func:`connect` talks to a running emulation (pipelabd, a shell, a
  bridge, a topology) over the control protocol, as ``pipelab --target
  NAME`` does: send commands, read stats as dicts, list emulations.
* :class:`Topology` builds a topology from a generator or a file, brings
  it up, runs commands in its virtual nodes, changes its links and tears
  it down; ``with Topology(...) as t:`` always tears it down.
  :meth:`Topology.from_networkx` runs a NetworkX graph, and
  :class:`Network` (also ``Mininet``) builds one as Mininet scripts do
  (``add_host``, ``add_switch``, ``add_link(h1, s1, bw=10,
  delay="5ms")``, ``h1.cmd(...)``, ``h2.IP()``).

Every failure raises :class:`Error`, whose message is the one the command
line prints (a configuration's error names its line, with a caret).

    >>> import pipelab
    >>> conf = "pipe 1 config bw 2Mbit/s delay 20ms\\nadd 100 pipe 1 ip from any to any\\n"
    >>> r = pipelab.sim(conf, ["cbr rate 1Mbit/s size 1000B duration 5s"])
    >>> r["flows"][0]["received"], r["flows"][0]["delay_ms"]["min"]
    (625, 24.0)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional, Sequence, Tuple, Union

from ._pipelab import Error, __version__
from ._pipelab import read_text as _read_text
from ._pipelab import sim_json as _sim_json
from .control import Control, connect, emulations
from .mininet import Host, Mininet, Network, Router, Switch
from .topology import Link, Node, Topology, binary

__all__ = [
    "Control",
    "Error",
    "Host",
    "Link",
    "Mininet",
    "Network",
    "Node",
    "Router",
    "Switch",
    "Topology",
    "__version__",
    "binary",
    "connect",
    "emulations",
    "sim",
    "sim_json",
]

#: A configuration: its text, or a path to its file.
ConfigArg = Union[str, "os.PathLike[str]"]
#: Traffic: specs one per element, or a traffic file's text or path.
TrafficArg = Union[Sequence[str], str, "os.PathLike[str]"]


def _read(path: "os.PathLike[str]", what: str) -> str:
    # The CLI's reader: a FIFO or a device (/dev/zero) is refused at once,
    # a file over the size cap before it is read, bad UTF-8 at its line.
    return _read_text(os.fspath(path), what)


def _config(config: ConfigArg) -> Tuple[str, str, Optional[str]]:
    """The configuration's text, its name in errors and the directory the
    files it names are relative to."""
    if isinstance(config, os.PathLike):
        path = Path(config)
        return _read(path, "configuration"), os.fspath(path), os.fspath(path.parent)
    if isinstance(config, str):
        return config, "config", None
    raise Error(
        f"error: config: give the configuration's text (str) or a path, not {type(config).__name__}"
    )


def _traffic(traffic: TrafficArg) -> Tuple[list, Optional[str]]:
    """Specs given one per element, or the text of a traffic file."""
    if isinstance(traffic, os.PathLike):
        return [], _read(traffic, "traffic file")
    if isinstance(traffic, str):
        return [], traffic
    try:
        specs = list(traffic)
    except TypeError:
        raise Error(
            f"error: traffic: give a list of specs, a traffic file's text or a path, not {type(traffic).__name__}"
        ) from None
    for i, s in enumerate(specs):
        if not isinstance(s, str):
            raise Error(f"error: traffic[{i}]: a spec is a str, not {type(s).__name__}")
    return specs, None


def _count(value: object, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < 2**64:
        raise Error(f"error: {what}: give an integer from {low} to 2^64-1, not {value!r}")
    return value


def sim_json(
    config: ConfigArg,
    traffic: TrafficArg,
    seed: int = 1,
    workers: int = 1,
    interval: Optional[str] = None,
) -> str:
    """:func:`sim`'s report as the JSON text ``pipelab sim --json`` prints
    (without its final newline)."""
    text, name, base = _config(config)
    specs, traffic_text = _traffic(traffic)
    seed = _count(seed, "seed", 0)
    workers = _count(workers, "workers", 1)
    if interval is not None and not isinstance(interval, str):
        raise Error(f"error: interval: give a duration with its unit, e.g. '100ms', not {interval!r}")
    return _sim_json(
        text,
        specs,
        traffic_text,
        seed=seed,
        workers=workers,
        interval=interval,
        name=name,
        base=base,
    )


def sim(
    config: ConfigArg,
    traffic: TrafficArg,
    seed: int = 1,
    workers: int = 1,
    interval: Optional[str] = None,
) -> dict:
    """Run ``config`` in virtual time against ``traffic``; the report.

    ``config`` is a configuration's text (or a path to its file: then the
    files its pipes name are relative to it). ``traffic`` is a list of
    specs (``"cbr rate 1000pps size 1000B duration 10s"``), or a traffic
    file's text or path (one spec a line, ``#`` comments). ``seed`` seeds
    every random decision; ``workers`` threads run partitions of the
    pipes (the report is the same for any number); ``interval``
    (``"100ms"``) adds per-interval series. The report is the dict of
    ``pipelab sim CONFIG --traffic ... --json`` (``flows``, ``pipes``,
    ``rules``, ...). Bad input raises :class:`Error` naming the line.
    The interpreter's lock is released while the simulation runs.
    """
    return json.loads(sim_json(config, traffic, seed, workers, interval))
