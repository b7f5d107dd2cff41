//! The hostile suite of topologies and their commands, through the real
//! `pipelab` (and the topology command grammar's library where the binary
//! needs a running topology to get there):
//!
//! * GML and TOML topology files (`pipelab topo distill`): unknown nodes,
//!   self-loops, missing endpoints, negative, huge, NaN and infinite
//!   attributes, bad units, duplicate links and nodes, broken syntax,
//!   nesting 10,000 deep;
//! * control lines (`pipelab topo link|node|cross`, checked before they
//!   are sent): bad actions, units, ranges, duplicates, missing values;
//! * experiment files (`pipelab topo run`, read whole before anything
//!   runs): bad times, `every` lines whose period is 0, that end before
//!   they start or expand to more than a million steps, commands that do
//!   not belong in a script, a bad line among good ones (its line named),
//!   a script of 200,000 lines;
//! * names resolved against a topology (`TopoCommand::resolve` and
//!   `Resolved::run`, as the running emulator does): unknown nodes and
//!   VNs, a demand to itself, links that do not exist, self-links.
//!
//! Every case is bounded in time and none may panic. `case_count` counts
//! the cases (docs/HOSTILE.md).

mod hostile;

use hostile::{all_pass, pipelab, tally, verdict, Outcome, BOUND};
use pipelab_topo::command::execute;
use pipelab_topo::{parse_gml, Metric, Mode, Network};
use std::time::Instant;
use Outcome::{Accepted, Rejected};

