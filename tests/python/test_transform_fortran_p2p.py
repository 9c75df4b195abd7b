"""Fortran point-to-point in `mpiopt transform` (issue 66): MPI_SEND/MPI_SSEND/MPI_RECV become
MPI_ISEND/MPI_ISSEND/MPI_IRECV with waits as late as the data allow, in the three bindings
(tests/transform_cases/fortran_p2p_free.f90 `use mpi`, fortran_p2p_f08.f90 `use mpi_f08`,
fortran_p2p_fixed.f `include 'mpif.h'`); halo exchanges in time-step loops become persistent
(MPI_SEND_INIT/MPI_RECV_INIT + MPI_STARTALL) with both MPIs; wildcard receives and receives into
array sections stay blocking. The markers in the cases (CONFLICT, OVERLAP, UNCHANGED, in a comment
on the line or on the comment line below the statement) say where each wait may go; the
transformed programs must print what the originals print with both MPIs."""
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
from case_lines import line_of, lines, markers  # noqa: E402

CASES = Path(__file__).resolve().parents[1] / "transform_cases"
FREE, F08, FIXED = (CASES / n for n in ("fortran_p2p_free.f90", "fortran_p2p_f08.f90",
                                        "fortran_p2p_fixed.f"))
pytestmark = pytest.mark.skipif(not shutil.which("mpif90.openmpi") and not shutil.which("mpif90.mpich"),
                                reason="needs an MPI Fortran compiler")
P2P = re.compile(r"^\s*call\s+mpi_(send|ssend|recv)\(", re.I)


@pytest.fixture(scope="module", params=[FREE, F08, FIXED], ids=["use_mpi", "mpi_f08", "mpif_h"])
def case(request):
    return request.param, transform_file(request.param, Options())


def test_sites_waits_and_markers(case):
    path, r = case
    sites = sorted(r.sites, key=lambda s: s["line"])
    p2p_lines = [i for i, ln in enumerate(lines(path), 1) if P2P.match(ln)]
    assert p2p_lines and set(p2p_lines) <= {s["line"] for s in sites}

    def site_before(line):
        return max((s for s in sites if s["line"] < line), key=lambda s: s["line"])

    for line in markers(path, "CONFLICT"):
        s = site_before(line)
        assert s["action"] == "nonblocking" and all(w["line"] <= line for w in s["waits"]), (line, s)
    for line in markers(path, "OVERLAP"):
        s = site_before(line)
        assert s["action"] == "nonblocking" and all(w["line"] > line for w in s["waits"]), (line, s)
    unchanged = markers(path, "UNCHANGED")
    assert len(unchanged) == 2
    for line in unchanged:
        s = site_before(line + 1)
        assert s["action"] == "unchanged", s
    wildcard, section = (site_before(ln + 1) for ln in unchanged)
    assert re.search(r"receives with MPI_ANY_(SOURCE|TAG)", wildcard["reason"]), wildcard
    assert "is an array section" in section["reason"], section
    # every other point-to-point call is rewritten
    assert all(s["action"] == "nonblocking" for s in sites if s["line"] in p2p_lines
               and s not in (wildcard, section))


def test_text_of_the_rewritten_calls(case):
    path, r = case
    out = r.output.decode()
    upper = out.upper()
    assert "MPI_ISEND(" in upper and "MPI_IRECV(" in upper
    assert re.search(r"asynchronous[^\n]*\b(gl|gw)\b", out, re.I), "receive buffers get ASYNCHRONOUS"
    if path == F08:
        # TYPE(MPI_Request); no ierror where the program had none; the status moves to the wait
        # (the two branches of an IF share request slots)
        assert "type(MPI_Request) mpiopt_reqs(" in out
        assert "call MPI_Irecv(b, m, MPI_DOUBLE_PRECISION, 1, 11, MPI_COMM_WORLD, mpiopt_reqs(1))" in out
        assert "call MPI_WAIT(mpiopt_reqs(1), st)" in out
    elif path == FREE:
        assert "call MPI_Irecv(in, n, MPI_DOUBLE_PRECISION, prev, 7, MPI_COMM_WORLD, mpiopt_reqs(2), " \
               "ierr)" in out
        assert "call MPI_WAIT(mpiopt_reqs(2), status, mpiopt_ierr)" in out
        assert "call MPI_Issend(out, n," in out
    else:
        code = [ln for ln in out.splitlines() if ln and ln[0] not in "Cc*!"]
        assert all(len(ln) <= 72 for ln in code), [ln for ln in code if len(ln) > 72]
        assert "CALL MPI_WAIT(mpiopt_reqs(1), STATUS, mpiopt_ierr)" in out
        # the existing MPI_ISEND/MPI_IRECV/MPI_WAITALL are kept as they are
        assert out.count("CALL MPI_WAITALL(2, REQS, STATS, IERR)") == 1


