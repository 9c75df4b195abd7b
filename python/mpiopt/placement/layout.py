"""Hybrid MPI+OpenMP layouts of a 2-D stencil code on N nodes: ranks a node x threads a rank,
the rank decomposition of the global grid, the grid_order cell that keeps a node's ranks a block,
the halo traffic under it (HaloPattern, the evaluator `halo-stats` uses) and a step time from a
small documented model (docs/layout.md), so the layouts can be ranked.

The model of one step of one rank (the slowest: an interior one on the busiest node):
  compute = ceil(ny / T) rows x (row_ns + nx x point_ns) x (1 + serial x (T - 1))
            + omp_us when T > 1
      the threads share the rows of the rank's nx x ny block (the inner loop runs along the
      first grid dimension, as in WRF's and grid_order -C's numbering); a row costs a fixed
      start-up (row_ns) besides its points, so longer inner loops (X << Y) cost less a point;
      `serial` is the share of the work that does not thread (packing halos, MPI funneled
      through the master thread), and omp_us a parallel region's fork/join.
  halo    = k x latency_us (k messages the busiest rank sends)
            + busiest node's off-node bytes / nic_gbs + its off-node messages x nic_msg_us
            + that rank's halo bytes / shm_gbs (it copies each once)
      the node's network card is shared by its ranks: fewer, larger ranks send fewer messages
      through it; bytes are those of the real block faces (a face of ny rows across the first
      dimension, of nx points across the second, width x bytes-per-point each).
Defaults are round numbers for a current cluster node (docs/layout.md); `layout --run` measures."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, asdict

import numpy as np

from .grid import Grid, PlacementError
from .grid_order import GridOrderOptions, generate
from .halo import HaloPattern, STENCIL_DIMS
from .placements import order_placement
from .topology import Topology


@dataclass(frozen=True)
class ModelParameters:
    point_ns: float = 1.0        # a grid point of the sweep, one core (halo2d: 1.2-1.3 ns here)
    row_ns: float = 20.0         # start-up of one inner loop (a row)
    serial: float = 0.02         # share of the work that does not thread
    omp_us: float = 2.0          # fork/join of a parallel region, once a step
    latency_us: float = 1.5      # a message's latency
    nic_gbs: float = 12.5        # node's network bandwidth, GB/s (100 Gb/s)
    nic_msg_us: float = 0.2      # network card's cost a message (a 5 M msg/s message rate)
    shm_gbs: float = 10.0        # on-node copy bandwidth of one rank, GB/s
    width: int = 1               # halo width, points
    point_bytes: int = 8         # bytes a grid point carries in the halo (fields x 8)


@dataclass
class Layout:
    ranks_per_node: int
    threads: int
    nodes: int
    decomposition: tuple[int, int]       # ranks along each grid dimension
    block: tuple[int, int]               # grid points a rank along each dimension (largest)
    cell: tuple[int, int]                # grid_order cell: one node's block of ranks
    halo_bytes_rank: int                 # bytes the busiest rank sends a step
    off_node_bytes: int                  # whole job, a step
    node_off_node_bytes: int             # the busiest node
    node_off_node_messages: int
    compute_us: float
    halo_us: float
    crosses_numa: bool
    alternatives: int = 0                # (decomposition, cell) pairs weighed for this layout
    launch: dict = field(default_factory=dict)

    @property
    def ranks(self) -> int:
        return self.ranks_per_node * self.nodes

    @property
    def model_us(self) -> float:
        return self.compute_us + self.halo_us

    def grid_order_command(self) -> str:
        j = lambda v: ",".join(map(str, v))
        return f"mpiopt grid-order -C -c {j(self.cell)} -g {j(self.decomposition)}"

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(ranks=self.ranks, model_us=self.model_us, grid_order=self.grid_order_command())
        return d


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def thread_counts(topo: Topology, cross_numa: bool) -> list[int]:
    """Threads a rank: divisors of a NUMA region's cores (a rank's threads share its memory), or
    of the node's cores with cross_numa."""
    return divisors(topo.cores if cross_numa else topo.cores_per_numa)


def face_bytes(offsets: np.ndarray, block: tuple[int, int], params: ModelParameters) -> np.ndarray:
    """Bytes of the message along each offset: across dimension 1 a face of block[1] points,
    across dimension 2 one of block[0], a corner width x width."""
    w = params.width
    out = []
    for ox, oy in offsets.tolist():
        if ox and oy:
            points = w * w
        elif ox:
            points = w * block[1]
        else:
            points = w * block[0]
        out.append(points * params.point_bytes)
    return np.array(out, dtype=np.int64)


def _compute_us(block, threads, params: ModelParameters) -> float:
    nx, ny = block
    rows = math.ceil(ny / threads)
    t = rows * (params.row_ns + nx * params.point_ns) * (1 + params.serial * (threads - 1)) / 1e3
    return t + (params.omp_us if threads > 1 else 0.0)


