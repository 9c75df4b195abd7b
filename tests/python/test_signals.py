"""Stopping `mpiopt` (SIGTERM from `timeout` or a batch system, ^C's SIGINT, a hang-up) ends the
MPI and SMPI jobs it started (mpiopt/jobs.py): real jobs, real signals, and a scan of /proc for
every process that carries the test's marker in its environment."""
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from mpiopt import jobs, mpi
from mpiopt.simulation import smpi
from conftest import require_build

# MPI_Init, a file per rank in argv[1] to say so, then a minute's wait. poll(), not sleep():
# smpicc makes sleep() a simulated one, which would end at once in real time.
SLEEPER = r"""
#include <mpi.h>
#include <poll.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d", argv[1], rank);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
    poll(NULL, 0, 60000);
    MPI_Finalize();
    return 0;
}
"""
MARKER = "MPIOPT_TEST_MARKER"


def marked(marker: str) -> list[int]:
    """Live processes (zombies left out) whose environment carries MARKER=marker."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
        except (OSError, IndexError):
            continue
        if state != b"Z" and needle in environ.split(b"\0"):
            found.append(int(entry))
    return found


def describe(pids) -> str:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            out.append(f"{pid}: {cmdline}")
        except OSError:
            pass
    return "; ".join(out)


def wait_for(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"after {seconds} s: {what}")


@pytest.fixture
def marker():
    """A fresh marker; whatever carries it at the end is killed, so that a failing test leaves
    no job behind on a machine others use."""
    m = uuid.uuid4().hex
    yield m
    for pid in marked(m):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def default_signals():
    for s in jobs.SIGNALS:
        signal.signal(s, signal.SIG_DFL)


def stop_mpiopt(args, tmp_path, marker, ready_files, signum, flavour_env=None):
    """Starts `mpiopt ARGS…` with the marker in its environment, waits until every file of
    ready_files exists (the job's ranks are up), sends `signum` to mpiopt alone and checks that it
    exits with 128 + signum and that within a few seconds no process of its job is left."""
    env = dict(os.environ, **{MARKER: marker}, **(flavour_env or {}))
    out, err = tmp_path / "mpiopt.out", tmp_path / "mpiopt.err"
    with open(out, "w") as o, open(err, "w") as e:
        # its own session: the signal goes to mpiopt only, as `kill PID` or `timeout` sends it;
        # the signals at their defaults, as from a terminal, where the suite itself ignores one
        # (run under nohup, every process it starts inherits SIGHUP ignored, and mpiopt keeps an
        # ignored signal ignored)
        proc = subprocess.Popen([sys.executable, "-m", "mpiopt", *map(str, args)], stdout=o,
                                stderr=e, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True, preexec_fn=default_signals)
    try:
        def ready():
            if proc.poll() is not None:
                raise AssertionError(f"mpiopt ended early ({proc.returncode}): "
                                     f"{err.read_text()[-2000:]}")
            return all(f.exists() for f in ready_files)
        wait_for(ready, 90, f"the job's ranks did not start: {err.read_text()[-2000:]}")
        job = [p for p in marked(marker) if p != proc.pid]
        assert job, "no process of the job carries the marker"
        os.kill(proc.pid, signum)
        status = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    wait_for(lambda: not marked(marker), 5,
             f"processes of the job left: {describe(marked(marker))}")
    assert status == 128 + signum, (status, err.read_text()[-2000:])
    assert "Traceback" not in err.read_text(), err.read_text()[-2000:]


@pytest.fixture(scope="module")
def sleeper_source(tmp_path_factory):
    path = tmp_path_factory.mktemp("signals") / "sleeper.c"
    path.write_text(SLEEPER)
    return path


def sleeper(source, flavour: str):
    exe = source.parent / f"sleeper-{flavour}"
    if not exe.exists():
        subprocess.run([f"mpicc.{flavour}", "-o", str(exe), str(source)], check=True)
    return exe


# ---- jobs.run itself ----

def test_run_is_subprocess_run(tmp_path):
    r = jobs.run(["sh", "-c", "cat; echo err >&2; pwd; exit 3"], input="in\n", capture_output=True,
                 text=True, cwd=tmp_path, env=dict(os.environ, X="1"))
    assert (r.returncode, r.stdout, r.stderr) == (3, f"in\n{tmp_path}\n", "err\n")
    with pytest.raises(subprocess.CalledProcessError):
        jobs.run(["false"], check=True)


# a launcher whose "rank" sits in a process group of its own (as Open MPI's do) and ignores
# SIGTERM: only a kill of the whole session, SIGKILL after the grace, ends it
TREE = """
import os, subprocess, sys, time
subprocess.Popen(["sh", "-c", "trap '' TERM; touch ready; exec sleep 60"], process_group=0)
print("started", flush=True)
time.sleep(60)
"""


def test_timeout_ends_every_process_of_the_job(tmp_path, marker):
    env = dict(os.environ, **{MARKER: marker})
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as e:
        jobs.run([sys.executable, "-c", TREE], capture_output=True, text=True, env=env,
                 cwd=tmp_path, timeout=4, grace=0.5)
    assert (tmp_path / "ready").exists(), "the job's child had not started within the timeout"
    assert b"started" in e.value.stdout          # the output so far, as subprocess.run gives it
    assert time.monotonic() - t0 < 10
    assert not marked(marker), describe(marked(marker))


# ---- the commands ----

def test_simulation_ends_on_sigterm(tmp_path, marker, sleeper_source):
    """An SMPI job (smpirun, through smpi.smpirun: `mpiopt simulate`, `scaling --simulate`)."""
    if not smpi.available():
        pytest.skip("SimGrid SMPI is not installed")
    stop_mpiopt(["scaling", "run", "--ranks", "2", "--simulate", "--platform", "cluster", "--",
                 sleeper_source, tmp_path], tmp_path, marker, [tmp_path / "rank-0"],
                signal.SIGTERM)


def test_mpi_run_job_ends_on_sigterm(tmp_path, marker, sleeper_source):
    """A job of mpi.run, the launch of `bench`, `tune`, `scaling` and the benchmarks."""
    if "openmpi" not in mpi.available_flavours():
        pytest.skip("Open MPI is not installed")
    exe = sleeper(sleeper_source, "openmpi")
    stop_mpiopt(["scaling", "run", "--ranks", "2", "--mpi", "openmpi", "--", exe, tmp_path],
                tmp_path, marker, [tmp_path / "rank-0", tmp_path / "rank-1"], signal.SIGTERM)


@pytest.mark.parametrize("flavour,signum", [("openmpi", signal.SIGTERM), ("openmpi", signal.SIGINT),
                                            ("openmpi", signal.SIGHUP), ("mpich", signal.SIGTERM)],
                         ids=["openmpi-TERM", "openmpi-INT", "openmpi-HUP", "mpich-TERM"])
def test_run_ends_the_job(tmp_path, marker, sleeper_source, flavour, signum):
    """`mpiopt run` (and `mpiopt profile`, which launches through it)."""
    require_build(flavour)
    exe = sleeper(sleeper_source, flavour)
    stop_mpiopt(["run", "-np", "2", "--", exe, tmp_path], tmp_path, marker,
                [tmp_path / "rank-0", tmp_path / "rank-1"], signum)


def test_profile_ends_the_job(tmp_path, marker, sleeper_source):
    require_build("openmpi")
    exe = sleeper(sleeper_source, "openmpi")
    stop_mpiopt(["profile", "-np", "2", "-o", tmp_path / "prof", "--", exe, tmp_path], tmp_path,
                marker, [tmp_path / "rank-0", tmp_path / "rank-1"], signal.SIGTERM)