/// (case, file suffix, the topology's text, outcome of `pipelab topo
/// distill FILE`)
const FILES: &[(&str, &str, &str, Outcome)] = &[
    (
        "an unknown role",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"gateway\" name \"r\" ]\n  edge [ source 0 target 1 ]\n]\n",
        Rejected(
            2,
            "error: FILE: line 3: field `role`: unknown role \"gateway\" (client, stub or transit)",
        ),
    ),
    (
        "a router, the other name of a stub",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"router\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 ]\n  edge [ source 2 target 1 ]\n]\n",
        Accepted("nodes: 3 (2 VNs), links: 2\npipes: 4 (2 bidirectional)\nroutes: 2 (0 unreachable)"),
    ),
    (
        "a valid GML topology",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Accepted("routes: 2 (0 unreachable)"),
    ),
    (
        "an edge to an unknown node",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 9 ]\n]\n",
        Rejected(2, "error: FILE: line 7: field `target`: no node with id 9"),
    ),
    (
        "a self-loop",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 1 ]\n]\n",
        Rejected(2, "error: FILE: line 7: field `target`: edge is a loop on node 1"),
    ),
    (
        "an edge without a source",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ target 1 delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 7: field `source`: edge has no source"),
    ),
    (
        "an edge without a target",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 7: field `target`: edge has no target"),
    ),
    (
        "a negative bandwidth",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth -10000 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `bandwidth`: negative value '-10000' is not allowed"),
    ),
    (
        "a negative delay",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 delay -5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `delay`: negative value '-5' is not allowed"),
    ),
    (
        "a delay above an hour",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 delay 3600001 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `delay`: invalid delay '3600001': 3600001ms is more than the maximum 3600s"),
    ),
    (
        "a huge bandwidth",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth 1e40 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `bandwidth`: value '10000000000000000000000000000000000000000' is too large"),
    ),
    (
        "a loss above 1",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 loss 1.5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `loss`: probability '1.5' is outside 0..1: a loss rate is a probability (0.01) or a percentage (1.5%)"),
    ),
    (
        "a negative loss",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 loss -0.1 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `loss`: negative value '-0.1' is not allowed"),
    ),
    (
        "NaN as a loss",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 loss NaN ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `loss`: expected a value, found key `NaN`"),
    ),
    (
        "a queue of 0",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 queue 0 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `queue`: invalid queue '0': a queue must hold at least one packet"),
    ),
    (
        "a bandwidth in Mbps",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbps\" ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `bandwidth`: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"),
    ),
    (
        "a delay in sec",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 delay \"5seconds\" ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `delay`: unknown unit 'seconds' in '5seconds': did you mean s?"),
    ),
    (
        "a value with a space",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10 Mbit/s\" ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `bandwidth`: space in '10 Mbit/s': write the value as one word: 10Mbit/s"),
    ),
    (
        "a duplicate link",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Accepted("routes: 2 (0 unreachable)"),
    ),
    (
        "a duplicate node id",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  node [ id 1 role \"stub\" name \"r2\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `id`: node id 1 already used on line 3"),
    ),
    (
        "a node id beyond u64",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  node [ id 99999999999999999999 role \"stub\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `id`: expected a non-negative integer id"),
    ),
    (
        "a negative node id",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  node [ id -1 role \"stub\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `id`: expected a non-negative integer id"),
    ),
    (
        "a node without an id",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  node [ role \"stub\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 5: field `id`: node has no id"),
    ),
    (
        "an unclosed bracket",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n",
        Rejected(2, "error: FILE: line 6: missing `]` at end of input"),
    ),
    (
        "an extra closing bracket",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n]\n",
        Rejected(2, "error: FILE: line 8: `]` without a matching `[`"),
    ),
    (
        "an unterminated string",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Rejected(2, "error: FILE: line 6: unterminated string"),
    ),
    (
        "no nodes",
        "gml",
        "graph [\n]\n",
        Accepted("routes: 0 (0 unreachable)"),
    ),
    (
        "not GML at all",
        "gml",
        "hello world\n",
        Rejected(2, "error: FILE: line 1: not a GML topology (`graph [ ... ]`); the line is not shown"),
    ),
    (
        "a disconnected client",
        "gml",
        "graph [\n  node [ id 0 role \"client\" name \"a\" ]\n  node [ id 1 role \"stub\" name \"r\" ]\n  node [ id 2 role \"client\" name \"b\" ]\n  node [ id 3 role \"client\" name \"c\" ]\n  edge [ source 0 target 1 bandwidth \"10Mbit/s\" delay 5 ]\n  edge [ source 1 target 2 bandwidth \"10Mbit/s\" delay 5 ]\n]\n",
        Accepted("routes: 2 (4 unreachable)"),
    ),
    (
        "graph nested 10000 deep",
        "gml",
        "graph [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ x [ ]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] ]\n",
        Rejected(2, "error: FILE: line 1: lists nested more than 64 deep"),
    ),
    (
        "a valid TOML topology",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Accepted("routes: 2 (0 unreachable)"),
    ),
    (
        "a link to an unknown node",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n[[link]]\na = 1\nb = 9\n\n",
        Rejected(2, "error: FILE: link 3 (between 1 and 9): field `b`: no node with id 9"),
    ),
    (
        "a self-loop",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n[[link]]\na = 1\nb = 1\n\n",
        Rejected(2, "error: FILE: link 3 (between 1 and 1): field `b`: a link cannot join a node to itself"),
    ),
    (
        "a link without b",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n[[link]]\na = 1\n\n",
        Rejected(2, "error: FILE: line 26: link 3: field `b`: missing (a link joins two nodes: a = ID, b = ID)"),
    ),
    (
        "a negative bandwidth",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nbw = -5\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Rejected(2, "error: FILE: line 16: link 1 (between 0 and 1): field `bw`: negative value '-5' is not allowed"),
    ),
    (
        "a bandwidth in Mbps",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nbw = \"10Mbps\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Rejected(2, "error: FILE: line 16: link 1 (between 0 and 1): field `bw`: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)"),
    ),
    (
        "a delay in msec",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\ndelay = \"5millisecond\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Rejected(2, "error: FILE: line 16: link 1 (between 0 and 1): field `delay`: unknown unit 'millisecond' in '5millisecond': did you mean ms?"),
    ),
    (
        "a huge delay",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\ndelay = 1e300\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Rejected(2, "error: FILE: line 16: link 1 (between 0 and 1): field `delay`: value '1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000' is too large"),
    ),
    (
        "NaN as a loss",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nloss = nan\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Rejected(2, "error: FILE: line 16: link 1 (between 0 and 1): field `loss`: invalid probability 'NaN': write a number between 0 and 1, or a percentage like 5%"),
    ),
    (
        "inf as a bandwidth",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nbw = inf\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Rejected(2, "error: FILE: line 16: link 1 (between 0 and 1): field `bw`: invalid rate 'inf': rates are written like 10Mbit/s"),
    ),
    (
        "a loss above 100%",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nloss = \"150%\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Rejected(2, "error: FILE: line 16: link 1 (between 0 and 1): field `loss`: probability '150%' is outside 0..1"),
    ),
    (
        "a queue of 0 bytes",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nqueue = \"0B\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Rejected(2, "error: FILE: line 16: link 1 (between 0 and 1): field `queue`: invalid queue '0B': a queue must hold at least one packet"),
    ),
    (
        "a duplicate link",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n[[link]]\na = 0\nb = 1\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Accepted("routes: 2 (0 unreachable)"),
    ),
    (
        "an unknown key",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = 2\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nbandwith = \"1Mbit/s\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Rejected(2, "error: FILE: line 16: link 1 (between 0 and 1): field `bandwith`: unknown link attribute 'bandwith' (did you mean bandwidth?)"),
    ),
    (
        "a node id of the wrong type",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = \"two\"\nrole = \"client\"\n\n[[link]]\na = 0\nb = 1\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n[[link]]\na = 1\nb = 2\nbw = \"10Mbit/s\"\ndelay = \"5ms\"\n\n",
        Rejected(2, "error: FILE: TOML parse error at line 10, column 6\u{2026}invalid type: string \"two\", expected u64"),
    ),
    (
        "a negative node id",
        "toml",
        "[[node]]\nid = 0\nrole = \"client\"\n\n[[node]]\nid = 1\nrole = \"stub\"\n\n[[node]]\nid = -2\nrole = \"client\"\n\n",
        Rejected(2, "error: FILE: TOML parse error at line 10, column 6\u{2026}invalid value: integer `-2`, expected u64"),
    ),
    (
        "not TOML at all",
        "toml",
        "graph [ node [ id 0 ] ]\n",
        Rejected(2, "error: FILE: line 1: expected `.`, `=`"),
    ),
    (
        "an empty table array",
        "toml",
        "[[node]]\n",
        Rejected(2, "error: FILE: line 1: missing field `id`"),
    ),
];