def evaluate(grid: tuple[int, int], stencil: str, nodes: int, ranks_per_node: int, threads: int,
             topo: Topology, params: ModelParameters, periodic: bool = False) -> Layout | None:
    """The best (decomposition, cell) for one layout under the model, or None when no
    decomposition of nodes x ranks_per_node ranks fits the grid with a tiling cell."""
    nranks = nodes * ranks_per_node
    best: Layout | None = None
    weighed = 0
    for px in divisors(nranks):
        py = nranks // px
        if px > grid[0] or py > grid[1]:
            continue
        block = (math.ceil(grid[0] / px), math.ceil(grid[1] / py))
        pattern = HaloPattern(Grid((px, py), "C"), stencil, periodic)
        sizes = face_bytes(pattern.offsets, block, params)
        compute = _compute_us(block, threads, params)
        for cx in divisors(ranks_per_node):
            cy = ranks_per_node // cx
            if px % cx or py % cy:
                continue     # the cell must tile the decomposition: every node a whole block
            weighed += 1
            order = generate(GridOrderOptions(grid=(px, py), cell=(cx, cy))).order
            traffic = pattern.weighted_traffic(order_placement(order, ranks_per_node).node_of_rank(),
                                               sizes)
            # the busiest rank (an interior one, when there is one) copies each of its halo
            # bytes once, to a neighbour or to the network card
            halo = (traffic["max_rank_messages"] * params.latency_us
                    + traffic["max_node_off_node_bytes"] / (params.nic_gbs * 1e3)
                    + traffic["max_node_off_node_messages"] * params.nic_msg_us
                    + traffic["max_rank_bytes"] / (params.shm_gbs * 1e3))
            candidate = Layout(ranks_per_node, threads, nodes, (px, py), block, (cx, cy),
                               traffic["max_rank_bytes"], traffic["bytes_off_node"],
                               traffic["max_node_off_node_bytes"],
                               traffic["max_node_off_node_messages"], compute, halo,
                               threads > topo.cores_per_numa)
            if best is None or _key(candidate) < _key(best):
                best = candidate
    if best is not None:
        best.alternatives = weighed
        best.launch = launch_lines(best)
    return best


def _key(layout: Layout):
    """Model time first; then less off-node traffic; then X <= Y (the study's shape)."""
    return (round(layout.model_us, 6), layout.node_off_node_bytes,
            layout.decomposition[0] > layout.decomposition[1], layout.cell)


def candidates(grid: tuple[int, int], stencil: str, nodes: int, topo: Topology,
               params: ModelParameters, cross_numa: bool = False,
               periodic: bool = False) -> list[Layout]:
    """Every layout that fills the node's cores, best model time first."""
    if len(grid) != 2 or STENCIL_DIMS.get(stencil) != 2:
        raise PlacementError("the layout advisor models 2-D grids (-g NX,NY, --stencil 5pt or 9pt)")
    if nodes < 1:
        raise PlacementError(f"--nodes must be at least 1, got {nodes}")
    layouts = []
    for threads in thread_counts(topo, cross_numa):
        found = evaluate(grid, stencil, nodes, topo.cores // threads, threads, topo, params,
                         periodic)
        if found is not None:
            layouts.append(found)
    if not layouts:
        raise PlacementError(f"no layout of {nodes} nodes x {topo.cores} cores fits the grid "
                             f"{grid[0]}x{grid[1]} (fewer grid points than ranks?)")
    return sorted(layouts, key=_key)


OMP_ENV = "OMP_NUM_THREADS={t} OMP_PLACES=cores OMP_PROC_BIND=close"


def launch_lines(layout: Layout) -> dict[str, str]:
    """How to start it: each launcher's own words for R ranks a node, T cores each."""
    p, r, t, n = layout.ranks, layout.ranks_per_node, layout.threads, layout.nodes
    env = OMP_ENV.format(t=t)
    return {
        "env": env,
        "openmpi": f"{env} mpirun -np {p} --map-by ppr:{r}:node:pe={t} --bind-to core "
                   "-x OMP_NUM_THREADS -x OMP_PLACES -x OMP_PROC_BIND ./app",
        "mpich": f"mpiexec -n {p} -ppn {r} -bind-to core:{t} -genv OMP_NUM_THREADS {t} "
                 "-genv OMP_PLACES cores -genv OMP_PROC_BIND close ./app",
        "slurm": f"{env} srun -N {n} --ntasks-per-node={r} --cpus-per-task={t} "
                 "--cpu-bind=cores ./app",
        "cray": f"{env} MPICH_RANK_REORDER_METHOD=3 aprun -n {p} -N {r} -d {t} -cc depth ./app",
    }
