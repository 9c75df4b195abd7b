"""Strong- and weak-scaling studies: run a program at several rank counts (real MPI or SimGrid
SMPI), take a time per step from its output, and make the case study's table (ranks, nodes,
decomposition, time per step, speed-up, parallel efficiency normalised to the smallest run).

The program's arguments may hold placeholders, filled in per run:
  {p} ranks, {d0} {d1} … the MPI_Dims_create decomposition, {local} the local edge along the
  last dimension (strong: --size split over it; weak: --size), {local_bytes} = 8*{local}.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from .. import mpi
from ..errors import UsageError

DEFAULT_STEP_REGEX = r"time_per_step=(\S+)"


def dims_create(p: int, ndims: int) -> list[int]:
    """MPI_Dims_create(p, ndims, {0…}): as balanced as possible, non-increasing."""
    if p < 1 or ndims < 1:
        raise UsageError(f"cannot decompose {p} ranks into {ndims} dimensions")
    dims = [1] * ndims
    factors, n, f = [], p, 2
    while f * f <= n:
        while n % f == 0:
            factors.append(f)
            n //= f
        f += 1
    if n > 1:
        factors.append(n)
    for f in sorted(factors, reverse=True):   # largest prime first onto the smallest dimension
        dims[dims.index(min(dims))] *= f
    return sorted(dims, reverse=True)


def fill_args(argv: list[str], p: int, dims: list[int], size: int | None, weak: bool) -> list[str]:
    local = None
    if size is not None:
        local = size if weak else max(1, size // dims[-1])
    values = {"p": p, "local": local, "local_bytes": None if local is None else 8 * local}
    values.update({f"d{i}": d for i, d in enumerate(dims)})
    out = []
    for a in argv:
        try:
            out.append(a.format(**values))
        except (KeyError, IndexError) as e:
            raise UsageError(f"argument {a!r}: unknown placeholder {e}") from None
        if "None" in out[-1] and "{local" in a:
            raise UsageError(f"argument {a!r} uses {{local}}: give --size")
    return out


def step_time(output: str, regex: str | None, wall: float) -> float:
    if not regex:
        return wall
    m = re.search(regex, output)
    if not m:
        raise RuntimeError(f"no match for --step-regex {regex!r} in the program's output:\n"
                           f"{output[-1000:]}")
    return float(m.group(1) if m.groups() else m.group(0))


def build_source(source: Path, compiler: str, workdir: Path) -> Path:
    exe = workdir / source.stem
    r = subprocess.run([compiler, "-O2", "-o", str(exe), str(source)], capture_output=True, text=True)
    if r.returncode != 0:
        raise UsageError(f"{compiler} failed on {source}:\n{r.stderr[-2000:]}")
    return exe


def run_real(flavour: str, exe: Path, argv: list[str], p: int, timeout: float) -> tuple[str, float]:
    t0 = time.perf_counter()
    r = mpi.run(flavour, p, [str(exe), *argv], timeout=timeout)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{exe.name} on {p} ranks failed (exit {r.returncode}):\n"
                           f"{(r.stdout + r.stderr)[-2000:]}")
    return r.stdout, wall


def run_simulated(exe: Path, argv: list[str], p: int, ppn: int, platform: str, workdir: Path,
                  timeout: float) -> tuple[str, float]:
    from ..simulation import smpi
    plat, hosts = smpi.write_machine(workdir, platform, p, ppn)
    r = smpi.smpirun(exe, argv, p, plat, hosts, config=["--cfg=smpi/privatization:no"],
                     timeout=timeout, cwd=workdir)
    if r.returncode != 0:
        raise RuntimeError(f"smpirun of {exe.name} on {p} ranks failed (exit {r.returncode}):\n"
                           f"{(r.stdout + r.stderr)[-2000:]}")
    sim = smpi.simulated_time(r.stdout + r.stderr)
    return r.stdout, sim if sim is not None else float("nan")


def study(app: list[str], ranks: list[int], weak: bool, size: int | None, ppn: int,
          simulate: bool, platform: str, flavour: str, regex: str | None, ndims: int,
          timeout: float) -> dict:
    """Runs the program at each rank count; the results (input of `table`)."""
    program = Path(app[0])
    workdir = Path(tempfile.mkdtemp(prefix="mpiopt-scaling-"))
    if program.suffix == ".c":
        if not program.exists():
            raise UsageError(f"source {program} does not exist")
        exe = build_source(program, "smpicc" if simulate else f"mpicc.{flavour}", workdir)
    else:
        exe = program if program.exists() else None
        if exe is None or not os.access(exe, os.X_OK):
            raise UsageError(f"program {program} does not exist or is not executable")
    runs = []
    for p in ranks:
        dims = dims_create(p, ndims)
        argv = fill_args(app[1:], p, dims, size, weak)
        if simulate:
            out, wall = run_simulated(exe, argv, p, ppn, platform, workdir, timeout)
        else:
            out, wall = run_real(flavour, exe, argv, p, timeout)
        runs.append({"ranks": p, "nodes": -(-p // ppn), "decomposition": dims, "argv": argv,
                     "time_per_step": step_time(out, regex, wall), "wall": wall})
    return {"mode": "weak" if weak else "strong", "simulated": simulate,
            "platform": platform if simulate else None, "mpi": None if simulate else flavour,
            "ppn": ppn, "app": app, "size": size, "runs": runs}


def table(results: dict) -> list[dict]:
    """Speed-up and parallel efficiency against the smallest run p1 (time T1):
    strong: speed-up T1/Tp, efficiency T1*p1/(Tp*p); weak: efficiency T1/Tp (speed-up p/p1 * that)."""
    mode = results.get("mode")
    if mode not in ("strong", "weak"):
        raise UsageError(f"results: mode must be strong or weak, got {mode!r}")
    runs = sorted(results.get("runs") or [], key=lambda r: r["ranks"])
    if not runs:
        raise UsageError("results: no runs")
    for r in runs:
        if not (isinstance(r.get("time_per_step"), (int, float)) and r["time_per_step"] > 0):
            raise UsageError(f"results: run with {r.get('ranks')} ranks has no positive time_per_step")
    p1, t1 = runs[0]["ranks"], runs[0]["time_per_step"]
    rows = []
    for r in runs:
        p, tp = r["ranks"], r["time_per_step"]
        eff = t1 * p1 / (tp * p) if mode == "strong" else t1 / tp
        speedup = t1 / tp if mode == "strong" else eff * p / p1
        rows.append({"ranks": p, "nodes": r.get("nodes"), "decomposition": r.get("decomposition"),
                     "time_per_step": tp, "speedup": speedup, "efficiency": eff})
    return rows


def plot(rows: list[dict], mode: str, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    ps = [r["ranks"] for r in rows]
    a.loglog(ps, [r["time_per_step"] for r in rows], "o-")
    a.set_xlabel("ranks"), a.set_ylabel("time per step (s)"), a.set_title(f"{mode} scaling")
    b.semilogx(ps, [r["efficiency"] for r in rows], "o-")
    b.axhline(1.0, color="grey", lw=0.5)
    b.set_xlabel("ranks"), b.set_ylabel("parallel efficiency"), b.set_ylim(bottom=0)
    fig.tight_layout()
    fd, tmp = tempfile.mkstemp(suffix=".png", dir=Path(path).parent or ".")
    os.close(fd)
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)
