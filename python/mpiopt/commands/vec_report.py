"""`mpiopt vec-report`: which reduction kernels GCC vectorized, per CPU target.

Builds the kernels in `build/vec-report/` with the CMake option MPIOPT_VEC_REPORT (same flags as
the real build, plus GCC's `-fopt-info-vec-optimized` and `-fdump-tree-vect-optimized`), then
reads GCC's own reports: the count of loops vectorized per target (as in Table 1 of Love, 2021)
and, from the per-function dump, which op × type × form functions have no vectorized loop."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from ..errors import UsageError
from ..mpi import available_flavours, repo_root
from ..console import console as report_console

EXAMPLE = """example:
  mpiopt vec-report           table by target: loops vectorized, functions, functions not vectorized
  mpiopt vec-report --json    the same as JSON, with the list of scalar functions per target
"""

TARGETS = ("baseline", "avx2", "avx512")


def build(build_dir: Path, flavour: str) -> None:
    cmd = ["cmake", "-S", str(repo_root()), "-B", str(build_dir), f"-DMPI_FLAVOUR={flavour}",
           "-DMPIOPT_VEC_REPORT=ON", "-DCMAKE_BUILD_TYPE=Release",
           f"-DCMAKE_C_COMPILER=mpicc.{flavour}"]
    for step in (cmd, ["cmake", "--build", str(build_dir), "--target", "mpiopt", "-j2"]):
        r = subprocess.run(step, capture_output=True, text=True)
        if r.returncode != 0:
            raise UsageError(f"building the kernels failed ({' '.join(step)}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


def parse_dump(path: Path) -> dict[str, int]:
    """Function name → number of loops vectorized in it, from a -fdump-tree-vect-optimized file."""
    loops: dict[str, int] = {}
    current = None
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r";; Function (\S+)", line)
        if m:
            current = m.group(1)
            loops.setdefault(current, 0)
        elif current and "optimized: loop vectorized" in line:
            loops[current] += 1
    return loops


def report(build_dir: Path) -> list[dict]:
    rows = []
    for target in TARGETS:
        dump, info = build_dir / f"vec-dump-{target}.txt", build_dir / f"vec-info-{target}.txt"
        if not dump.exists():
            continue
        loops = parse_dump(dump)
        kernels = {f: n for f, n in loops.items() if re.search(r"_[23]$", f)}
        scalar = sorted(f for f, n in kernels.items() if n == 0)
        info_loops = sum(1 for line in info.read_text(errors="replace").splitlines()
                         if "loop vectorized" in line) if info.exists() else 0
        rows.append({"target": target, "loops_vectorized": info_loops, "functions": len(kernels),
                     "functions_vectorized": len(kernels) - len(scalar), "functions_scalar": scalar})
    return rows


def run(args) -> int:
    flavours = available_flavours()
    if not flavours:
        raise UsageError("no MPI found (mpicc.openmpi or mpicc.mpich): run `make deps`")
    build_dir = repo_root() / "build" / "vec-report"
    build(build_dir, flavours[0])
    rows = report(build_dir)
    if not rows:
        raise UsageError(f"GCC wrote no vectorizer report in {build_dir}")
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
        from rich.table import Table
    table = Table(title="Reduction kernels vectorized by GCC, per target "
                  "(op × type × form functions; 2- and 3-buffer forms)")
    for col in ("target", "loops vectorized", "functions", "vectorized", "scalar"):
        table.add_column(col, justify="left" if col == "target" else "right")
    for r in rows:
        table.add_row(r["target"], str(r["loops_vectorized"]), str(r["functions"]),
                      str(r["functions_vectorized"]), str(len(r["functions_scalar"])))
    console = report_console()
    console.print(table)
    for r in rows:
        if r["functions_scalar"]:
            console.print(f"[bold]{r['target']}[/] scalar: {', '.join(r['functions_scalar'])}")
    console.print("Long double (x87 80-bit) has no vector instructions on x86: its functions stay scalar.")
    return 0


def register(sub) -> None:
    import argparse
    p = sub.add_parser("vec-report", help="count the kernel loops GCC vectorized, per CPU target",
                       description=__doc__, epilog=EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)
