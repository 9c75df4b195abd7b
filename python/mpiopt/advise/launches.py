"""One run of one variant of the user's program, with the profiler in front so that every run
(baseline included) gives its Init..Finalize time, its MPI time per call kind and per rank: the
profiler costs each variant the same. A variant is the program as it is (the vendor's
collectives), under the drop-in, under a rank order, or rebuilt from transformed sources."""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from .. import dropin_report, jobs
from ..launch import plan_launch
from ..errors import UsageError
from ..profile import PROFILE_NAME, ProfileError, load

RUN_TIMEOUT = 3600   # seconds a run may take before it counts as hung


@dataclass
class Variant:
    """How to launch one version of the program."""
    name: str                       # baseline, dropin, placement, transformed
    program: list[str]
    preload: bool                   # libmpiopt under the program
    rank_order: str | None = None   # with hosts and ppn: a real launch with that order
    hosts: str | None = None
    ppn: int | None = None


@dataclass
class RunRecord:
    """What one run gave."""
    variant: str
    repetition: int
    status: int
    elapsed: float                  # seconds, launch to exit, seen from outside
    stdout: str
    stderr: str
    directory: Path
    wall: float | None = None       # Init..Finalize of the slowest rank (the profile)
    mpi: float | None = None        # MPI time, average over ranks
    calls: dict = field(default_factory=dict)   # call -> average seconds over ranks
    per_rank: dict = field(default_factory=dict)    # mpi_time, compute_time: a value a rank
    error: str | None = None        # why this run gave no figures

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class Launcher:
    """Starts the variants of one program: np ranks, the options `mpiopt run` takes."""
    np: int
    flavour: str | None
    workdir: Path                   # run directories and placement files go here
    lib: Path | None = None         # --mpi: the libmpiopt.so and profiler built for that MPI
    profile_lib: Path | None = None
    extra_env: dict = field(default_factory=dict)
    tools: list = field(default_factory=list)      # --preload: the user's libraries, checked
    ld_preload: dict = field(default_factory=dict)  # variant -> the LD_PRELOAD its runs had

    def _args(self, variant: Variant, profile_dir: Path, sites: bool) -> SimpleNamespace:
        return SimpleNamespace(
            command=["--", *variant.program], launcher_extra=[], np=self.np, flavour=self.flavour,
            no_preload=not variant.preload, lib=str(self.lib) if self.lib else None, prefix=None,
            rank_order=variant.rank_order, hosts=variant.hosts, hostfile=None, ppn=variant.ppn,
            no_srun=False, report=variant.preload, profile_dir=profile_dir,   # srun in an allocation
            profile_lib=self.profile_lib, preload=self.tools,
            profile_env={"MPIOPT_PROFILE_SITES": "1", "MPIOPT_PROFILE_STACK": "0"} if sites else {})

    def check(self, variant: Variant) -> str:
        """The flavour the variant runs with; a UsageError when it cannot be launched."""
        probe = self.workdir / "probe"
        probe.mkdir(parents=True, exist_ok=True)
        return plan_launch(self._args(variant, probe, False), probe).flavour

    def run(self, variant: Variant, repetition: int, sites: bool = False) -> RunRecord:
        directory = self.workdir / f"{variant.name}-{repetition}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / PROFILE_NAME).unlink(missing_ok=True)
        launch = plan_launch(self._args(variant, directory, sites), directory)
        env = {**launch.env, **self.extra_env}
        self.ld_preload[variant.name] = env.get("LD_PRELOAD")
        start = time.perf_counter()
        try:
            r = jobs.run(launch.cmd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
            status, out, err = r.returncode, r.stdout, r.stderr
        except subprocess.TimeoutExpired as e:
            status, out, err = -1, _text(e.stdout), _text(e.stderr) + f"\n(killed after {RUN_TIMEOUT} s)"
        except OSError as e:
            raise UsageError(f"cannot start {launch.cmd[0]}: {e}") from None
        record = RunRecord(variant.name, repetition, status, time.perf_counter() - start,
                           out, err, directory)
        (directory / "stdout.txt").write_text(out)
        (directory / "stderr.txt").write_text(err)
        if status != 0:
            last = (err.strip().splitlines() or ["no message"])[-1]
            record.error = f"exit status {status}: {last[:200]}"
            return record
        try:
            prof = load(directory / PROFILE_NAME)
        except ProfileError as e:
            record.error = str(e)
            return record
        d = prof.data
        record.wall = d["system"]["wall_time"]["max"]
        record.mpi = d["mpi"]["mpi_time"]["avg"]
        record.calls = {name: c["time"]["avg"] for name, c in d["calls"].items()}
        record.per_rank = {k: prof.per_rank(k).tolist() for k in ("mpi_time", "compute_time")}
        return record


def _text(b) -> str:
    if b is None:
        return ""
    return b.decode(errors="replace") if isinstance(b, bytes) else b


def report_of(record: RunRecord) -> dict:
    """The drop-in's MPIOPT_REPORT of a run: rows, total and notes."""
    return {"rows": dropin_report.rows(record.stderr), "total": dropin_report.total(record.stderr),
            "notes": dropin_report.notes(record.stderr)}
