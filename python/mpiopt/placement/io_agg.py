"""MPI-IO aggregators (ROMIO's "cb nodes", Cray's "concentrators") under a rank placement.

Two selections are modelled, both pure bookkeeping over a Placement:

* `stride`: aggregator i is rank i * (P // C) for C = cb_nodes. This is the rank-only choice the
  case study's pre-5.5.5 Cray library made (its display lists AGG i = rank 2i): it looks at rank
  numbers, not at nodes, so a rank reorder can put several aggregators on one node.
* `romio`: ROMIO's choice from the hint cb_config_list, which ROMIO matches against the processor
  names the ranks report (MPI_Get_processor_name), gathered to rank 0. A list entry is `host:N`
  or `*:N` (N a count, or `*` for up to cb_nodes); for each entry in list order ROMIO takes up to
  N ranks of that host, lowest rank first, and then retires the host; `*` does so for every host
  not yet retired, in the order of their lowest rank. It stops at cb_nodes aggregators. ROMIO's
  default list is `*:1`. (Read from ROMIO's adio/common/cb_config_list.c; modelled, not copied.)

The fix `fix_hints` returns the hints that put one aggregator on each of the first C nodes:
cb_nodes=C and cb_config_list naming those hosts, `host:1` each (or `*:k` when C > nodes).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .grid import PlacementError
from .placements import Placement

SELECTIONS = ("stride", "romio")


def host_names(nnodes: int, hosts: list[str] | None = None) -> list[str]:
    """The node names: the given list (must be long enough) or nid00000, nid00001, …"""
    if hosts is None:
        return [f"nid{n:05d}" for n in range(nnodes)]
    if len(hosts) < nnodes:
        raise PlacementError(f"{nnodes} nodes needed but only {len(hosts)} host names given")
    if len(set(hosts[:nnodes])) != nnodes:
        raise PlacementError("host names repeat: each node needs its own name")
    return list(hosts[:nnodes])


def stride_aggregators(nranks: int, cb_nodes: int) -> np.ndarray:
    """Aggregator i = rank i * (P // C): the rank-number-only choice."""
    check_cb_nodes(nranks, cb_nodes)
    return np.arange(cb_nodes, dtype=np.int64) * max(1, nranks // cb_nodes)


def check_cb_nodes(nranks: int, cb_nodes: int) -> None:
    if cb_nodes < 1:
        raise PlacementError(f"cb_nodes must be at least 1, got {cb_nodes}")
    if cb_nodes > nranks:
        raise PlacementError(f"cb_nodes ({cb_nodes}) is larger than the number of ranks ({nranks})")


def parse_config_list(text: str) -> list[tuple[str, int | None]]:
    """`host:N,*:N,…` -> [(host, N or None for '*')]; a bare host means host:1."""
    entries: list[tuple[str, int | None]] = []
    for token in text.split(","):
        token = token.strip()
        if not token:
            raise PlacementError(f"cb_config_list {text!r}: empty entry")
        name, _, count = token.partition(":")
        if not name or any(c.isspace() for c in name):
            raise PlacementError(f"cb_config_list {text!r}: bad host name in {token!r}")
        if count == "":
            n: int | None = 1
        elif count == "*":
            n = None
        elif count.isdigit() and int(count) >= 1:
            n = int(count)
        else:
            raise PlacementError(f"cb_config_list {text!r}: {token!r} needs a count >= 1 or '*'")
        entries.append((name, n))
    return entries


def romio_aggregators(names: list[str], config_list: str, cb_nodes: int) -> np.ndarray:
    """ROMIO's aggregator ranks, given each rank's processor name (names[rank]). As in ROMIO's
    ADIOI_cb_config_list_parse: an entry uses up its host (later entries never take it again);
    `host:*` and `*:*` mean up to cb_nodes; the whole list `*:*` is the ranks 0..cb_nodes-1."""
    check_cb_nodes(len(names), cb_nodes)
    if config_list.strip() == "*:*":
        return np.arange(cb_nodes, dtype=np.int64)
    by_host: dict[str, list[int]] = {}
    for rank, name in enumerate(names):   # insertion order = order of each host's lowest rank
        by_host.setdefault(name, []).append(rank)
    used: set[str] = set()
    chosen: list[int] = []
    for host, count in parse_config_list(config_list):
        if len(chosen) >= cb_nodes:
            break
        hosts = [h for h in by_host if h not in used] if host == "*" else [host]
        for h in hosts:
            if h in used or h not in by_host:
                continue
            want = min(cb_nodes if count is None else count, cb_nodes - len(chosen))
            chosen.extend(by_host[h][:want])
            used.add(h)
            if len(chosen) >= cb_nodes:
                break
    if not chosen:
        raise PlacementError(f"cb_config_list {config_list!r} matches no host of the job")
    return np.array(chosen, dtype=np.int64)


@dataclass
class AggregatorTable:
    aggregators: np.ndarray      # rank of aggregator i
    nodes: np.ndarray            # node index of aggregator i
    hosts: list[str]             # node names

    def rows(self) -> list[dict]:
        return [{"agg": i, "rank": int(r), "node": self.hosts[int(n)]}
                for i, (r, n) in enumerate(zip(self.aggregators, self.nodes))]

    def crowded(self) -> dict[str, list[int]]:
        """Nodes holding more than one aggregator -> those aggregators' numbers."""
        per: dict[str, list[int]] = {}
        for i, n in enumerate(self.nodes.tolist()):
            per.setdefault(self.hosts[n], []).append(i)
        return {h: aggs for h, aggs in per.items() if len(aggs) > 1}


def aggregator_table(placement: Placement, aggregators: np.ndarray,
                     hosts: list[str]) -> AggregatorTable:
    node = placement.node_of_rank()
    return AggregatorTable(np.asarray(aggregators), node[np.asarray(aggregators)], hosts)


def fix_hints(placement: Placement, cb_nodes: int, hosts: list[str]) -> dict[str, str]:
    """Hints that place the aggregators on distinct nodes (as many distinct nodes as possible)."""
    check_cb_nodes(placement.nranks, cb_nodes)
    nnodes = placement.nnodes
    if cb_nodes <= nnodes:
        config = ",".join(f"{h}:1" for h in hosts[:cb_nodes])
    else:   # more aggregators than nodes: spread evenly, ROMIO walks hosts in order per entry
        config = f"*:{-(-cb_nodes // nnodes)}"
    return {"romio_cb_write": "enable", "romio_cb_read": "enable",
            "cb_nodes": str(cb_nodes), "cb_config_list": config}


def rank_names(placement: Placement, hosts: list[str]) -> list[str]:
    """Processor name of each rank under the placement."""
    return [hosts[n] for n in placement.node_of_rank().tolist()]


def romio_hints_text(hints: dict[str, str]) -> str:
    """A ROMIO_HINTS file: one `key value` a line."""
    return "".join(f"{k} {v}\n" for k, v in hints.items())