def test_status_components_are_the_status(case):
    """mpi_f08: reading `st%MPI_TAG` reads the status the receive's wait fills in (a component of
    another derived type would be the location all pointers share, which the status is not)."""
    path, r = case
    if path != F08:
        pytest.skip("TYPE(MPI_Status) is mpi_f08's")
    pair = next(s for s in r.sites if s["line"] == line_of(F08, "MPI_Recv(b, m"))
    assert pair["waits"][0]["line"] == line_of(F08, "tagsum = st%MPI_TAG")
    assert "st % MPI_TAG" in pair["waits"][0]["blocked_by"]


def test_existing_nonblocking_calls_are_understood(case):
    """A collective's wait moves past MPI_IRECV/MPI_ISEND of other buffers (C: calls.NONBLOCKING_P2P)."""
    path, r = case
    if path == F08:
        pytest.skip("the use mpi and mpif.h cases have the nonblocking exchange")
    upper = path.read_text().upper()
    line = upper[:upper.index("MPI_IRECV(")].count("\n") + 1
    coll = max((s for s in r.sites if s["line"] < line), key=lambda s: s["line"])
    assert coll["call"] == "MPI_Allreduce" and coll["waits"][0]["moved_past"] >= 2, coll


def test_fixpoint(case, tmp_path):
    path, r = case
    again = tmp_path / path.name
    again.write_bytes(r.output)
    second = transform_file(again, Options())
    assert not second.changed and all(s["action"] == "unchanged" for s in second.sites)


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_halo_loops_become_persistent_with_both_mpis(flavour):
    if not shutil.which(f"mpif90.{flavour}"):
        pytest.skip(f"no mpif90.{flavour}")
    r = transform_file(FREE, Options(mode="persistent", flavour=flavour))
    out = r.output.decode().splitlines()
    loop = line_of(FREE, "do step = 1, nsteps")
    halo = [s for s in r.sites if loop < s["line"] < loop + 5]
    assert [s["action"] for s in halo] == ["persistent"] * 4, halo
    inits = [i for i, ln in enumerate(out) if re.search(r"MPI_(SEND|RECV)_INIT\(", ln)]
    startall = next(i for i, ln in enumerate(out) if "MPI_STARTALL(4, mpiopt_reqs(4:7), ierr)" in ln)
    frees = [i for i, ln in enumerate(out) if "MPI_REQUEST_FREE(mpiopt_reqs(" in ln]
    do = out.index("  do step = 1, nsteps")
    assert len(inits) == 4 and max(inits) < do < startall < min(frees) and len(frees) >= 4
    # no Open MPI extension module for point-to-point alone (MPICH: no persistent collectives)
    assert ("use mpi_ext" in r.output.decode()) == (flavour == "openmpi")
    # the send outside a loop stays nonblocking, with the reason
    first = next(s for s in r.sites if s["line"] == line_of(FREE, "call MPI_Send(out, n"))
    assert first["action"] == "nonblocking" and "not directly in a loop body" in first["reason"]


