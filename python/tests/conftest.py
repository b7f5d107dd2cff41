"""Shared by the package's tests: the repository, the pipelab binary and
the live tests' guard.

The binary is ``$PIPELAB_BIN``, else the repository's debug build
(``cargo build -p pipelab``, which ``python/run-tests`` runs first): the
CLI is what :func:`pipelab.sim` is compared with, and what topologies
drive.
"""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_debug = ROOT / "target" / "debug" / "pipelab"
if not os.environ.get("PIPELAB_BIN") and _debug.is_file():
    os.environ["PIPELAB_BIN"] = str(_debug)


@pytest.fixture
def root() -> Path:
    """The repository (its examples/ are the tests' inputs)."""
    return ROOT


@pytest.fixture
def cli():
    """Run ``pipelab ARGS``: the completed process (text)."""

    def run(*args: str) -> subprocess.CompletedProcess:
        import pipelab

        return subprocess.run([pipelab.binary(), *args], capture_output=True, text=True, cwd=ROOT)

    return run


@pytest.fixture
def live():
    """The guard of the tests that need root (network namespaces, TAPs,
    veths): without root they are skipped with the reason, unless
    PIPELAB_LIVE=1 (CI) asks for them, which makes a missing root a
    failure rather than a silent pass."""
    if os.geteuid() != 0:
        if os.environ.get("PIPELAB_LIVE") == "1":
            pytest.fail(
                "live tests need root (CAP_NET_ADMIN, CAP_NET_RAW): PIPELAB_LIVE=1 asks for them; run as root"
            )
        pytest.skip("live: needs root (CAP_NET_ADMIN, CAP_NET_RAW); run as root or with PIPELAB_LIVE=1")
