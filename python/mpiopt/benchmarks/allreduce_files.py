"""The files `mpiopt bench allreduce` writes for each operation of a sweep: a CSV table and a PNG
plot (allreduce.py runs the sweep; this reads its documents)."""
from __future__ import annotations

import csv
from pathlib import Path

from .allreduce import OSU_STAT, by_size


def write_csv(docs: list[dict], path: Path) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["flavour", "ranks", "operation", "datatype", "op", "algorithm", "bytes", "iterations",
                    "median_us", "avg_us", "min_us", "max_us", "bandwidth_mb_s", "vendor_over_algorithm"])
        for doc in docs:
            table = by_size(doc)
            for row in doc["results"]:
                vendor = table[row["bytes"]].get("vendor")
                ratio = vendor[OSU_STAT] / row[OSU_STAT] if vendor and row[OSU_STAT] > 0 else ""
                w.writerow([doc["flavour"], doc["ranks"], doc["operation"], doc["datatype"], doc["op"],
                            row["algorithm"], row["bytes"], row["iterations"], row["median_us"], row["avg_us"], row["min_us"],
                            row["max_us"], row["bandwidth_mb_s"], f"{ratio:.4f}" if ratio != "" else ""])
    return path


def write_plot(docs: list[dict], path: Path) -> Path:
    """One row of two panels per run: latency and bandwidth against size, a line per algorithm."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(docs), 2, figsize=(12, 4 * len(docs)), squeeze=False)
    for (lat_ax, bw_ax), doc in zip(axes, docs):
        table = by_size(doc)
        sizes = sorted(table)
        for alg in doc["algorithms"]:
            xs = [s for s in sizes if alg in table[s]]
            style = dict(linewidth=2.5, color="black") if alg == "vendor" else dict(linewidth=1.3)
            if alg == "auto":
                style = dict(linewidth=2.5, linestyle="--", color="tab:red")
            lat_ax.plot(xs, [table[s][alg][OSU_STAT] for s in xs], marker=".", label=alg, **style)
            bw_ax.plot(xs, [s / table[s][alg][OSU_STAT] for s in xs], marker=".", label=alg, **style)
        title = f"{doc['flavour']}, {doc['ranks']} ranks, {doc['datatype']} {doc['op']}"
        lat_ax.set(xscale="log", yscale="log", xlabel="message size (bytes)", ylabel="latency, OSU average (us)",
                   title=f"{doc['operation']} latency: {title}")
        bw_ax.set(xscale="log", xlabel="message size (bytes)", ylabel="bandwidth = bytes / OSU time (MB/s)",
                  title=f"{doc['operation']} bandwidth: {title}")
        for ax in (lat_ax, bw_ax):
            ax.set_xscale("log", base=2)
            ax.grid(True, which="both", alpha=0.3)
        lat_ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
