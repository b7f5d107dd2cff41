"""pipelab.sim: the report of ``pipelab sim --json``, in process.

No root needed: virtual time only. The CLI (``$PIPELAB_BIN``, else the
repository's debug build) is the reference the reports are compared with.
"""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import pipelab

LOSSY = """\
pipe 1 config bw 4Mbit/s delay 10ms plr 0.05
pipe 2 config bw 1Mbit/s delay 30ms 5ms distribution normal
add 100 pipe 1 ip from 10.0.0.1 to any
add 200 pipe 2 ip from any to any
"""

LOSSY_TRAFFIC = [
    "poisson rate 300pps size 1000B duration 3s from 10.0.0.1:1000 to 10.0.0.2:2000 name a",
    "cbr rate 800Kbit/s size 500B duration 3s from 10.0.0.3:1000 to 10.0.0.2:2000 name b",
]


def demo_paths(root: Path):
    return root / "examples" / "two-links.conf", root / "examples" / "two-links.traffic"


def test_demo_equals_cli_json(root, cli):
    """The bundled demo (README's Quick start) from Python is the dict
    `pipelab sim --json` prints, field for field."""
    conf, traffic = demo_paths(root)
    p = cli("sim", str(conf), "--traffic-file", str(traffic), "--json")
    assert p.returncode == 0, p.stderr
    assert pipelab.sim(conf, traffic) == json.loads(p.stdout)


def test_demo_json_text_is_byte_identical(root, cli):
    """The JSON text is the CLI's byte for byte (one serializer), and the
    same as `pipelab demo --json`; the demo's figures are the paper's
    setting: 1500 B over 2 Mbit/s plus 3 ms is 9 ms, the 400 Kbit/s
    upload gets the 256 Kbit/s link."""
    conf, traffic = demo_paths(root)
    text = pipelab.sim_json(conf, traffic) + "\n"
    assert text == cli("sim", str(conf), "--traffic-file", str(traffic), "--json").stdout
    assert text == cli("demo", "--json").stdout
    flows = {f["name"]: f for f in json.loads(text)["flows"]}
    assert flows["download"]["delay_ms"]["min"] == 9.0
    assert flows["download"]["received"] == 1250
    assert flows["upload"]["throughput_bps"] == 256000.0
    assert flows["upload"]["sent"] == 500 and flows["upload"]["drops"]["queue"] == 161


def test_exact_numbers_of_a_link():
    """1 Mbit/s of 1000-byte packets for 5 s over 2 Mbit/s and 20 ms:
    625 packets, each 20 ms + 4 ms of transmission, none queued."""
    conf = "pipe 1 config bw 2Mbit/s delay 20ms\nadd 100 pipe 1 ip from any to any\n"
    r = pipelab.sim(conf, ["cbr rate 1Mbit/s size 1000B duration 5s"])
    (flow,) = r["flows"]
    assert (flow["sent"], flow["received"], flow["lost"]) == (625, 625, 0)
    assert flow["delay_ms"]["min"] == flow["delay_ms"]["max"] == 24.0
    assert r["pipes"][0]["max_backlog"] == 1
    assert r["rules"][0] == {"number": 100, "packets": 625, "bytes": 625000, "rule": "pipe 1 ip from any to any"}


def test_same_seed_same_dict():
    """Random loss, Poisson arrivals and normal jitter: one seed, one
    report, every time."""
    a = pipelab.sim(LOSSY, LOSSY_TRAFFIC, seed=7)
    b = pipelab.sim(LOSSY, LOSSY_TRAFFIC, seed=7)
    assert a == b
    assert a["seed"] == 7
    # plr 0.05: about 5 % of flow a's packets lost on pipe 1.
    loss = a["flows"][0]["drops"]["loss"] / a["flows"][0]["sent"]
    assert 0.02 < loss < 0.08, loss


def test_different_seed_different_dict():
    """Another seed draws other losses and other arrivals."""
    a = pipelab.sim(LOSSY, LOSSY_TRAFFIC, seed=7)
    b = pipelab.sim(LOSSY, LOSSY_TRAFFIC, seed=8)
    assert a != b
    assert a["flows"][0]["sent"] != b["flows"][0]["sent"]
    assert a["flows"][0]["drops"]["loss"] != b["flows"][0]["drops"]["loss"]