/// Each topology file of [`FILES`].
#[test]
fn topology_files_are_refused_naming_the_fault_or_distilled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    for (i, (case, suffix, text, want)) in FILES.iter().enumerate() {
        let f = dir.path().join(format!("t{i}.{suffix}"));
        std::fs::write(&f, text).expect("write");
        let name = f.display().to_string();
        let ran = pipelab(&["topo", "distill", &name]);
        if let Err(e) = verdict(&ran, *want, &name, BOUND) {
            failures.push(format!("{case} ({suffix}): {e}"));
        }
    }
    all_pass(failures, FILES.len());
}

/// (case, the words after `pipelab topo`, outcome): each is a command to
/// a topology that is not running, so a command that parses is refused
/// for that, after it was checked.
const LINES: &[(&str, &[&str], Outcome)] = &[
    (
        "a negative value without --: the argument parser says how to pass it",
        &["link", "--name", "plnone", "r0", "r1", "set", "delay", "-5ms"],
        Rejected(
            2,
            "error: unexpected argument '-5' found\n\n  tip: to pass '-5' as a value, use '-- -5'",
        ),
    ),
    (
        "--name after the attributes (checked, then refused for the topology)",
        &["link", "r0", "r1", "set", "delay", "5ms", "--name", "plnone"],
        Rejected(
            2,
            "error: topology 'plnone' is not running (no running emulation is named 'plnone'",
        ),
    ),
    (
        "a unit apart from its number",
        &["link", "--name", "plnone", "r0", "r1", "set", "delay", "5", "ms"],
        Rejected(
            2,
            "error: space in '5 ms': write the value as one word: 5ms\n  link r0 r1 set delay 5 ms\n                       ^",
        ),
    ),
    (
        "an attribute written key=value with a bad unit",
        &["link", "--name", "plnone", "r0", "r1", "set", "bw=10Mbps"],
        Rejected(
            2,
            "error: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)\n  link r0 r1 set bw=10Mbps\n                    ^",
        ),
    ),
    (
        "an unknown link action",
        &["link", "--name", "plnone", "r0", "r1", "sideways"],
        Rejected(2, "error: unknown link action 'sideways': expected 'down', 'up' or 'set ATTR VALUE...'\n  link r0 r1 sideways\n             ^"),
    ),
    (
        "set without attributes",
        &["link", "--name", "plnone", "r0", "r1", "set"],
        Rejected(2, "error: missing link attribute: e.g. bw 10Mbit/s delay 20ms loss 1% queue 50 codel (any of bw, delay, loss, queue, or a pipe word)\n  link r0 r1 set\n                ^"),
    ),
    (
        "a bandwidth in Mbps",
        &["link", "--name", "plnone", "r0", "r1", "set", "bw", "10Mbps"],
        Rejected(2, "error: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)\n  link r0 r1 set bw 10Mbps\n                    ^"),
    ),
    (
        "a negative delay (after --)",
        &["link", "--name", "plnone", "r0", "r1", "set", "delay", "--", "-5ms"],
        Rejected(2, "error: negative value '-5ms' is not allowed\n  link r0 r1 set delay -5ms\n                       ^"),
    ),
    (
        "a delay above an hour",
        &["link", "--name", "plnone", "r0", "r1", "set", "delay", "2h"],
        Rejected(2, "error: unknown unit 'h' in '2h': hours are written in seconds, e.g. 3600s\n  link r0 r1 set delay 2h\n                       ^"),
    ),
    (
        "a loss of 2",
        &["link", "--name", "plnone", "r0", "r1", "set", "loss", "2"],
        Rejected(2, "error: probability '2' is outside 0..1: a loss rate is a probability (0.01) or a percentage (2%)\n  link r0 r1 set loss 2\n                      ^"),
    ),
    (
        "NaN as a loss",
        &["link", "--name", "plnone", "r0", "r1", "set", "loss", "NaN"],
        Rejected(2, "error: invalid probability 'NaN': write a number between 0 and 1, or a percentage like 5%\n  link r0 r1 set loss NaN\n                      ^"),
    ),
    (
        "a queue of 0",
        &["link", "--name", "plnone", "r0", "r1", "set", "queue", "0"],
        Rejected(2, "error: invalid queue '0': a queue must hold at least one packet\n  link r0 r1 set queue 0\n                       ^"),
    ),
    (
        "a huge bandwidth",
        &["link", "--name", "plnone", "r0", "r1", "set", "bw", "1e30Gbit/s"],
        Rejected(2, "error: value '1e30Gbit/s' is too large\n  link r0 r1 set bw 1e30Gbit/s\n                    ^"),
    ),
    (
        "an attribute twice",
        &["link", "--name", "plnone", "r0", "r1", "set", "bw", "1Mbit/s", "bw", "2Mbit/s"],
        Rejected(2, "error: duplicate attribute 'bw': 'bw' was already given at column 16\n  link r0 r1 set bw 1Mbit/s bw 2Mbit/s\n                            ^"),
    ),
    (
        "an unknown attribute",
        &["link", "--name", "plnone", "r0", "r1", "set", "jiter", "5ms"],
        Rejected(2, "error: unknown link attribute 'jiter' (did you mean jitter?)\n  link r0 r1 set jiter 5ms\n                 ^"),
    ),
    (
        "a range outside every",
        &["link", "--name", "plnone", "r0", "r1", "set", "delay", "5ms..50ms"],
        Rejected(2, "error: a range '5ms..50ms' is only for `every` lines: e.g. every 2s until 30s link A B set delay 5ms..50ms\n  link r0 r1 set delay 5ms..50ms\n                       ^"),
    ),
    (
        "an attribute without its value",
        &["link", "--name", "plnone", "r0", "r1", "set", "delay"],
        Rejected(2, "error: missing value after 'delay': e.g. delay 20ms\n  link r0 r1 set delay\n                      ^"),
    ),
    (
        "a node state that is neither",
        &["node", "--name", "plnone", "r0", "sideways"],
        Rejected(2, "error: expected `node N down|up`, found 'sideways'\n  node r0 sideways\n          ^"),
    ),
    (
        "a demand without its rate",
        &["cross", "--name", "plnone", "a", "b"],
        Rejected(2, "error: expected `cross SRC DST RATE [SRC DST RATE ...]` or `cross clear`: missing the rate after 'b'\n  cross a b\n           ^"),
    ),
    (
        "a demand in Mbps",
        &["cross", "--name", "plnone", "a", "b", "10Mbps"],
        Rejected(2, "error: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)\n  cross a b 10Mbps\n            ^"),
    ),
    (
        "a negative demand (after --)",
        &["cross", "--name", "plnone", "--", "a", "b", "-1Mbit/s"],
        Rejected(2, "error: negative value '-1Mbit/s' is not allowed\n  cross a b -1Mbit/s\n            ^"),
    ),
    (
        "a negative zero (after --)",
        &["link", "--name", "plnone", "r0", "r1", "set", "--", "bw", "1Mbit/s", "delay", "-0ms"],
        Rejected(2, "error: negative value '-0ms' is not allowed\n  link r0 r1 set bw 1Mbit/s delay -0ms\n                                  ^"),
    ),
    (
        "a valid demand (refused only for the topology)",
        &["cross", "--name", "plnone", "vn1", "vn2", "1Mbit/s"],
        Rejected(2, "error: topology 'plnone' is not running (no running emulation is named 'plnone'"),
    ),
    (
        "keywords in capitals (refused only for the topology)",
        &["node", "--name", "plnone", "r0", "DOWN"],
        Rejected(2, "error: topology 'plnone' is not running (no running emulation is named 'plnone'"),
    ),
];

