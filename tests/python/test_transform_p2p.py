"""Point-to-point rewriting (tests/transform_cases/p2p.c): MPI_Send/MPI_Ssend -> MPI_Isend/
MPI_Issend with the wait before the first write of the buffer, MPI_Recv -> MPI_Irecv with the
wait before the first access of the buffer or the status (which moves to the wait), posting
order unchanged, wildcard receives left blocking and reported; the transformed program prints
what the original prints with both MPIs."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from mpiopt import mpi
from mpiopt.transform import Options, transform_file

sys.path.insert(0, str(Path(__file__).parent))
import difftest  # noqa: E402

CASE = Path(__file__).resolve().parents[1] / "transform_cases" / "p2p.c"
pytestmark = pytest.mark.skipif(not shutil.which("mpicc.openmpi"), reason="needs Open MPI's headers")


def markers(name: str) -> list[int]:
    return [i for i, ln in enumerate(CASE.read_text().splitlines(), 1) if f"/* {name} */" in ln]


def calls_in_text(names: str) -> list[int]:
    return [i for i, ln in enumerate(CASE.read_text().splitlines(), 1) if re.search(rf"\bMPI_({names})\(", ln)]


def test_point_to_point_sites_waits_and_wildcards(tmp_path):
    r = transform_file(CASE, Options())
    by_line = {s["line"]: s for s in r.sites}
    assert sorted(by_line) == calls_in_text("Send|Recv|Allreduce")
    sites = sorted(r.sites, key=lambda s: s["line"])

    def site_before(line):
        return max((s for s in sites if s["line"] < line), key=lambda s: s["line"])

    for line in markers("CONFLICT"):
        assert all(w["line"] <= line for w in site_before(line)["waits"]), (line, site_before(line))
    for line in markers("OVERLAP"):
        s = site_before(line)
        assert s["action"] == "nonblocking" and all(w["line"] > line for w in s["waits"]), (line, s)
    (wild,) = markers("UNCHANGED")
    assert by_line[wild]["action"] == "unchanged" and "MPI_ANY_SOURCE" in by_line[wild]["reason"]
    assert [by_line[ln]["action"] for ln in by_line if ln != wild] == ["nonblocking"] * (len(by_line) - 1)
    # a receive with a status: reading the status waits for it
    (with_status,) = [ln for ln in calls_in_text("Recv") if ", &st);" in CASE.read_text().splitlines()[ln - 1]]
    assert "reads `st.MPI_TAG`" in by_line[with_status]["waits"][0]["blocked_by"]
    # existing MPI_Irecv/MPI_Isend/MPI_Waitall are understood: the first Allreduce's wait passes
    # the Irecv and Isend, stops at the Waitall (which may complete a receive into its buffer)
    first, second = [by_line[ln] for ln in calls_in_text("Allreduce")[1:3]]
    assert "calls MPI_Waitall" in first["waits"][0]["blocked_by"] and first["waits"][0]["moved_past"] == 2
    assert "calls MPI_Irecv (`MPI_Irecv(mine," in second["waits"][0]["blocked_by"]
    out = r.output.decode()
    # the status moves to the wait; the two receives from one source are posted in their order
    first = out.index("MPI_Irecv(a, 2, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, &mpiopt_reqs[0]);")
    assert first < out.index("MPI_Irecv(b, 2, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, &mpiopt_reqs[1]);") \
        < out.index("MPI_Wait(&mpiopt_reqs[0], &st);")
    assert "MPI_Recv(&x, 1, MPI_DOUBLE, MPI_ANY_SOURCE" in out
    assert "MPI_Wait(&mpiopt_reqs[1], MPI_STATUS_IGNORE);" in out
    # a fixpoint: the output transformed again is the same
    again = tmp_path / CASE.name
    again.write_bytes(r.output)
    assert transform_file(again, Options()).output == r.output


def test_point_to_point_prints_the_same_as_the_original(tmp_path):

    failures = difftest.check_transformed(CASE, tmp_path, modes=("nonblocking",), ranks=(2, 3))
    assert not failures, "\n".join(failures)


def test_profile_selection_of_point_to_point(tmp_path):
    """--profile: a send passes the percentage threshold like a collective; --top ranks the
    collective sites only, so a send is never selected by it."""
    from mpiopt.transform.costs import Selector
    from test_transform_profile import row, write_profile

    send, allreduce = calls_in_text("Send")[0], calls_in_text("Allreduce")[0]
    prof = write_profile(tmp_path / "p.json", [row("MPI_Send", str(CASE), send, 0.5, 0.5),
                                               row("MPI_Allreduce", str(CASE), allreduce, 0.5, 0.5)])
    by_percent = Selector(prof).decide(CASE, "MPI_Send", send, send)
    assert by_percent["selected"], by_percent
    by_top = Selector(prof, top=1).decide(CASE, "MPI_Send", send, send)
    assert not by_top["selected"] and "only collective sites are ranked" in by_top["reason"], by_top
    assert Selector(prof, top=1).decide(CASE, "MPI_Allreduce", allreduce, allreduce)["selected"]