def test_seed_equals_cli_seed(cli, tmp_path):
    """`seed=N` is `--seed N`: the same report as the CLI's."""
    conf = tmp_path / "lossy.conf"
    conf.write_text(LOSSY)
    args = ["sim", str(conf), "--seed", "42", "--json"]
    for t in LOSSY_TRAFFIC:
        args += ["--traffic", t]
    p = cli(*args)
    assert p.returncode == 0, p.stderr
    assert pipelab.sim(LOSSY, LOSSY_TRAFFIC, seed=42) == json.loads(p.stdout)


def test_workers_do_not_change_the_report():
    """Two or three workers run partitions of the pipes in step: the
    report is the one of one worker (the run is deterministic in K)."""
    one = pipelab.sim(LOSSY, LOSSY_TRAFFIC, seed=3, workers=1)
    assert pipelab.sim(LOSSY, LOSSY_TRAFFIC, seed=3, workers=2) == one
    assert pipelab.sim(LOSSY, LOSSY_TRAFFIC, seed=3, workers=3) == one


def test_traffic_list_equals_traffic_text():
    """Specs one per element, or a traffic file's text (comments, blank
    lines): the same sources, the same report."""
    text = "# two sources\n\n" + LOSSY_TRAFFIC[0] + "   # the lossy one\n  " + LOSSY_TRAFFIC[1] + "\n"
    assert pipelab.sim(LOSSY, text, seed=5) == pipelab.sim(LOSSY, LOSSY_TRAFFIC, seed=5)
    assert pipelab.sim(LOSSY, tuple(LOSSY_TRAFFIC), seed=5) == pipelab.sim(LOSSY, LOSSY_TRAFFIC, seed=5)


def test_config_path_reads_files_relative_to_it(root, cli):
    """A configuration given by path reads the files its pipes name
    relative to it (the cellular trace), as the CLI does."""
    conf = root / "examples" / "cellular.conf"
    spec = "cbr rate 12Mbit/s size 1500B duration 2s name video"
    p = cli("sim", str(conf), "--traffic", spec, "--json")
    assert p.returncode == 0, p.stderr
    r = pipelab.sim(conf, [spec])
    assert r == json.loads(p.stdout)
    # The trace, not the 12 Mbit/s offered, sets the rate.
    assert r["flows"][0]["throughput_bps"] < 11.5e6


def test_interval_adds_series():
    """interval='500ms' cuts 2 s of traffic into five intervals of
    500 ms: 1 Mbit/s of 1000-byte packets is 62 or 63 packets each, all
    sent by 2 s; the totals are those of the run without series."""
    conf = "pipe 1 config bw 2Mbit/s delay 20ms\nadd 100 pipe 1 ip from any to any\n"
    spec = ["cbr rate 1Mbit/s size 1000B duration 2s"]
    r = pipelab.sim(conf, spec, interval="500ms")
    plain = pipelab.sim(conf, spec)
    assert r["interval_s"] == 0.5 and "interval_s" not in plain
    series = r["pipes"][0]["timeseries"]
    assert [s["t_s"] for s in series] == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert [s["arrivals"] for s in series] == [63, 62, 63, 62, 0]
    assert sum(s["departures"] for s in series) == plain["pipes"][0]["departures"] == 250
    assert r["flows"][0]["received"] == plain["flows"][0]["received"]


def test_config_error_names_its_line():
    """An error in the configuration: pipelab.Error with the rendered
    error (file name, line, column, caret) and `line`/`column`."""
    conf = "pipe 1 config bw 2Mbit/s\npipe 2 config bw 10Mbps\n"
    with pytest.raises(pipelab.Error) as e:
        pipelab.sim(conf, ["cbr rate 1Mbit/s size 1000B duration 1s"])
    msg = str(e.value)
    assert "unknown unit 'Mbps' in '10Mbps'" in msg
    assert "--> config:2:18" in msg and "^^^^^^" in msg
    assert msg.endswith("1 error in config; nothing was applied")
    assert (e.value.line, e.value.column) == (2, 18)


