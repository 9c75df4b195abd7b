"""Rank placement from a measured communication matrix (mpiopt-profile.json): ranks are split
into nodes of exactly `ppn` ranks (the last node takes the rest, as SMP placement does) so that
as few bytes as possible cross nodes, CrayPat's `-Ompi_sm_rank_order` in spirit.

The partitioner is networkx's Kernighan-Lin bisection, applied recursively (nodes split in
halves) and then to every pair of nodes that exchange bytes until no swap helps. Kernighan-Lin
only swaps ranks between the two sides, so each side keeps the size it started with: the
"exactly ppn ranks a node" constraint holds by construction, which METIS's k-way partitioning
(balanced only up to a tolerance) would need a repair pass for. The search starts from SMP
placement and the result is never worse than it."""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from .grid import PlacementError
from .placements import method_placement, order_placement


@dataclass
class MatrixPlacement:
    order: np.ndarray             # MPICH_RANK_ORDER: the ranks node by node
    ppn: int
    total_bytes: float
    smp_off_node_bytes: float
    off_node_bytes: float
    smp_max_node_off_node_bytes: float
    max_node_off_node_bytes: float


def off_node_bytes(matrix: np.ndarray, node_of_rank: np.ndarray) -> tuple[float, float]:
    """(bytes sent between different nodes, the most any one node sends off-node): halo-stats'
    counting applied to a measured matrix (matrix[source, destination] = bytes)."""
    node = np.asarray(node_of_rank)
    off = node[:, None] != node[None, :]
    sent = np.where(off, matrix, 0.0).sum(axis=1)
    per_node = np.bincount(node, weights=sent, minlength=int(node.max()) + 1)
    return float(sent.sum()), float(per_node.max()) if per_node.size else 0.0


def _graph(matrix: np.ndarray) -> nx.Graph:
    """Undirected graph of the ranks, weight = bytes both ways."""
    w = matrix + matrix.T
    g = nx.Graph()
    g.add_nodes_from(range(matrix.shape[0]))
    src, dst = np.nonzero(np.triu(w, 1))
    g.add_weighted_edges_from((int(a), int(b), float(w[a, b])) for a, b in zip(src, dst))
    return g


def _bisect(g: nx.Graph, ranks: list[int], left_size: int) -> tuple[list[int], list[int]]:
    a, b = set(ranks[:left_size]), set(ranks[left_size:])
    if not a or not b:
        return sorted(a), sorted(b)
    a, b = nx.algorithms.community.kernighan_lin_bisection(g.subgraph(ranks), partition=(a, b),
                                                            weight="weight", seed=0)
    return sorted(a), sorted(b)


def _split(g: nx.Graph, ranks: list[int], sizes: list[int]) -> list[list[int]]:
    """Recursive bisection of `ranks` into parts of the given sizes."""
    if len(sizes) == 1:
        return [ranks]
    half = len(sizes) // 2
    left, right = _bisect(g, ranks, sum(sizes[:half]))
    return _split(g, left, sizes[:half]) + _split(g, right, sizes[half:])


def _cut(g: nx.Graph, a: list[int], b: list[int]) -> float:
    return nx.cut_size(g, a, b, weight="weight") if a and b else 0.0


def _refine(g: nx.Graph, parts: list[list[int]], passes: int = 4) -> list[list[int]]:
    """Kernighan-Lin on every pair of parts joined by an edge, while some pair improves."""
    for _ in range(passes):
        improved = False
        for i in range(len(parts)):
            for j in range(i + 1, len(parts)):
                before = _cut(g, parts[i], parts[j])
                if before == 0:
                    continue
                a, b = _bisect(g, parts[i] + parts[j], len(parts[i]))
                if _cut(g, a, b) < before - 1e-9:
                    parts[i], parts[j], improved = a, b, True
        if not improved:
            break
    return parts


def partition(matrix: np.ndarray, ppn: int) -> MatrixPlacement:
    """The placement of the matrix's ranks on nodes of `ppn` ranks with the fewest off-node
    bytes found, compared with SMP placement (rank order)."""
    matrix = np.asarray(matrix, dtype=float)
    n = matrix.shape[0]
    if matrix.ndim != 2 or matrix.shape[1] != n or n < 1:
        raise PlacementError(f"the communication matrix must be square, got {matrix.shape}")
    if ppn < 1:
        raise PlacementError(f"--ppn must be at least 1, got {ppn}")
    nnodes = -(-n // ppn)
    sizes = [ppn] * (n // ppn) + ([n % ppn] if n % ppn else [])
    smp = method_placement(1, n, ppn)
    smp_off, smp_worst = off_node_bytes(matrix, smp.node_of_rank())
    order = smp.slot_order
    if nnodes > 1 and smp_off > 0:
        g = _graph(matrix)
        parts = _refine(g, _split(g, list(range(n)), sizes))
        candidate = np.array([r for part in parts for r in part], dtype=np.int64)
        off, _ = off_node_bytes(matrix, order_placement(candidate, ppn).node_of_rank())
        if off < smp_off:
            order = candidate
    off, worst = off_node_bytes(matrix, order_placement(order, ppn).node_of_rank())
    return MatrixPlacement(order, ppn, float(matrix.sum()), smp_off, off, smp_worst, worst)