ORDERED = """program ordered
  use mpi
  implicit none
  integer :: ierr, rank, peer, step, status(MPI_STATUS_SIZE)
  double precision :: a, b, c
  double precision, allocatable :: v(:)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  peer = 1 - rank
  do step = 1, 3
    a = step
    call MPI_Send(a, 1, MPI_DOUBLE_PRECISION, peer, 5, MPI_COMM_WORLD, ierr)
    call MPI_Send(a, 1, MPI_DOUBLE_PRECISION, peer, 5, MPI_COMM_WORLD, ierr)
    call MPI_Recv(b, 1, MPI_DOUBLE_PRECISION, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Recv(c, 1, MPI_DOUBLE_PRECISION, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    allocate (v(4))
    v = b + c
    call MPI_Send(v, 4, MPI_DOUBLE_PRECISION, peer, 6, MPI_COMM_WORLD, ierr)
    call MPI_Recv(v, 4, MPI_DOUBLE_PRECISION, peer, 6, MPI_COMM_WORLD, status, ierr)
    print *, v(1), status(MPI_TAG)
    deallocate (v)
  end do
  call MPI_Finalize(ierr)
end program ordered
"""


def test_startall_keeps_matching_order_and_moved_buffers_stay_nonblocking(tmp_path):
    src = tmp_path / "ordered.f90"
    src.write_text(ORDERED)
    r = transform_file(src, Options(mode="persistent", flavour="openmpi"))
    out = r.output.decode()
    # two sends (and two receives) with one tag never share an MPI_STARTALL, which could start
    # them in either order; a send and a receive may
    starts = [ln.strip() for ln in out.upper().splitlines() if "MPI_START" in ln]
    assert starts == ["CALL MPI_START(MPIOPT_REQS(1), IERR)", "CALL MPI_STARTALL(2, MPIOPT_REQS(2:3), IERR)",
                      "CALL MPI_START(MPIOPT_REQS(4), IERR)"], starts
    by_line = {s["line"]: s for s in r.sites}
    # a buffer ALLOCATEd in the loop moves: a request made before the loop would use old storage
    moved = by_line[line_of(src, "MPI_Send(v, 4")]
    assert moved["action"] == "nonblocking" and "allocated or deallocated in the loop" in moved["reason"]


def test_status_that_is_not_a_whole_variable_keeps_the_receive_blocking(tmp_path):
    src = tmp_path / "element.f90"
    src.write_text(ORDERED.replace("status(MPI_STATUS_SIZE)", "stats(MPI_STATUS_SIZE, 2)")
                   .replace("MPI_COMM_WORLD, status, ierr)", "MPI_COMM_WORLD, stats(1, step), ierr)")
                   .replace("status(MPI_TAG)", "stats(MPI_TAG, 1)"))
    r = transform_file(src, Options())
    s = next(s for s in r.sites if s["line"] == line_of(src, "MPI_Recv(v, 4"))
    assert s["action"] == "unchanged", s
    assert "status argument `stats(1, step)` is not MPI_STATUS_IGNORE or a variable named whole" \
        in s["reason"], s


@pytest.mark.parametrize("path", [FREE, F08, FIXED], ids=["use_mpi", "mpi_f08", "mpif_h"])
def test_transformed_programs_print_the_same(path, tmp_path):
    failures = difftest.check_transformed(path, tmp_path, modes=("nonblocking", "persistent"), ranks=(2, 3))
    assert not failures, "\n".join(failures)


def test_rooted_collective_waits_split_by_rank():
    """MPI_REDUCE's receive buffer matters at the root only: the root waits before reading it,
    the other ranks wait later, before their send buffer is written (placement.Placer.place, as
    for C; the writer tests the rank before the call)."""
    r = transform_file(FREE, Options())
    reduce = next(s for s in r.sites if s["call"] == "MPI_Reduce")
    root, other = reduce["waits"]
    assert (root["guard"], root["line"]) == ("root", line_of(FREE, "'halo', res(1)"))
    assert other["guard"] == "nonroot" and other["line"] > root["line"] and other["moved_past"] == 3
    out = r.output.decode()
    assert "mpiopt_root(8) = mpiopt_rank .EQ. 0 .OR. 0 .EQ. MPI_ROOT" in out
    assert "if (mpiopt_root(8)) then" in out and "if (.NOT. mpiopt_root(8)) then" in out


