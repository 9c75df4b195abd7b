"""Strong- and weak-scaling studies: run a program at several rank counts (real MPI or SimGrid
SMPI), take a time per step from its output, and make the case study's table (ranks, nodes,
decomposition, time per step, speed-up, parallel efficiency normalised to the smallest run).

The program's arguments may hold placeholders, filled in per run:
  {p} ranks, {d0} {d1} … the MPI_Dims_create decomposition, {local0} {local1} … the local edge
  along each dimension (strong: the global edge split over that dimension; weak: the size),
  {local} the last of them, {local_bytes} = 8*{local}.

One run can hold a strong and a weak study of the same program (`studies`): their runs are
planned together, so a bad argument stops it before anything runs, and a run both studies share
(the same ranks and arguments) runs once.
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
from ..files import atomic_output

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


MODES = ("strong", "weak")


def study_sizes(modes: list[str], size: int | None, ranks: list[int], ndims: int) -> dict:
    """The size each study runs with. One study: --size (strong: the global edge; weak: the
    local edge). Both: --size is the weak study's local edge, and the strong study's global edge
    is --size times the last dimension of the smallest run's decomposition, so that the smallest
    strong run has local edge --size along the last dimension, as the smallest weak run (the very
    same run when that decomposition is square: 1, 4, 16, 64 … ranks in 2-D)."""
    if len(modes) == 1 or size is None:
        return {mode: size for mode in modes}
    smallest = dims_create(min(ranks), ndims)
    return {"strong": size * smallest[-1], "weak": size}


def fill_args(argv: list[str], p: int, dims: list[int], size: int | None, weak: bool) -> list[str]:
    values = {"p": p}
    values.update({f"d{i}": d for i, d in enumerate(dims)})
    if size is not None:
        local = [size if weak else max(1, size // d) for d in dims]
        values.update({f"local{i}": edge for i, edge in enumerate(local)})
        values.update({"local": local[-1], "local_bytes": 8 * local[-1]})
    return substitute(argv, values, None if size is not None else
                      ("local", "give --size"))


def substitute(argv: list[str], values: dict, missing_hint: tuple[str, str] | None = None) -> list[str]:
    """{name} in the program's arguments -> values[name]; missing_hint = (prefix, advice) for a
    placeholder that exists but needs an option."""
    out = []
    for a in argv:
        try:
            out.append(a.format(**values))
        except (KeyError, IndexError) as e:
            name = str(e.args[0])
            if missing_hint and name.startswith(missing_hint[0]):
                raise UsageError(f"argument {a!r} uses {{{name}}}: {missing_hint[1]}") from None
            raise UsageError(f"argument {a!r}: unknown placeholder {e}") from None
        except ValueError as e:    # a lone { or }: write {{ or }} for a brace itself
            raise UsageError(f"argument {a!r}: {e} (write {{{{ or }}}} for a brace)") from None
    return out


def step_time(output: str, regex: str | None, wall: float) -> float:
    if not regex:
        return wall
    m = re.search(regex, output)
    if not m:
        raise RuntimeError(f"no match for --step-regex {regex!r} in the program's output:\n"
                           f"{output[-1000:]}")
    return float(m.group(1) if m.groups() else m.group(0))


def build_source(source: Path, compiler: str, workdir: Path, flags: tuple[str, ...] = ()) -> Path:
    exe = workdir / source.stem
    r = subprocess.run([compiler, "-O2", *flags, "-o", str(exe), str(source)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise UsageError(f"{compiler} failed on {source}:\n{r.stderr[-2000:]}")
    return exe


def run_real(flavour: str, exe: Path, argv: list[str], p: int, timeout: float,
             env: dict | None = None, launcher_args: list[str] | None = None) -> tuple[str, float]:
    t0 = time.perf_counter()
    r = mpi.run(flavour, p, [str(exe), *argv], timeout=timeout, env=env,
                launcher_args=launcher_args)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{exe.name} on {p} ranks failed (exit {r.returncode}):\n"
                           f"{(r.stdout + r.stderr)[-2000:]}")
    return r.stdout, wall


def run_simulated(exe: Path, argv: list[str], p: int, ppn: int, platform: str, workdir: Path,
                  timeout: float) -> tuple[str, float]:
    from ..simulation import smpi
    plat, hosts = smpi.write_machine(workdir, platform, p, ppn)
    # display-timing: SMPI prints the simulated time, the "wall" time of --step-regex ''
    r = smpi.smpirun(exe, argv, p, plat, hosts, timeout=timeout, cwd=workdir,
                     config=["--cfg=smpi/privatization:no", "--cfg=smpi/display-timing:yes"])
    if r.returncode != 0:
        raise RuntimeError(f"smpirun of {exe.name} on {p} ranks failed (exit {r.returncode}):\n"
                           f"{(r.stdout + r.stderr)[-2000:]}")
    sim = smpi.simulated_time(r.stdout + r.stderr)
    return r.stdout, sim if sim is not None else float("nan")


def executable(program: Path, simulate: bool, flavour: str | None, workdir: Path,
               flags: tuple[str, ...] = ()) -> Path:
    """The program to run: a .c file compiled (smpicc, or the MPI's mpicc), or as given."""
    if program.suffix == ".c":
        if not program.exists():
            raise UsageError(f"source {program} does not exist")
        return build_source(program, "smpicc" if simulate else f"mpicc.{flavour}", workdir, flags)
    if not (program.exists() and os.access(program, os.X_OK)):
        raise UsageError(f"program {program} does not exist or is not executable")
    return program


def studies(app: list[str], ranks: list[int], modes: list[str], size: int | None, ppn: int,
            simulate: bool, platform: str, flavour: str | None, regex: str | None, ndims: int,
            timeout: float) -> list[dict]:
    """Runs the program at each rank count for each study in `modes` (strong, weak); one result
    per study (each the input of `table`, and the shape of a one-study results file)."""
    sizes = study_sizes(modes, size, ranks, ndims)
    # every run's arguments first: a bad placeholder stops the command before any run
    plan = {mode: [(p, dims_create(p, ndims)) for p in ranks] for mode in modes}
    plan = {mode: [(p, dims, fill_args(app[1:], p, dims, sizes[mode], mode == "weak"))
                   for p, dims in runs] for mode, runs in plan.items()}
    workdir = Path(tempfile.mkdtemp(prefix="mpiopt-scaling-"))
    exe = executable(Path(app[0]), simulate, flavour, workdir)
    done = {}   # (ranks, argv) -> the run: a run both studies share is made once
    results = []
    for mode in modes:
        runs = []
        for p, dims, argv in plan[mode]:
            key = (p, tuple(argv))
            if key not in done:
                if simulate:
                    out, wall = run_simulated(exe, argv, p, ppn, platform, workdir, timeout)
                else:
                    out, wall = run_real(flavour, exe, argv, p, timeout)
                done[key] = {"ranks": p, "nodes": -(-p // ppn), "decomposition": dims,
                             "argv": argv, "time_per_step": step_time(out, regex, wall),
                             "wall": wall}
            runs.append(dict(done[key]))
        results.append({"mode": mode, "simulated": simulate,
                        "platform": platform if simulate else None,
                        "mpi": None if simulate else flavour, "ppn": ppn, "app": app,
                        "size": sizes[mode], "runs": runs})
    return results


def study_list(results: dict) -> list[dict]:
    """The studies of a results file: {"studies": [strong, weak]} (both in one run) or one
    study on its own ({"mode": …, "runs": […]}, what a one-study run writes)."""
    if not isinstance(results, dict):
        raise UsageError("results: expected a JSON object with mode and runs, or with studies")
    if "studies" not in results:
        return [results]
    found = results["studies"]
    if not (isinstance(found, list) and found and all(isinstance(s, dict) for s in found)):
        raise UsageError("results: studies must be a non-empty list of objects with mode and runs")
    return found


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


def plot(tables: list[tuple[str, list[dict]]], path: str) -> None:
    """Time per step and efficiency against ranks, a line per study: [(mode, rows of table())]."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for mode, rows in tables:
        ps = [r["ranks"] for r in rows]
        a.loglog(ps, [r["time_per_step"] for r in rows], "o-", label=mode)
        b.semilogx(ps, [r["efficiency"] for r in rows], "o-", label=mode)
    ranks = sorted({r["ranks"] for _, rows in tables for r in rows})
    for ax in (a, b):   # the rank counts run, not powers of ten
        ax.set_xticks(ranks, [str(p) for p in ranks])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    a.set_xlabel("ranks"), a.set_ylabel("time per step (s)")
    a.set_title(" and ".join(mode for mode, _ in tables) + " scaling")
    b.axhline(1.0, color="grey", lw=0.5)
    b.set_xlabel("ranks"), b.set_ylabel("parallel efficiency"), b.set_ylim(bottom=0)
    if len(tables) > 1:
        a.legend(), b.legend()
    fig.tight_layout()
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
