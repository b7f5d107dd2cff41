"""The control protocol from Python: what ``pipelab [--target NAME] ...`` does.

Every live emulation (pipelabd, a ``pipelab shell``, a bridge, an
attached interface, a topology) registers under a name and serves the
one control protocol on a Unix socket. :func:`connect` returns a
:class:`Control` bound to one of them; each request opens a connection,
as each ``pipelab`` command does, so a :class:`Control` kept in a
notebook for hours never holds a stale one.
"""

from __future__ import annotations

import json
import os
from typing import List, Optional, Union

from ._pipelab import Client as _Client
from ._pipelab import emulations_json as _emulations_json

__all__ = ["Control", "connect", "emulations"]


def emulations() -> List[dict]:
    """The running emulations, as ``pipelab list --json`` prints them: a
    dict each (``name``, ``mode``, ``pid``, ``owner``, ``socket``,
    ``started``, ``pipes``, ``summary``)."""
    return json.loads(_emulations_json())


class Control:
    """A running emulation's control socket (see :func:`connect`)."""

    def __init__(
        self,
        target: Optional[str] = None,
        *,
        socket: Union[str, "os.PathLike[str]", None] = None,
        user: Optional[str] = None,
    ) -> None:
        self._client = _Client(target, None if socket is None else os.fspath(socket), user)

    @property
    def target(self) -> Optional[str]:
        """The emulation's name; ``None`` for pipelabd's socket."""
        return self._client.target

    @property
    def socket(self) -> str:
        """The control socket requests go to."""
        return os.fspath(self._client.socket)

    def list(self) -> List[dict]:
        """The running emulations (:func:`emulations`)."""
        return emulations()

    def send(self, commands: str) -> str:
        """Commands of the language (``pipe 1 config delay 50ms``), or a
        topology's (``link r0 r1 set delay 20ms``), one per line, applied
        all or nothing; the reply's text. A refusal raises
        :class:`pipelab.Error` with the emulation's message."""
        return self._client.exec(commands)

    def show(self) -> str:
        """The rules' listing (``pipelab show``; ``send("pipe show")``
        lists the pipes)."""
        return self._client.exec("show")

    def save(self) -> str:
        """The whole configuration as a script (``pipelab save -``)."""
        return self._client.save()

    def restore(self, script: str) -> str:
        """Replace the whole configuration with ``script`` (all or
        nothing, as ``pipelab restore FILE``)."""
        return self._client.restore(script)

    def stats(self) -> dict:
        """The counters, as ``pipelab stats --json`` prints them:
        ``emulation``, ``daemon``, ``config`` and ``plane`` (each pipe's
        ``arrivals``, ``departures``, ``drops``, ...)."""
        return json.loads(self._client.stats_json())

    def __repr__(self) -> str:
        if self.target is not None:
            return f"Control(target={self.target!r})"
        return f"Control(socket={self.socket!r})"


def connect(
    target: Optional[str] = None,
    *,
    socket: Union[str, "os.PathLike[str]", None] = None,
    user: Optional[str] = None,
) -> Control:
    """A :class:`Control` of the emulation named ``target`` (as ``pipelab
    --target NAME``; an unknown name raises :class:`pipelab.Error` at
    once), of the control socket ``socket``, or, with neither, of
    pipelabd. ``user`` (root only) acts in that user's block."""
    return Control(target, socket=socket, user=user)
