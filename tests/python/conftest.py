"""What every pytest suite shares: the `mpiopt` command runner and the build paths.

A test that needs a build asks for the `flavours` fixture (or uses `needs_build`): on a
developer's machine without `make build` those tests are skipped, but where the build is
required (MPIOPT_REQUIRE_BUILD=1, set by .ci/run) a missing build fails them instead."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mpiopt import mpi

# not `python -m mpiopt.cli`: that runs cli.py as __main__, a second copy of the module whose
# UsageError the commands do not raise, so usage errors would not map to exit status 2
MAIN = "import sys; from mpiopt.cli import main; sys.exit(main())"

BUILT_FLAVOURS = mpi.built_flavours()
REQUIRE_BUILD = os.environ.get("MPIOPT_REQUIRE_BUILD", "") not in ("", "0")


def run_mpiopt(*args, cwd=None, env=None, timeout=600, input=None) -> subprocess.CompletedProcess:
    """`mpiopt ARGS…` as a user runs it: a new process, text output captured."""
    return subprocess.run([sys.executable, "-c", MAIN, *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=timeout, input=input)


@pytest.fixture
def mpiopt():
    """The command runner: mpiopt("bench", "--help").returncode == 0."""
    return run_mpiopt


def require_build(reason: str = "libmpiopt not built (make build)"):
    """Skip (developer machine) or fail (MPIOPT_REQUIRE_BUILD=1) when nothing is built."""
    if BUILT_FLAVOURS:
        return
    if REQUIRE_BUILD:
        pytest.fail(f"{reason}; MPIOPT_REQUIRE_BUILD=1 makes this a failure")
    pytest.skip(reason)


@pytest.fixture
def flavours():
    """The MPI flavours built here (at least one, or the test is skipped / failed)."""
    require_build()
    return list(BUILT_FLAVOURS)
