"""The Spack recipe, for real: `make spack-check` (packaging/spack/check.sh) installs mpiopt from
this tree with a Spack checkout, offline, against the system's Open MPI and MPICH as externals,
`spack load`s each install and runs a preloaded allreduce at np 2 by the installed `mpiopt run`
from a directory outside the tree.

Runs where a Spack checkout is found: SPACK=<checkout> in the environment, else a `spack` command
on PATH (its checkout). Elsewhere (CI has no Spack) it is skipped, saying so, even with
MPIOPT_REQUIRE_BUILD=1: Spack is not part of the build that variable requires. 4-18 minutes
on two cores (two concretizations and two builds); the pip venv it needs (clingo for Spack, the
command's dependencies) is made once in ~/.cache/mpiopt/spack-venv."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "packaging" / "spack" / "check.sh"


def spack_checkout() -> Path | None:
    """The Spack checkout to test with: $SPACK, else the checkout of `spack` on PATH."""
    env = os.environ.get("SPACK")
    if env:
        return Path(env)
    found = shutil.which("spack")
    if found:
        root = Path(found).resolve().parent.parent      # CHECKOUT/bin/spack
        if (root / "lib" / "spack").is_dir():
            return root
    return None


SPACK = spack_checkout()
# the MPIs the check installs against: Debian's, where their wrappers are installed
MPIS = [m for m in ("openmpi", "mpich") if shutil.which(f"mpicc.{m}")]


@pytest.mark.skipif(SPACK is None, reason="no Spack checkout (set SPACK=<a Spack checkout>, or put its "
                                          "bin/spack on PATH): the Spack recipe is not checked here")
def test_spack_installs_mpiopt_and_its_drop_in_takes_the_allreduce(tmp_path):
    if not (SPACK / "bin" / "spack").exists():
        pytest.fail(f"SPACK={SPACK} is not a Spack checkout (no bin/spack)")
    if not MPIS:
        pytest.skip("neither mpicc.openmpi nor mpicc.mpich is installed: no external MPI for Spack")
    env = dict(os.environ, MPIOPT_SPACK_MPIS=" ".join(MPIS), TMPDIR=str(tmp_path))
    env.pop("MPIOPT_SPACK_KEEP", None)
    # from outside the tree, as a user would: the script finds the tree from its own path
    r = subprocess.run(["bash", str(CHECK), str(SPACK)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=3600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    for m in MPIS:
        # the install's section: from its header line to the next one
        section = re.search(rf"^spack-check: ---- mpiopt@\S+.*\^{m}@.*?(?=^spack-check: (?:ok|FAILED))",
                            out, re.M | re.S)
        assert section, f"no section for {m}:\n{out[-4000:]}"
        text = section.group(0)
        assert "allreduce check: ok" in text, text
        taken = re.search(r"^  \| mpiopt: (\d+) of (\d+) reduction calls ran mpiopt's algorithms$", text, re.M)
        assert taken and int(taken.group(1)) > 0, text
        # the row of the MPI_Allreduce calls: all 15 a rank of both ranks, by mpiopt
        row = re.search(r"^  \|   MPI_Allreduce\s+(\d+)\s+(\d+)\s+(\d+)", text, re.M)
        assert row and int(row.group(1)) == 30 and int(row.group(2)) == 30, text
        # the library preloaded is the Spack install's, as is the command
        preload = re.search(r'"ld_preload": "([^"]+)"', text).group(1)
        prefix = re.search(r"^  MPIOPT_PREFIX=(\S+)$", text, re.M).group(1)
        assert preload == f"{prefix}/lib/libmpiopt.so"
        assert f"mpiopt command: {prefix}/bin/mpiopt" in text
    assert "spack-check: passed" in out