/// Each control line of [`LINES`].
#[test]
fn control_lines_are_refused_at_their_word() {
    let mut failures = Vec::new();
    for (case, words, want) in LINES {
        let ran = pipelab(&[&["topo"], *words].concat());
        if let Err(e) = verdict(&ran, *want, "", BOUND) {
            failures.push(format!("{case}: {e}"));
        }
    }
    all_pass(failures, LINES.len());
}

/// (case, the experiment file, outcome of `pipelab topo run --name
/// plnone FILE`): a file that parses is refused only because
/// the topology is not running.
const SCRIPTS: &[(&str, &str, Outcome)] = &[
    (
        "a time that is a word",
        "soon link r0 r1 down\n",
        Rejected(2, "error: FILE: line 1: invalid duration 'soon': durations are written like 20ms\n  1 | soon link r0 r1 down\n    | ^^^^"),
    ),
    (
        "a negative time",
        "-1s link r0 r1 down\n",
        Rejected(2, "error: FILE: line 1: negative value '-1s' is not allowed\n  1 | -1s link r0 r1 down\n    | ^^^"),
    ),
    (
        "a time in minutes",
        "1min link r0 r1 down\n",
        Rejected(2, "error: FILE: line 1: unknown unit 'min' in '1min': did you mean ms? (minutes are written in seconds, e.g. 60s)\n  1 | 1min link r0 r1 down\n    | ^^^^"),
    ),
    (
        "an unknown command",
        "1s reboot r0\n",
        Rejected(2, "error: FILE: line 1: unknown command `reboot`: experiment commands: exec, link, node, cross, every\n  1 | 1s reboot r0\n    |    ^^^^^^"),
    ),
    (
        "exec without a command",
        "1s exec vn1\n",
        Rejected(2, "error: FILE: line 1: expected `exec VN COMMAND...`\n  1 | 1s exec vn1\n    |            ^"),
    ),
    (
        "exec without a VN",
        "1s exec\n",
        Rejected(2, "error: FILE: line 1: expected `exec VN COMMAND...`\n  1 | 1s exec\n    |        ^"),
    ),
    (
        "every with a period of 0",
        "0s every 0s until 10s link r0 r1 set delay 5ms\n",
        Rejected(2, "error: FILE: line 1: the period must be positive\n  1 | 0s every 0s until 10s link r0 r1 set delay 5ms\n    |          ^^"),
    ),
    (
        "every until before its start",
        "10s every 1s until 5s link r0 r1 set delay 5ms\n",
        Rejected(2, "error: FILE: line 1: `until 5s` is before the start of the line (10s)\n  1 | 10s every 1s until 5s link r0 r1 set delay 5ms\n    |     ^^^^^"),
    ),
    (
        "every of more than a million steps",
        "0s every 1us until 10s link r0 r1 set delay 5ms..10ms\n",
        Rejected(2, "error: FILE: line 1: the file makes more than 1000000 steps: give `every` a longer period\n  1 | 0s every 1us until 10s link r0 r1 set delay 5ms..10ms\n    |    ^^^^^"),
    ),
    (
        "every without until",
        "0s every 1s link r0 r1 set delay 5ms\n",
        Rejected(2, "error: FILE: line 1: expected `every PERIOD until END link A B set ATTR VALUE|LO..HI ...`: found 'link' where 'until' goes\n  1 | 0s every 1s link r0 r1 set delay 5ms\n    |             ^^^^"),
    ),
    (
        "every of something other than link set",
        "0s every 1s until 5s node r0 down\n",
        Rejected(2, "error: FILE: line 1: expected `every PERIOD until END link A B set ATTR VALUE|LO..HI ...`: found 'node' where 'link' goes\n  1 | 0s every 1s until 5s node r0 down\n    |                      ^^^^"),
    ),
    (
        "a reversed range",
        "0s every 1s until 5s link r0 r1 set delay 50ms..5ms\n",
        Rejected(2, "error: FILE: line 1: empty range '50ms..5ms': write the low end first, e.g. 5ms..50ms\n  1 | 0s every 1s until 5s link r0 r1 set delay 50ms..5ms\n    |                                                 ^^^"),
    ),
    (
        "a range in a plain set",
        "0s link r0 r1 set delay 5ms..50ms\n",
        Rejected(2, "error: FILE: line 1: a range '5ms..50ms' is only for `every` lines: e.g. every 2s until 30s link A B set delay 5ms..50ms\n  1 | 0s link r0 r1 set delay 5ms..50ms\n    |                         ^^^^^^^^^"),
    ),
    (
        "status in a script",
        "0s status\n",
        Rejected(2, "error: FILE: line 1: unknown command `status`: experiment commands: exec, link, node, cross, every\n  1 | 0s status\n    |    ^^^^^^"),
    ),
    (
        "stop in a script",
        "0s stop\n",
        Rejected(2, "error: FILE: line 1: unknown command `stop`: experiment commands: exec, link, node, cross, every\n  1 | 0s stop\n    |    ^^^^"),
    ),
    (
        "a bad line among good ones",
        "0s link r0 r1 down\n1s link r0 r1 up\n2s link r0 r1 set bw 10Mbps\n3s node r0 down\n",
        Rejected(2, "error: FILE: line 3: unknown unit 'Mbps' in '10Mbps': did you mean Mbit/s or MByte/s? 'Mbps' is Mbit/s to ipfw, MByte/s to tc (netem's rate takes tc's words)\n  3 | 2s link r0 r1 set bw 10Mbps\n    |                      ^^^^^^"),
    ),
    (
        "a line without a time",
        "link r0 r1 down\n",
        Rejected(2, "error: FILE: line 1: invalid duration 'link': durations are written like 20ms\n  1 | link r0 r1 down\n    | ^^^^"),
    ),
    (
        "a time beyond u64 ns",
        "99999999999999999999s link r0 r1 down\n",
        Rejected(2, "error: FILE: line 1: value '99999999999999999999s' is too large\n  1 | 99999999999999999999s link r0 r1 down\n    | ^^^^^^^^^^^^^^^^^^^^^"),
    ),
    (
        "a valid script (refused only for the topology)",
        "# an experiment\n0s exec vn1 iperf3 -s -D\n1s link r0 r1 down\n2s node r0 up\n3s cross vn1 vn2 1Mbit/s\n4s cross clear\n5s every 1s until 10s link r0 r1 set delay 5ms..50ms bw 1Mbit/s..2Mbit/s\n",
        Rejected(2, "error: topology 'plnone' is not up"),
    ),
    (
        "an every reaching the largest time",
        "0s every 10000000000s until 18446744073s link r0 r1 set delay 5ms\n",
        Rejected(2, "error: topology 'plnone' is not up"),
    ),
    (
        "a period of a nanosecond for a second",
        "0s every 1ns until 1s link r0 r1 set delay 5ms\n",
        Rejected(2, "error: FILE: line 1: the file makes more than 1000000 steps: give `every` a longer period\n  1 | 0s every 1ns until 1s link r0 r1 set delay 5ms\n    |    ^^^^^"),
    ),
];

