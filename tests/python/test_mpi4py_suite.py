"""mpi4py's own reduction tests under the drop-in (issue 69): the outcome must be the vendor's.

mpi4py's authors test what a collective may and may not write (an in-place reduce-scatter leaves
the caller's data past the rank's block), and their suite found what ours did not. Here mpi4py is
built from its source release (the same version as this environment's mpi4py, downloaded from
PyPI) against each Debian MPI's mpicc, and its test modules test_cco_buf, test_cco_nb_buf,
test_cco_pr_buf, test_op and test_cco_vec run under that MPI's launcher, vendor alone and with
libmpiopt preloaded (MPIOPT_REPORT on: mpiopt must take the reductions, not hand them on):
MPICH 4.0.2 at np 2 (3 and 4 in the full tier: MPICH polls while oversubscribed, and its own
run of these modules takes minutes there) and Open MPI 4.1.4 at np 2, 3. Both runs must pass with the same counts
of tests run and skipped. A failing test leaves mpi4py's other ranks waiting in the next
collective, so each run has a time limit that ends the job whole.

The builds are kept outside the tree, like test_pip_install's (~/.cache/mpiopt/mpi4py-VERSION-
FLAVOUR: a CI's fresh clones share them); on a cold cache CFLAGS=-O0 keeps mpi4py's one large C
file to about a minute a build on 2 cores."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import REQUIRE_BUILD, report_rows, require_build
from mpiopt import mpi

MODULES = ["test_cco_buf", "test_cco_nb_buf", "test_cco_pr_buf", "test_op", "test_cco_vec"]
# every reduction mpiopt takes, as mpi4py calls it (MPICH 4 is an MPI-4 library: the _c forms)
TAKEN = ("Allreduce", "Reduce", "Iallreduce", "Ireduce", "Reduce_scatter", "Ireduce_scatter",
         "Reduce_scatter_block", "Ireduce_scatter_block", "Scan", "Exscan")


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mpiopt"


def _version() -> str:
    r = subprocess.run([sys.executable, "-c", "import mpi4py; print(mpi4py.__version__)"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail("mpi4py is not installed in this environment (make venv)")
    return r.stdout.strip()


def _fail_or_skip(reason: str):
    if REQUIRE_BUILD:
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def mpi4py_source():
    """mpi4py's source release, unpacked (its test/ directory is not in the wheel)."""
    version = _version()
    root = _cache() / f"mpi4py-{version}-src"
    if not (root / "test" / "main.py").exists():
        download = _cache() / "downloads"
        download.mkdir(parents=True, exist_ok=True)
        tarball = download / f"mpi4py-{version}.tar.gz"
        if not tarball.exists():
            r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                                "--no-binary", ":all:", f"mpi4py=={version}", "-d", str(download)],
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0 or not tarball.exists():
                _fail_or_skip(f"could not download mpi4py {version}'s source: {r.stderr[-1000:]}")
        tmp = root.with_name(root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        with tarfile.open(tarball) as t:
            t.extractall(tmp, filter="data")
        shutil.rmtree(root, ignore_errors=True)
        (tmp / f"mpi4py-{version}").rename(root)
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def built_mpi4py(flavour: str, source: Path) -> Path:
    """A directory holding mpi4py built against `flavour`'s Debian MPI from the release tarball
    `source` was unpacked from (pip builds it in a directory of its own: a build in `source`
    itself would leave objects there that the next flavour's build would take as up to date)."""
    version = source.name.split("-")[1]
    tarball = _cache() / "downloads" / f"mpi4py-{version}.tar.gz"
    target = _cache() / f"mpi4py-{version}-{flavour}"
    if (target / "mpi4py" / "__init__.py").exists():
        return target
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    env = dict(os.environ, MPICC=f"mpicc.{flavour}", CFLAGS="-O0")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--no-cache-dir", "--target", str(tmp), str(tarball)],
                       capture_output=True, text=True, env=env, timeout=1200)
    if r.returncode != 0:
        _fail_or_skip(f"could not build mpi4py against {flavour}: {r.stderr[-2000:]}")
    linked, _ = mpi.linked_mpi(next((tmp / "mpi4py").glob("MPI.*.so")))
    assert linked == flavour, f"mpi4py built with MPICC=mpicc.{flavour} links {linked}'s MPI"
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def outcome(r) -> tuple[list[int], list[str], list[str]]:
    """Every rank's (tests run, OK or FAILED, the counts after it: skipped=…, failures=…), each
    sorted over the ranks. Every rank of mpi4py's runner prints its summary and the launcher
    interleaves their lines ("OK" from one rank may come between another's "OK" and its
    " (skipped=70)"; another's "Ran 313 tests" may follow an "OK" on its line), so the parts are
    collected apart, each whole as one write makes it."""
    ran = sorted(int(n) for n in re.findall(r"Ran (\d+) tests? in ", r.stderr))
    # a verdict may run into another rank's next line: "OKRan 313 tests in 1.479s"
    verdicts = sorted(re.findall(r"(?<![A-Za-z])(OK|FAILED)(?= \(|$|-|Ran \d)", r.stderr, re.M))
    counts = sorted(re.findall(r"\b((?:skipped|failures|errors|expected failures)=\d+)",
                               r.stderr))
    assert ran, f"no unittest summary (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return ran, verdicts, counts