def test_config_file_error_names_the_file(tmp_path):
    """Given by path, the file's name is in the error."""
    conf = tmp_path / "bad.conf"
    conf.write_text("# first line\n\nadd 100 pipe 1 ip frm any to any\n")
    with pytest.raises(pipelab.Error) as e:
        pipelab.sim(conf, ["cbr rate 1Mbit/s size 1000B duration 1s"])
    assert f"--> {conf}:3:" in str(e.value)
    assert e.value.line == 3


def test_traffic_error_names_the_spec():
    """The second spec is bad: `traffic[1]`, its column, a caret."""
    specs = ["cbr rate 1Mbit/s size 1000B duration 1s", "cbr rate 1Mbit/s size 1XB duration 1s"]
    with pytest.raises(pipelab.Error) as e:
        pipelab.sim("pipe 1 config bw 1Mbit/s\n", specs)
    assert "--> traffic[1]:1:23" in str(e.value)
    assert "unknown unit 'XB'" in str(e.value)
    assert (e.value.line, e.value.column) == (1, 23)


def test_traffic_text_error_names_the_line():
    """In a traffic file's text, the line and the column in it (the
    indentation counted)."""
    text = "# sources\ncbr rate 1Mbit/s size 1000B duration 1s\n  poison rate 5pps size 64B duration 1s\n"
    with pytest.raises(pipelab.Error) as e:
        pipelab.sim("pipe 1 config bw 1Mbit/s\n", text)
    assert "--> traffic:3:3" in str(e.value)
    assert (e.value.line, e.value.column) == (3, 3)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"traffic": []}, "no traffic"),
        ({"workers": 0}, "workers: give an integer from 1"),
        ({"seed": -1}, "seed: give an integer from 0"),
        ({"seed": "7"}, "seed: give an integer"),
        ({"interval": "5 parsecs"}, "interval '5 parsecs'"),
        ({"traffic": [3]}, "traffic[0]: a spec is a str, not int"),
        ({"config": 12}, "config: give the configuration's text"),
    ],
)
def test_bad_arguments_raise_pipelab_error(kwargs, words):
    """Bad arguments: pipelab.Error saying which, never a crash."""
    args = {"config": "pipe 1 config bw 1Mbit/s\n", "traffic": ["cbr rate 1Mbit/s size 1000B duration 1s"]}
    args.update(kwargs)
    with pytest.raises(pipelab.Error) as e:
        pipelab.sim(**args)
    assert words in str(e.value)


def test_missing_config_file_raises(tmp_path):
    """A configuration path that does not exist names the path."""
    missing = tmp_path / "nope.conf"
    with pytest.raises(pipelab.Error, match="cannot read configuration .*nope.conf"):
        pipelab.sim(missing, ["cbr rate 1Mbit/s size 1000B duration 1s"])