/// Each experiment file of [`SCRIPTS`], and a huge one.
#[test]
fn experiment_files_are_refused_at_their_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("experiment.txt");
    let name = f.display().to_string();
    let mut failures = Vec::new();
    for (case, text, want) in SCRIPTS {
        std::fs::write(&f, text).expect("write");
        let ran = pipelab(&["topo", "run", "--name", "plnone", &name]);
        if let Err(e) = verdict(&ran, *want, &name, BOUND) {
            failures.push(format!("{case}: {e}"));
        }
    }
    all_pass(failures, SCRIPTS.len());
}

/// 200,000 lines, the last one bad: read whole and refused at its line,
/// quickly.
#[test]
fn a_huge_experiment_file_is_read_whole_and_refused_at_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("huge.txt");
    let mut text = String::new();
    for i in 0..199_999 {
        text.push_str(&format!("{i}ms link r0 r1 set delay {}ms\n", i % 50 + 1));
    }
    text.push_str("200s link r0 r1 set delay 5parsecs\n");
    std::fs::write(&f, &text).expect("write");
    let name = f.display().to_string();
    let t0 = Instant::now();
    let ran = pipelab(&["topo", "run", "--name", "plnone", &name]);
    eprintln!("200,000-line experiment: refused in {:?}", t0.elapsed());
    if let Err(e) = verdict(
        &ran,
        Rejected(
            2,
            "error: FILE: line 200000: unknown unit 'parsecs' in '5parsecs'",
        ),
        &name,
        BOUND,
    ) {
        panic!("{e}");
    }
}

