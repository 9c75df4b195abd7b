"""auto's measured choice above two ranks (src/coll/select/measured.c, select.h's
mpiopt_selection_reproducible): the vendor is a candidate wherever the order of the reduction
cannot change the result (integer sums here), and never for a floating-point sum unless
MPIOPT_REPRODUCIBLE=0, at p = 4, where the built-in rows name shared_memory and auto measures.
MPIOPT_TEST_SLOW_CANDIDATES makes the vendor win its trials on any machine; the program
(tests/c/plain_measured_order.c, through the drop-in) checks every result exactly."""
from __future__ import annotations

import os
import re

import pytest

from mpiopt import dropin_report, mpi
from conftest import require_build

MEASURED = re.compile(r"^mpiopt: allreduce p=(\d+) bytes<=(\d+): measured (.*), chose (\w+)$", re.M)
P = 4


def run(flavour, **extra):
    env = dict(os.environ, MPIOPT_VERBOSE="1", MPIOPT_REPORT="1",
               MPIOPT_TEST_SLOW_CANDIDATES="0.01", **extra)
    if flavour == "mpich":
        # MPICH polls an oversubscribed node, which keeps the vendor out of auto's candidates
        # (the same condition as at p = 2): let it in, to see what the order rule alone does;
        # its polling then costs tens of milliseconds a call here, which the knob must exceed
        env["MPIOPT_YIELD"] = "0"
        env["MPIOPT_TEST_SLOW_CANDIDATES"] = "0.1"
    r = mpi.run(flavour, P, [mpi.binary(flavour, "test-plain_measured_order")], preload=True,
                timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert re.search(r"^plain_measured_order: \d+ checks, 0 failures$", r.stdout, re.M), \
        r.stdout[-2000:] + r.stderr[-3000:]
    decisions = {int(b): (re.findall(r"(\w+) [0-9.]+ us", times), chosen)
                 for p, b, times, chosen in MEASURED.findall(r.stderr) if int(p) == P}
    assert set(decisions) == {4096, 8192}, r.stderr[-3000:]
    return r, decisions


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_vendor_kept_by_measurement_for_an_integer_sum_never_for_a_float_sum(flavour):
    require_build(flavour)
    r, decisions = run(flavour)
    ints, doubles = decisions[4096], decisions[8192]
    assert "vendor" in ints[0] and ints[1] == "vendor", r.stderr[-3000:]
    assert "vendor" not in doubles[0] and doubles[1] != "vendor", r.stderr[-3000:]
    rows = dropin_report.rows(r.stderr)
    # the report says where measurement kept the vendor; the float reduces of 8 B are mpiopt's
    assert "vendor faster in auto's trials" in rows["MPI_Allreduce"].vendor_reasons, r.stderr[-3000:]
    assert rows["MPI_Reduce"].by_vendor == 0, r.stderr[-3000:]


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_reproducible_0_lets_the_vendor_take_float_sums(flavour):
    require_build(flavour)
    r, decisions = run(flavour, MPIOPT_REPRODUCIBLE="0")
    doubles = decisions[8192]
    assert "vendor" in doubles[0], r.stderr[-3000:]
    if flavour == "openmpi":    # Open MPI yields while it waits: its trials win by the knob
        assert doubles[1] == "vendor", r.stderr[-3000:]
        # and the built-in rows' vendor for reduces of up to 181 B at p = 4
        assert dropin_report.rows(r.stderr)["MPI_Reduce"].by_vendor > 0, r.stderr[-3000:]
