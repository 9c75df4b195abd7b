"""Nonblocking and persistent allreduce / reduce with mpiopt's algorithms (src/coll/entry/nonblocking.c,
schedule.c, requests.c), on both MPIs:

- the C API through the collectives checker (tests/c/coll_check.c --mode nonblocking|persistent):
  every algorithm of the registry, op, type, count, in place, root and communicator against the
  rank-order reference, as for the blocking calls, at 1 to 17 ranks;
- the LD_PRELOAD drop-in in a plain program (tests/c/plain_nonblocking.c): mpiopt's requests
  mixed with the vendor's in MPI_Waitall / Testall / Waitany / Testsome, several collectives in
  flight, MPI_Start / Startall, MPI_Request_free on an active persistent request;
- the transformer's output: the examples and the transformer's own cases, turned nonblocking and
  persistent by `mpiopt transform`, run with the drop-in and each algorithm forced. They must
  print exactly what the untransformed program prints with the same algorithm (a schedule is
  the blocking algorithm replayed: same messages, same order of arithmetic, same bits), and the
  verbose log must show the schedule ran."""
import os
from pathlib import Path

import pytest

import difftest
from mpiopt import algorithms, mpi
from conftest import rank_param, require_build
from test_coll import assert_all_checks_passed, checker_options, run_checker

ROOT = mpi.repo_root()
MODES = ("nonblocking", "persistent")


def mpiopt_algorithms(flavour):
    return algorithms.names(flavour, kinds=("mpiopt",))


# ---- the C API against the reference ----

@pytest.mark.parametrize("flavour,p,mode", [rank_param(f, p, mode) for f in mpi.FLAVOURS
                                            for p in (1, 2, 3, 4, 7, 17) for mode in MODES])
def test_checker_matches_reference(flavour, p, mode):
    require_build(flavour)
    assert_all_checks_passed(run_checker(flavour, p, checker_options(p) + ["--mode", mode],
                                         timeout=400), p)


# ---- the drop-in: mixed request arrays ----

def run_plain(flavour, p, env, *args):
    exe = mpi.binary(flavour, "test-plain_nonblocking")
    r = mpi.run(flavour, p, [exe, *args], preload=True, env=dict(os.environ, **env), timeout=180)
    assert r.returncode == 0 and "0 failures" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]
    return r


def schedule_lines(stderr, call):
    return [l for l in stderr.splitlines() if l.startswith(f"mpiopt: {call} ")]


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
@pytest.mark.parametrize("p", [3, 4])
def test_dropin_mixed_requests_every_algorithm(flavour, p):
    require_build(flavour)
    for alg in mpiopt_algorithms(flavour):
        r = run_plain(flavour, p, {"MPIOPT_ALLREDUCE": alg, "MPIOPT_REDUCE": alg,
                                   "MPIOPT_VERBOSE": "1"}, "1000", "free-active")
        lines = schedule_lines(r.stderr, "iallreduce") + schedule_lines(r.stderr, "allreduce_init")
        assert len(lines) == 2, r.stderr[-2000:]
        # an algorithm that needs a power of two is replaced at p=3 (as in the blocking calls)
        if p == 4:
            assert all(f": {alg}, a schedule of" in l for l in lines), lines
        assert schedule_lines(r.stderr, "ireduce"), r.stderr[-2000:]


@pytest.mark.parametrize("flavour,p", [rank_param(f, p) for f in mpi.FLAVOURS for p in (1, 2, 5, 17)])
def test_dropin_mixed_requests_auto(flavour, p):
    """auto: mpiopt's schedules or the vendor's requests, whichever auto picks per call."""
    require_build(flavour)
    for count in ("1", "1000", "70000"):
        run_plain(flavour, p, {}, count)


# ---- the transformer's output with the drop-in ----

EXAMPLES = {"cg": ["-n", "48", "-i", "30"], "four_allreduce": ["-n", "64", "-i", "3"],
            "game_of_life": ["-n", "24", "-i", "12"], "six_bcasts": ["-n", "60", "-i", "3"]}
# the examples with allreduces: every algorithm forced; the others (allgather, broadcasts) run
# once, for the drop-in's wait family on the vendor's requests
ALLREDUCE_EXAMPLES = ("cg", "four_allreduce")
# p2p.c is left out: its point-to-point calls go to the vendor whatever the drop-in does, and its
# one collective adds nothing the other cases lack (test_transform_p2p.py runs it; test time budget)
CASES = sorted(p.stem for p in (ROOT / "tests" / "transform_cases").glob("*.c") if p.stem != "p2p")