/// A small topology: VNs `a`, `b`, `c` on router `r`, router `s` behind
/// `r`, and `t` on its own (no links).
const NET: &str = r#"graph [
  node [ id 0 role "client" name "a" ]
  node [ id 1 role "stub" name "r" ]
  node [ id 2 role "client" name "b" ]
  node [ id 3 role "client" name "c" ]
  node [ id 4 role "stub" name "s" ]
  edge [ source 0 target 1 bandwidth "10Mbit/s" delay 1 ]
  edge [ source 2 target 1 bandwidth "10Mbit/s" delay 1 ]
  edge [ source 3 target 4 bandwidth "10Mbit/s" delay 1 ]
  edge [ source 4 target 1 bandwidth "10Mbit/s" delay 1 ]
]"#;

/// (case, command line, `Ok(())` or the error's text)
const RESOLVE: &[(&str, &str, Result<(), &str>)] = &[
    ("an unknown node", "link r r9 down", Err("no node 'r9'")),
    ("an unknown first end", "link r9 r down", Err("no node 'r9'")),
    ("an unknown node to fail", "node r9 down", Err("no node 'r9'")),
    ("an id no node has", "node 99 down", Err("no node '99'")),
    ("an id beyond 64 bits", "node 99999999999999999999 up", Err("no node '99999999999999999999'")),
    ("names are case-sensitive", "link A r down", Err("no node 'A'")),
    ("a demand from a router", "cross r a 1Mbit/s", Err("no VN 'r'")),
    ("a demand to a router", "cross a s 1Mbit/s", Err("no VN 's'")),
    ("a demand to itself", "cross a a 1Mbit/s", Err("demand from 'a' to itself")),
    ("a demand to nobody", "cross a nobody 1Mbit/s", Err("no VN 'nobody'")),
    ("a bad second demand", "cross a b 1Mbit/s c nobody 1Mbit/s", Err("no VN 'nobody'")),
    ("a link that does not exist", "link a b down", Err("no link between 'a' and 'b'")),
    ("a self-link", "link r r down", Err("'r' and 'r' are one node: a link joins two nodes")),
    ("a self-link, by name and by id", "link a 0 set delay 5ms", Err("'a' and '0' are one node: a link joins two nodes")),
    ("every sent as a command", "every 1s until 5s link a r set delay 5ms", Err("'every' repeats a change in an experiment file (pipelab topo run); send `link A B set ...` for one change")),
    ("a node by id", "link 0 1 down", Ok(())),
    ("a link changed by name", "link a r set delay 5ms bw 1Mbit/s", Ok(())),
    ("a demand between VNs", "cross a c 2Mbit/s", Ok(())),
    ("cross clear", "cross clear", Ok(())),
    ("a router down, every route through it cut", "node r down", Ok(())),
    ("a link up that is up", "link a r up", Ok(())),
];