def _sim_in_child(config: str, traffic: str, cwd: Path) -> subprocess.CompletedProcess:
    """``pipelab.sim(Path(config), Path(traffic))`` in a child interpreter
    bounded to 20 s, so that a read that blocks or never ends fails the
    test instead of hanging it: its stdout is the error's message. It
    runs in ``cwd`` (not python/, whose pipelab/ has no extension)."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "import pipelab\n"
        "try:\n"
        "    pipelab.sim(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "except pipelab.Error as e:\n"
        "    print(e)\n"
        "    sys.exit(3)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, config, traffic],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=cwd,
    )


@pytest.mark.parametrize("which", ["configuration", "traffic file"])
@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_special_files_are_refused_at_once(tmp_path, which, kind):
    """A configuration or traffic file that is /dev/zero or a FIFO is
    refused at once by the CLI's reader, naming it: /dev/zero was read
    without limit (until memory ran out), a FIFO blocked forever."""
    special = kind
    if kind == "fifo":
        special = str(tmp_path / "fifo")
        os.mkfifo(special)
    conf = tmp_path / "a.conf"
    conf.write_text("pipe 1 config bw 1Mbit/s\nadd 100 pipe 1 ip from any to any\n")
    traffic = tmp_path / "a.traffic"
    traffic.write_text("cbr rate 10pps size 100B duration 1s\n")
    args = (special, str(traffic)) if which == "configuration" else (str(conf), special)
    t = time.monotonic()
    p = _sim_in_child(*args, cwd=tmp_path)
    assert time.monotonic() - t < 10
    assert p.returncode == 3, p.stderr
    what = "a character device" if kind == "/dev/zero" else "a FIFO"
    assert p.stdout.strip() == f"error: cannot read {which} '{special}': {what}, not a regular file"


def test_a_file_over_the_cap_is_refused_before_it_is_read(tmp_path):
    """A configuration file over the CLI's 64 MiB cap is refused by its
    size, as the CLI refuses it (a sparse file: nothing is written)."""
    big = tmp_path / "big.conf"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)
    with pytest.raises(pipelab.Error) as e:
        pipelab.sim(big, ["cbr rate 10pps size 100B duration 1s"])
    assert str(e.value) == (
        f"error: cannot read configuration '{big}': 67108865 bytes, more than the limit of 67108864 bytes (64 MiB)"
    )


def test_a_file_not_utf8_is_refused_at_its_byte(tmp_path):
    """A configuration file that is not UTF-8 is refused at its first bad
    byte, with its line and column, as the CLI refuses it."""
    bad = tmp_path / "bad.conf"
    bad.write_bytes(b"pipe 1 config bw 1Mbit/s\nadd 100 \xff pipe 1\n")
    with pytest.raises(pipelab.Error) as e:
        pipelab.sim(bad, ["cbr rate 10pps size 100B duration 1s"])
    assert "invalid UTF-8 at line 2, column 9 (byte 33)" in str(e.value)
    assert (e.value.line, e.value.column) == (2, 9)


def test_a_file_of_another_kind_is_not_quoted(tmp_path):
    """A file that does not start as a configuration does (a line of
    another kind of file, a secret) is refused at its bad byte with
    nothing of it quoted, as the CLI refuses it."""
    other = tmp_path / "other"
    other.write_bytes(b"root:s3cret-hash:19000:0:99999:7:::\n\xff\n")
    with pytest.raises(pipelab.Error) as e:
        pipelab.sim(other, ["cbr rate 10pps size 100B duration 1s"])
    assert "invalid UTF-8 at line 2, column 1" in str(e.value)
    assert "s3cret" not in str(e.value)


def test_error_is_an_exception_subclass():
    """pipelab.Error is an Exception (not a BaseException only)."""
    assert issubclass(pipelab.Error, Exception)


def test_simulation_releases_the_interpreter():
    """While a simulation runs, another Python thread keeps running: the
    interpreter's lock is released. A thread counts as fast as it can;
    its rate during simulations of 400 000 packets each, run one after
    another for half a second at least (one took 0.13 s on an AMD EPYC),
    is compared with its rate while the main thread sleeps (a lock held
    through the runs leaves it a few per cent, the slices between the
    calls; released, it keeps most of its rate, less what the simulation
    takes of the CPUs)."""
    conf = "pipe 1 config bw 100Mbit/s delay 5ms\nadd 100 pipe 1 ip from any to any\n"
    spec = ["poisson rate 40kpps size 100B duration 10s"]
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    th = threading.Thread(target=spin)
    th.start()
    try:
        time.sleep(0.05)
        c, t = count[0], time.monotonic()
        time.sleep(0.3)
        idle = (count[0] - c) / (time.monotonic() - t)
        c, t = count[0], time.monotonic()
        runs = 0
        while time.monotonic() - t < 0.5:
            pipelab.sim(conf, spec)
            runs += 1
        took = time.monotonic() - t
        during = (count[0] - c) / took
    finally:
        stop.set()
        th.join()
    assert during > 0.15 * idle, (
        f"{during:.0f}/s during {runs} runs ({took:.3f} s), {idle:.0f}/s before"
    )