# --- MPI_SENDRECV: two halves, MPI_IRECV + MPI_ISEND, each with its own wait ---------------------

SR_FREE, SR_FIXED = CASES / "fortran_sendrecv_free.f90", CASES / "fortran_sendrecv_fixed.f"


def sendrecv_f08(tmp_path: Path) -> Path:
    """The free-form case with `use mpi_f08` (TYPE(MPI_Status), `st%MPI_SOURCE`)."""
    src = tmp_path / "fortran_sendrecv_f08.f90"
    src.write_text(SR_FREE.read_text().replace("  use mpi\n", "  use mpi_f08\n")
                   .replace("integer :: st(MPI_STATUS_SIZE)", "type(MPI_Status) :: st")
                   .replace("st(MPI_SOURCE)", "st%MPI_SOURCE"))
    return src


@pytest.fixture(scope="module", params=[SR_FREE, SR_FIXED], ids=["use_mpi", "mpif_h"])
def sendrecv(request):
    return request.param, transform_file(request.param, Options())


def _sendrecv_site(r, line, half):
    return next(s for s in r.sites if s["line"] == line and s.get("half") == half)


def test_sendrecv_halves_and_their_waits(sendrecv):
    path, r = sendrecv
    text = lines(path)
    calls = [i for i, ln in enumerate(text, 1) if re.match(r"\s*call\s+mpi_sendrecv\(", ln, re.I)]
    unchanged = [max(c for c in calls if c < m) for m in markers(path, "UNCHANGED")
                 if any(c < m for c in calls) and "SENDRECV(" in text[max(c for c in calls if c < m) - 1].upper()
                 and max(c for c in calls if c < m) > max((m2 for m2 in markers(path, "UNCHANGED") if m2 < m),
                                                           default=0)]
    for line in calls:
        halves = [s for s in r.sites if s["line"] == line]
        if line in unchanged:
            assert all(s["action"] == "unchanged" and s["reason"] for s in halves), halves
            continue
        # two sites, one a half, each with a request of its own and its own wait
        assert sorted(s.get("half") for s in halves) == ["recv", "send"], halves
        assert all(s["action"] == "nonblocking" and len(s["waits"]) == 1 for s in halves), halves
        assert halves[0]["request"] != halves[1]["request"]
    for line in markers(path, "OVERLAP"):
        call = max(c for c in calls if c < line)
        assert all(w["line"] > line for s in r.sites if s["line"] == call for w in s["waits"])
    for name, half in (("SEND", "send"), ("RECV", "recv")):
        for line in markers(path, name):
            s = _sendrecv_site(r, max(c for c in calls if c < line), half)
            assert s["waits"][0]["line"] <= line, s


def test_sendrecv_text(sendrecv):
    """The receive is posted first; the status goes to the receive half's wait; both buffers get
    ASYNCHRONOUS; the ierror stays the program's."""
    path, r = sendrecv
    out = r.output.decode()
    if path == SR_FREE:
        recv = "call MPI_Irecv(strip, n, MPI_DOUBLE_PRECISION, mod(rank + nprocs - 1, nprocs), 3, " \
               "MPI_COMM_WORLD, mpiopt_reqs("
        send = "call MPI_Isend(ring, n, MPI_DOUBLE_PRECISION, mod(rank + 1, nprocs), 3, MPI_COMM_WORLD, " \
               "mpiopt_reqs("
        flat = re.sub(r"\s*&\n\s*", " ", out).lower()       # (fparser writes intrinsics in upper case)
        recv, send = recv.lower(), send.lower()
        assert recv in flat and send in flat and flat.index(recv) < flat.index(send)
        k = re.search(re.escape(recv) + r"(\d+)\), ierr\)", flat).group(1)
        assert f"call MPI_WAIT(mpiopt_reqs({k}), st, mpiopt_ierr)" in out
        assert flat.count("call mpi_sendrecv(") == 3      # the three left blocking
        assert re.search(r"asynchronous[^\n]*\bring\b", out) and re.search(r"asynchronous[^\n]*\bstrip\b", out)
        assert re.search(r"asynchronous[^\n]*\bgl\b", out) and re.search(r"asynchronous[^\n]*\bsr\b", out)
    else:
        code = [ln for ln in out.splitlines() if ln and ln[0] not in "Cc*!"]
        assert all(len(ln) <= 72 for ln in code), [ln for ln in code if len(ln) > 72]
        assert "CALL MPI_IRECV(GL, 1, MPI_DOUBLE_PRECISION, LEFT, 1,\n     &      MPI_COMM_WORLD, " \
               "mpiopt_reqs(2), IERR)\n         CALL MPI_ISEND(SR, 1," in out
        assert "CALL MPI_WAIT(mpiopt_reqs(2), STATUS, mpiopt_ierr)" in out
        assert re.search(r"ASYNCHRONOUS[^\n]*\bsr\b[^\n]*\bgl\b", out, re.I)


