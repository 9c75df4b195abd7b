"""The two pictures of a profile: per-rank MPI and compute time (the load-imbalance picture)
and the communication matrix as a heat map."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .data import Profile


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def ranks_png(p: Profile, path: Path) -> Path:
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator
    ranks = np.arange(p.ranks)
    mpi_t, compute = p.per_rank("mpi_time"), p.per_rank("compute_time")
    fig, ax = plt.subplots(figsize=(max(6, min(20, p.ranks * 0.15)), 4))
    ax.bar(ranks, compute, label="compute", color="tab:blue", width=1.0 if p.ranks > 64 else 0.8)
    ax.bar(ranks, mpi_t, bottom=compute, label="MPI", color="tab:orange",
           width=1.0 if p.ranks > 64 else 0.8)
    ax.set_xlabel("rank")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("seconds (Init..Finalize)")
    ax.set_title(f"{Path(p.program.split()[0]).name}: compute and MPI time per rank")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def matrix_png(p: Profile, path: Path) -> Path:
    plt = _pyplot()
    nbytes, _ = p.matrix()
    fig, ax = plt.subplots(figsize=(6, 5))
    shown = np.where(nbytes > 0, nbytes, np.nan)
    im = ax.imshow(shown, cmap="viridis", interpolation="nearest", origin="upper")
    fig.colorbar(im, ax=ax, label="bytes sent")
    ax.set_xlabel("destination rank")
    ax.set_ylabel("source rank")
    ax.set_title("point-to-point bytes")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