/// Each command of [`RESOLVE`] against [`NET`], as the running
/// emulator's control socket runs it: parsed, its names resolved, run.
#[test]
fn names_are_resolved_against_the_topology() {
    let topo = parse_gml(NET).expect("the test topology");
    let mut failures = Vec::new();
    for (case, line, want) in RESOLVE {
        let mut net = Network::new(topo.clone(), Mode::HopByHop, Metric::Delay).expect("network");
        let mut cross = Vec::new();
        let got = execute(line, &mut net, &mut cross).map(|_| ());
        let ok = match (&got, want) {
            (Ok(()), Ok(())) => true,
            (Err(g), Err(w)) => g == w,
            _ => false,
        };
        if !ok {
            failures.push(format!("{case}: {line}: want {want:?}, got {got:?}"));
        }
    }
    all_pass(failures, RESOLVE.len());
}

/// The count of this file's cases (docs/HOSTILE.md).
#[test]
fn case_count() {
    let rejected = |o: &Outcome| o.is_checked_rejection();
    let cases = FILES.len() + LINES.len() + SCRIPTS.len() + 1 + RESOLVE.len();
    let rejections = FILES.iter().filter(|c| rejected(&c.3)).count()
        + LINES.iter().filter(|c| rejected(&c.2)).count()
        + SCRIPTS.iter().filter(|c| rejected(&c.2)).count()
        + 1
        + RESOLVE.iter().filter(|c| c.2.is_err()).count();
    tally("hostile_topo", cases, rejections, 80, 65);
}