def test_sendrecv_left_blocking_with_reasons():
    r = transform_file(SR_FREE, Options())
    by = {}
    for s in r.sites:
        by.setdefault(s["line"], []).append(s)
    wildcard = by[line_of(SR_FREE, "4, strip, n")]
    assert [s["action"] for s in wildcard] == ["unchanged"] and "MPI_ANY_SOURCE" in wildcard[0]["reason"]
    # a section in one half keeps the other half blocking too, with that reason (one statement)
    section = by[line_of(SR_FREE, "strip(1:2*n:2)")]
    assert {s.get("half") for s in section} == {"send", "recv"}
    assert all(s["action"] == "unchanged" and "array section" in s["reason"] for s in section), section
    replace = by[line_of(SR_FREE, "MPI_Sendrecv_replace(")]
    assert replace[0]["call"] == "MPI_Sendrecv_replace" and replace[0]["action"] == "unchanged"
    assert "would need a copy of the message" in replace[0]["reason"]
    external = by[line_of(SR_FREE, "7, got, 1")]
    assert all("dummy argument of an external procedure" in s["reason"] for s in external)
    out = r.output.decode()
    assert out.count("MPI_Sendrecv(") == 3 and "MPI_Sendrecv_replace(" in out


def test_sendrecv_mpi_f08(tmp_path):
    r = transform_file(sendrecv_f08(tmp_path), Options())
    out = re.sub(r" &\n\s*", "", r.output.decode())
    assert "type(MPI_Request) mpiopt_reqs(" in out
    assert re.search(r"call MPI_WAIT\(mpiopt_reqs\(\d+\), st\)", out)
    assert sum(s["action"] == "nonblocking" and s.get("half") == "recv" for s in r.sites) == 3


@pytest.mark.parametrize("path", [SR_FREE, SR_FIXED], ids=["use_mpi", "mpif_h"])
def test_sendrecv_fixpoint(path, tmp_path):
    again = tmp_path / path.name
    again.write_bytes(transform_file(path, Options()).output)
    second = transform_file(again, Options())
    assert not second.changed


@pytest.mark.parametrize("which", ["use_mpi", "mpif_h", "mpi_f08"])
def test_sendrecv_programs_print_the_same(which, tmp_path):
    path = {"use_mpi": SR_FREE, "mpif_h": SR_FIXED}.get(which) or sendrecv_f08(tmp_path)
    failures = difftest.check_transformed(path, tmp_path, modes=("nonblocking", "persistent"), ranks=(2, 3))
    assert not failures, "\n".join(failures)


def test_sendrecv_halves_persistent_never_in_a_startall():
    """In persistent mode the halves are MPI_RECV_INIT + MPI_SEND_INIT with one MPI_START each:
    fortran_p2p's tag test reads MPI_SEND's tag position, which is not a half's tag."""
    r = transform_file(SR_FIXED, Options(mode="persistent", flavour="openmpi"))
    out = r.output.decode()
    assert "MPI_STARTALL" not in out and out.count("CALL MPI_START(") == 4
    assert out.count("CALL MPI_RECV_INIT(") == 2 and out.count("CALL MPI_SEND_INIT(") == 2
    loop = [s for s in r.sites if s.get("half")]
    assert sum(s["action"] == "persistent" for s in loop) == 4, loop
