"""One `mpiopt advise` from start to end: the profile run, each step's preparation, the rounds of
interleaved runs, and the results the report is made from. A step that cannot run is recorded
with its one-line reason; only a program that fails as it is stops everything."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..console import console as report_console
from ..errors import UsageError
from ..placement import PlacementError, slurm
from ..profile import PROFILE_NAME, load
from . import launches, measure, output, steps

TITLES = {"baseline": "as it is", "dropin": "+ drop-in", "placement": "+ rank order",
          "transformed": "+ transformed"}


class Session:
    def __init__(self, args, program: list[str], out: Path, launcher: launches.Launcher):
        self.args, self.program, self.out, self.launcher = args, program, out, launcher
        self.variants: list[launches.Variant] = []
        self.records: dict[str, list[launches.RunRecord]] = {}
        self.skipped: dict[str, str] = {}        # step -> why it did not run
        self.results: dict = {}

    # --- preparation -------------------------------------------------------------------------
    def _profile(self, progress, task) -> tuple[Path, steps.Profile]:
        base = launches.Variant("baseline", self.program, preload=False)
        self.flavour = self.launcher.check(base)
        progress.update(task, description="profile (call sites)")
        rec = self.launcher.run(base, 0, sites=True)
        progress.advance(task)
        if not rec.ok:
            raise UsageError(f"the program fails as it is, so there is nothing to advise on: "
                             f"{rec.error} (its output: {rec.directory})")
        path = self.out / PROFILE_NAME
        shutil.copyfile(rec.directory / PROFILE_NAME, path)
        self.variants.append(base)
        return path, load(path)

    def _dropin(self) -> launches.Variant | None:
        v = launches.Variant("dropin", self.program, preload=True)
        try:
            self.launcher.check(v)
        except UsageError as e:
            hint = " (mpiopt advise --mpi PREFIX builds it)" if "uses the MPI at" in str(e) else ""
            self.skipped["dropin"] = f"{e}{hint}"
            return None
        self.variants.append(v)
        return v

    @property
    def _with_dropin(self) -> bool:
        """The later steps build on the drop-in where it could run (else on the program alone)."""
        return "dropin" not in self.skipped

    def _placement(self, prof) -> None:
        try:
            plan = steps.plan_placement(prof, self.args.np, self.args.ppn, self.out)
        except steps.StepSkipped as e:
            self.skipped["placement"] = str(e)
            return
        info = plan.to_json()
        info["notes"] = []
        hosts, where = self._hosts()
        launch = (f"mpiopt run -np {self.args.np} --rank-order {plan.order_file} --ppn {plan.ppn} "
                  f"--hosts {','.join(hosts) or 'H1,H2,…'} -- {' '.join(self.program)}"
                  f"   (MPICH, Cray: MPICH_RANK_ORDER={plan.order_file} with MPICH_RANK_REORDER_METHOD=3)")
        info["launch"] = launch
        if hosts:
            if len(hosts) * plan.ppn < self.args.np:
                self.skipped["placement"] = (f"{where} gives {len(hosts)} nodes of {plan.ppn}: "
                                             f"too few for {self.args.np} ranks")
                return
            info["how"] = f"run with the order on {where}"
            self.variants.append(launches.Variant("placement", self.program, self._with_dropin,
                                                  str(plan.order_file), ",".join(hosts), plan.ppn))
        else:
            info["how"] = "simulated with SMPI: this is one node, the order cannot be launched here"
            info["simulated"] = []
            try:
                from ..simulation.matrix import simulate_orders
                nbytes, nmsgs = prof.matrix()
                info["simulated"] = simulate_orders(nbytes, nmsgs, plan.ppn,
                                                    {"SMP (ranks in order)": list(range(self.args.np)),
                                                     "order found": plan.order})
                info["notes"].append("the simulation replays the measured point-to-point matrix "
                                     "on a cluster of nodes of --ppn ranks, not the whole program")
            except ImportError as e:
                info["notes"].append(f"no simulation: {e}")
            except (RuntimeError, UsageError) as e:
                info["notes"].append(f"no simulation: {str(e).splitlines()[0]}")
        self.results["placement"] = info

    def _hosts(self) -> tuple[list[str], str]:
        """The nodes the placement step can launch its order on, and where they come from:
        --hosts, else the nodes of the Slurm allocation this runs in (more than one), else none."""
        if self.args.hosts:
            return self.args.hosts.split(","), "--hosts"
        if slurm.in_allocation(os.environ):
            try:
                hosts = slurm.allocation_hosts(os.environ)
            except PlacementError:
                return [], ""
            if len(hosts) > 1:
                return hosts, "the Slurm allocation's nodes"
        return [], ""

    def _transform(self, prof_path: Path, prof) -> None:
        if not self.args.source:
            self.skipped["transformed"] = "no --source DIR --build CMD given"
            return
        try:
            built = steps.transform_and_build(prof_path, prof, Path(self.args.source),
                                              self.args.build, self.program, self.flavour, self.out)
        except steps.StepSkipped as e:
            self.skipped["transformed"] = str(e)
            return
        self.results["transform"] = built.to_json()
        self.variants.append(launches.Variant("transformed", built.program, self._with_dropin))

    # --- the runs ----------------------------------------------------------------------------
    def run(self) -> dict:
        progress = Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=report_console(stderr=True),
                            disable=self.args.json or not os.isatty(2), transient=True)
        with progress:
            task = progress.add_task("profile", total=1 + 4 * self.args.repeat)
            prof_path, prof = self._profile(progress, task)
            self.results["profile"] = steps.profile_summary(prof)
            self._dropin()
            progress.update(task, description="placement")
            self._placement(prof)
            progress.update(task, description="transformation (build)")
            self._transform(prof_path, prof)
            progress.update(task, total=1 + len(self.variants) * self.args.repeat)
            for rep in range(self.args.repeat):
                for v in self.variants:
                    progress.update(task, description=f"round {rep + 1}/{self.args.repeat}: {TITLES[v.name]}")
                    self.records.setdefault(v.name, []).append(self.launcher.run(v, rep))
                    progress.advance(task)
        return self._assemble()

    def _assemble(self) -> dict:
        r = self.results
        r.update({"program": self.program, "ranks": self.args.np, "flavour": self.flavour,
                  "repeat": self.args.repeat, "check": self.args.check, "steps": [], "labels": []})
        cores = os.cpu_count() or 1
        if self.args.np > cores:
            r["labels"].append(f"{self.args.np} ranks on {cores} cores (oversubscribed): the times are "
                               "not what a machine with a core a rank gives, and an MPI that polls "
                               "while it waits is slowed most; read the changes as this machine's only")
        r["labels"].append("every run has the profiler in front (the same for every step); times are "
                           "medians of the rounds, the spread is (max - min) / median; \"no measurable "
                           "change\": the runs of the two steps overlap")
        reference, why_not = measure.baseline_reference(self.records.get("baseline", []), self.args.check)
        previous = None
        for name in ("baseline", "dropin", "placement", "transformed"):
            step = {"name": name, "title": TITLES[name]}
            if name in self.skipped:
                step.update(status="skipped", status_line=f"not run: {self.skipped[name]}")
                r["steps"].append(step)
                continue
            recs = self.records.get(name)
            if recs is None:
                if name == "placement" and "placement" in r:
                    step.update(status="simulated", status_line="simulated (see Placement)")
                    r["steps"].append(step)
                continue
            failed = [x for x in recs if not x.ok]
            wall, mpi_t = measure.figures(recs, "wall"), measure.figures(recs, "mpi")
            step.update(status="ran", runs=f"{len(recs) - len(failed)}/{len(recs)}",
                        wall=wall.to_json() if wall else None, mpi=mpi_t.to_json() if mpi_t else None,
                        failures=[x.error for x in failed])
            if failed:
                step["status_line"] = f"{len(failed)} run(s) failed: {failed[0].error}"
            if name != "baseline":
                step["check"] = measure.check_output(reference, why_not, recs, self.args.check).to_json()
                if previous and wall and previous[1]:
                    change = measure.Change(previous[1], wall)
                    step["change"] = {**change.to_json(), "against": previous[0]}
                    if mpi_t and previous[2]:
                        step["mpi_change"] = measure.Change(previous[2], mpi_t).to_json()
            if wall:
                previous = (name, wall, mpi_t)
                step["median_run"] = self._median_run(recs)
            r["steps"].append(step)
        measured = [s for s in r["steps"] if s.get("wall")]
        if len(measured) > 2:
            whole = measure.Change(measure.Figures(measured[0]["wall"]["values"]),
                                   measure.Figures(measured[-1]["wall"]["values"]))
            r["overall"] = {**whole.to_json(), "from": measured[0]["name"], "to": measured[-1]["name"]}
            r["labels"].insert(0, f"from \"{measured[0]['title']}\" to \"{measured[-1]['title']}\": "
                               f"{whole.ratio:.3f} x the time ({whole.verdict})")
        dropin = self.records.get("dropin", [])
        if dropin and dropin[0].ok:
            rep = launches.report_of(dropin[0])
            r["dropin_report"] = {"rows": [vars(x) for x in rep["rows"].values()],
                                  "total": rep["total"], "notes": rep["notes"]}
        return r

    def _median_run(self, recs: list[launches.RunRecord]) -> dict:
        ok = sorted((x for x in recs if x.ok), key=lambda x: x.wall)
        x = ok[(len(ok) - 1) // 2]
        return {"directory": str(x.directory), "wall": x.wall, "calls": x.calls, "per_rank": x.per_rank}

    def plots(self) -> dict:
        measured = [s for s in self.results["steps"] if s.get("median_run")]
        out = {}
        if output.plot_steps(self.out / "steps.png", measured):
            out["steps"] = "steps.png"
        if len(measured) >= 1:
            first, last = measured[0], measured[-1]
            if output.plot_calls(self.out / "mpi-calls.png", first["median_run"]["calls"],
                                 last["median_run"]["calls"], last["title"]):
                out["calls"] = "mpi-calls.png"
            ranks = {f"{first['title']}": first["median_run"]["per_rank"]}
            if last is not first:
                ranks[last["title"]] = last["median_run"]["per_rank"]
            if output.plot_ranks(self.out / "ranks.png", ranks):
                out["ranks"] = "ranks.png"
        return out