@pytest.fixture(scope="module")
def transformed(tmp_path_factory):
    """{(name, flavour): {"original": exe, mode: exe}} for the examples."""
    out = tmp_path_factory.mktemp("nonblocking_examples")
    built = {}
    for name in EXAMPLES:
        source = ROOT / "examples" / f"{name}.c"
        for flavour in mpi.available_flavours():
            entry = built[(name, flavour)] = {}
            entry["original"] = difftest.build(source, flavour, out, f"{name}.original").executable
            for mode in MODES:
                t = difftest.transform(source, mode, out, flavour)
                entry[mode] = difftest.build(t.path, flavour, out).executable
    return built


@pytest.mark.parametrize("name", list(EXAMPLES))
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_transformed_examples_run_mpiopt_algorithms(transformed, name, flavour):
    require_build(flavour)
    entry = transformed[(name, flavour)]
    failures = []
    for np in (2, 3):
        vendor = difftest.reference(entry["original"], flavour, np, EXAMPLES[name])
        for alg in mpiopt_algorithms(flavour) if name in ALLREDUCE_EXAMPLES else ["auto"]:
            env = dict(os.environ, MPIOPT_ALLREDUCE=alg, MPIOPT_REDUCE=alg)
            blocking = difftest.run(entry["original"], flavour, np, EXAMPLES[name], env)
            failures += [f"blocking {alg} np={np}: {d}"
                         for d in difftest.compare_outputs(vendor, blocking)]
            for mode in MODES:
                r = mpi.run(flavour, np, [str(entry[mode]), *EXAMPLES[name]], preload=True,
                            env=dict(env, MPIOPT_VERBOSE="1"), timeout=difftest.RUN_TIMEOUT)
                if r.returncode != 0:
                    failures.append(f"{mode} {alg} np={np}: exit {r.returncode} {r.stderr[-500:]}")
                    continue
                if r.stdout != blocking:
                    failures.append(f"{mode} {alg} np={np}: output differs from the blocking "
                                    f"program's with the same algorithm:\n{r.stdout}\n{blocking}")
                if name not in ALLREDUCE_EXAMPLES:
                    continue
                call = "iallreduce" if mode == "nonblocking" else "allreduce_init"
                ran = schedule_lines(r.stderr, call)
                if not ran or (np == 2 and not all(f": {alg}, a schedule" in l for l in ran)):
                    failures.append(f"{mode} {alg} np={np}: no schedule in the log: {ran}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", CASES)
def test_transformer_cases_with_dropin(name, tmp_path):
    """The transformer's differential harness with the drop-in loaded and algorithms forced: each
    transformed version under each algorithm against the original's one run at that rank count
    (built and transformed once)."""
    envs = {alg: dict(os.environ, MPIOPT_ALLREDUCE=alg, MPIOPT_REDUCE="binomial")
            for alg in ("ring", "recursive_doubling")}
    failures = difftest.check(ROOT / "tests" / "transform_cases" / f"{name}.c", tmp_path,
                              ranks=(1, 2, 3), dropin_envs=envs)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_fortran_program(flavour):
    """MPI_IALLREDUCE / MPI_IREDUCE and the MPI_WAIT family from `use mpi` (Open MPI's Fortran
    library calls PMPI_Wait: mpiopt defines the Fortran names itself)."""
    require_build(flavour)
    exe = mpi.binary(flavour, "ftest-dropin_nonblocking")
    if not exe.exists():
        pytest.skip("no Fortran compiler in this build")
    for forced in ("ring", "recursive_doubling", "auto"):
        env = dict(os.environ, MPIOPT_VERBOSE="1", MPIOPT_ALLREDUCE=forced, MPIOPT_REDUCE=forced)
        r = mpi.run(flavour, 3, [exe], preload=True, env=env, timeout=120)
        assert r.returncode == 0 and "fnonblocking: ok" in r.stdout, r.stdout + r.stderr[-2000:]
        if forced != "auto":
            lines = schedule_lines(r.stderr, "iallreduce")
            assert lines and all(f": {forced}, a schedule" in l for l in lines), r.stderr[-2000:]


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_env_sends_nonblocking_calls_to_the_vendor(flavour):
    require_build(flavour)
    r = run_plain(flavour, 2, {"MPIOPT_NONBLOCKING": "0", "MPIOPT_ALLREDUCE": "ring",
                               "MPIOPT_VERBOSE": "1"}, "1000")
    assert not schedule_lines(r.stderr, "iallreduce") + schedule_lines(r.stderr, "allreduce_init")
    # loaded, and says where the calls went
    assert "mpiopt: nonblocking and persistent calls go to the vendor (MPIOPT_NONBLOCKING=0)" \
        in r.stderr, r.stderr[-2000:]