def run_suite(flavour, p, source, built, preload):
    env = dict(os.environ, PYTHONPATH=str(built), MPIOPT_REPORT="1")
    args = [sys.executable, str(source / "test" / "main.py"), "-q"]
    for m in MODULES:
        args += ["-i", m]
    try:
        # the suite's own run takes seconds; a failure leaves ranks waiting for each other
        # MPICH's own run at np 4 (full tier) took over 600 s here
        return mpi.run(flavour, p, args, preload=preload, env=env,
                       timeout=180 if p == 2 else 600 if p == 3 else 1800)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"mpi4py's tests hung (np {p}, drop-in {preload}): "
                    f"{(e.stderr or b'')[-3000:]!r}")


# MPICH polls while oversubscribed: at np 3 its own run of these modules takes 200 s here (np 2:
# seconds), so np 3 and 4 are the full tier's
@pytest.mark.parametrize("flavour,p", [("mpich", 2),
                                       pytest.param("mpich", 3, marks=pytest.mark.full),
                                       pytest.param("mpich", 4, marks=pytest.mark.full),
                                       ("openmpi", 2), ("openmpi", 3)])
def test_mpi4pys_reduction_tests_pass_as_with_the_vendor(flavour, p, mpi4py_source):
    require_build(flavour)
    if flavour not in mpi.FLAVOURS:
        pytest.skip(f"no {flavour}")
    built = built_mpi4py(flavour, mpi4py_source)
    vendor = run_suite(flavour, p, mpi4py_source, built, preload=False)
    dropin = run_suite(flavour, p, mpi4py_source, built, preload=True)
    got_v, got_d = outcome(vendor), outcome(dropin)
    failed = [line for line in dropin.stderr.splitlines() if line.startswith(("FAIL:", "ERROR:"))]
    assert got_d == got_v, f"vendor: {got_v}; drop-in: {got_d}\n" + "\n".join(failed) + \
        dropin.stderr[-3000:]
    ran, verdicts, _ = got_d
    assert verdicts and set(verdicts) == {"OK"} and dropin.returncode == 0, dropin.stderr[-3000:]
    assert min(ran) > 200, ran
    # mpiopt ran them: every reduction entry point mpi4py called is mpiopt's, none handed on
    rows = report_rows(dropin.stderr)
    suffix = "_c" if flavour == "mpich" else ""
    for call in TAKEN:
        name = f"MPI_{call}{suffix}"
        assert name in rows, (name, sorted(rows))
        assert rows[name][1] > 0, (name, rows[name])


def test_outcome_reads_interleaved_summaries():
    """The summaries of two ranks as the launcher interleaved them in runs seen here: each rank's
    count, verdict and its counts found wherever they stand."""
    seen = [
        "Ran 313 tests in 1.5s\n\nOK\nRan 313 tests in 1.4s\nOK (skipped=70)\n (skipped=70)\n",
        "----\nRan 313 tests in 1.487s\n\n----\nOKRan 313 tests in 1.479s\n\nOK (skipped=70)\n"
        " (skipped=70)\n",
        "Ran 313 tests in 1.5s\n\nFAILED (failures=1)\n----Ran 313 tests in 1.6s\nOK (skipped=70)\n",
    ]
    want = [([313, 313], ["OK", "OK"], ["skipped=70", "skipped=70"]),
            ([313, 313], ["OK", "OK"], ["skipped=70", "skipped=70"]),
            ([313, 313], ["FAILED", "OK"], ["failures=1", "skipped=70"])]
    for text, expected in zip(seen, want):
        assert outcome(subprocess.CompletedProcess([], 0, "", text)) == expected, text
