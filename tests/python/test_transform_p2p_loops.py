"""Point-to-point in loops and MPI_Sendrecv (tests/transform_cases/p2p_loops.c and .cpp):
MPI_Sendrecv -> MPI_Irecv + MPI_Isend, a wait each; --mode persistent turns the halo exchanges of
time-step loops (blocking MPI_Send/MPI_Recv, and MPI_Isend/MPI_Irecv/MPI_Waitall already there)
into MPI_Send_init/MPI_Recv_init + MPI_Start + MPI_Request_free; each rule of persistence has a
case that breaks it (NOT_PERSISTENT); the transformed programs print what the originals print
with both MPIs; the output transformed again is the same."""
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

CASES = Path(__file__).resolve().parents[1] / "transform_cases"
C_CASE, CXX_CASE = CASES / "p2p_loops.c", CASES / "p2p_loops.cpp"
pytestmark = pytest.mark.skipif(not shutil.which("mpicc.openmpi"), reason="needs Open MPI's headers")
P2P = re.compile(r"\bMPI_(Send|Recv|Isend|Irecv|Sendrecv|Sendrecv_replace)\(")


def markers(case: Path, name: str) -> list[int]:
    return [i for i, ln in enumerate(case.read_text().splitlines(), 1) if f"/* {name} */" in ln]


def by_line(sites) -> dict:
    out = {}
    for s in sites:
        out.setdefault(s["line"], []).append(s)
    return out


def nearest_calls_above(sites, line):
    """The sites of the nearest point-to-point call above (both halves of an MPI_Sendrecv), and
    of the calls on the lines right above it."""
    lines = {s["line"] for s in sites if s["line"] < line and s["call"] != "MPI_Reduce"}
    run = [max(lines)]
    while run[-1] - 1 in lines:
        run.append(run[-1] - 1)
    return [s for s in sites if s["line"] in run]


def direction(site) -> str:
    """"send" or "recv": what the call (or the half of an MPI_Sendrecv) does."""
    return site.get("half") or ("recv" if "recv" in site["call"].lower() else "send")


@pytest.mark.parametrize("case", [C_CASE, CXX_CASE], ids=["c", "cpp"])
def test_sendrecv_halves_and_persistent_loops(case, tmp_path):
    r = transform_file(case, Options(mode="persistent"))
    sites = r.sites
    lines = by_line(sites)
    text = case.read_text().splitlines()
    # every point-to-point call in a loop is reported (MPI_Sendrecv twice: its halves)
    for i, ln in enumerate(text, 1):
        if P2P.search(ln):
            assert i in lines, (i, ln)
    for line in markers(case, "PERSISTENT"):
        assert [s["action"] for s in lines[line]] == ["persistent"] * len(lines[line]), lines[line]
    for line in markers(case, "NOT_PERSISTENT"):
        assert all(s["action"] != "persistent" for s in lines[line]), lines[line]
        assert all("not persistent" in s["reason"] for s in lines[line]), lines[line]
    for line in markers(case, "UNCHANGED"):
        assert [s["action"] for s in lines[line]] == ["unchanged"], lines[line]
    for half in ("", "send", "recv"):
        for line in markers(case, f"CONFLICT {half}".strip()):
            for s in nearest_calls_above(sites, line):
                if half in ("", direction(s)):
                    assert all(w["line"] <= line for w in s["waits"]), (line, s)
    for line in markers(case, "OVERLAP"):
        for s in nearest_calls_above(sites, line):
            assert s["waits"] and all(w["line"] > line for w in s["waits"]), (line, s)
    # the reasons name the rule each negative breaks
    reasons = " | ".join(s["reason"] for s in sites)
    expected = ["declared inside the loop", "is written in the loop"]
    if case.suffix == ".c":
        expected += ["no MPI_Wait/MPI_Waitall (constant count) of its request later in the same loop body",
                     "could tell a completed persistent request from MPI_REQUEST_NULL",
                     "that could skip the wait", "posts into the same request", "receives with MPI_ANY_SOURCE",
                     "MPI_Sendrecv_replace receives into the buffer it sends"]
    for words in expected:
        assert words in reasons, words
    sendrecv = [s for s in sites if s["call"] == "MPI_Sendrecv" and s["action"] != "unchanged"]
    assert sendrecv and sorted({s.get("half") for s in sendrecv}) == ["recv", "send"]
    out = r.output.decode()
    # receives posted before sends for MPI_Sendrecv; one MPI_Start per request, in program order
    assert re.search(r"MPI_Irecv\(in, 4, MPI_DOUBLE, prev, 11, MPI_COMM_WORLD, &mpiopt_reqs\[1\]\);\n *"
                     r"MPI_Isend\(out, 4, MPI_DOUBLE, next, 11, MPI_COMM_WORLD, &mpiopt_reqs\[0\]\);", out)
    assert "MPI_Startall" not in out and "mpi-ext.h" not in out      # MPI-1 calls, no extension
    starts = [m.group(1) for m in re.finditer(r"MPI_Start\((&reqs\[\d\]|reqs \+ 1)\)", out)]
    assert starts == ["&reqs[0]", "reqs + 1", "&reqs[2]", "&reqs[3]"]
    for req in starts:
        assert out.index(f"MPI_Recv_init(&ghost[0]") < out.index(f"MPI_Start({req})") \
            < out.index(f"MPI_Request_free({req});")
    # a fixpoint: the output transformed again is the same, in both modes
    again = tmp_path / case.name
    again.write_bytes(r.output)
    assert transform_file(again, Options(mode="persistent")).output == r.output
    nonblocking = transform_file(case, Options()).output
    again.write_bytes(nonblocking)
    assert transform_file(again, Options()).output == nonblocking
    assert "MPI_Send_init(" not in nonblocking.decode() and "MPI_Start(" not in nonblocking.decode()


@pytest.mark.parametrize("case", [C_CASE, CXX_CASE], ids=["c", "cpp"])
def test_p2p_loops_print_the_same_as_the_original(case, tmp_path):

    failures = difftest.check_transformed(case, tmp_path, modes=difftest.MODES, ranks=(1, 2, 3))
    assert not failures, "\n".join(failures)


def test_bench_transform_halo_and_cpp_examples():
    """`mpiopt bench transform` builds and times the halo and C++ examples (small sizes, one
    round); their transformed versions print what the originals print; more ranks than cores
    are labelled oversubscribed."""
    import json
    import os
    import subprocess

    flavour = mpi.available_flavours()[0]
    np = 3
    r = subprocess.run([sys.executable, "-m", "mpiopt", "bench", "transform", "--size", "small",
                        "--repeats", "1", "--examples", "halo1d,heat_cpp", "--flavour", flavour,
                        "-np", str(np), "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    results = {x["example"]: x for x in json.loads(r.stdout)["results"]}
    assert set(results) == {"halo1d", "heat_cpp"}
    for x in results.values():
        assert x["output_matches"] == {"nonblocking": True, "persistent": True}
        assert x["oversubscribed"] is (np > (os.cpu_count() or 1))
    # halo1d: two MPI_Sendrecv, each two halves, all persistent; heat_cpp: the four existing
    # MPI_Isend/MPI_Irecv and the MPI_Allreduce of the step loop
    assert results["halo1d"]["call_sites"]["persistent"]["persistent"] == 4
    assert results["halo1d"]["call_sites"]["nonblocking"]["nonblocking"] >= 4
    assert results["heat_cpp"]["call_sites"]["persistent"]["persistent"] == 5


def test_profile_leaves_existing_nonblocking_calls(tmp_path):
    """--profile rewrites the calls it selects; the nonblocking calls already in loops, whose cost
    a profile shows in their waits, are reported and left as they are."""
    from mpiopt.transform.costs import Selector
    from test_transform_profile import row, write_profile

    send = next(i for i, ln in enumerate(C_CASE.read_text().splitlines(), 1)
                if "MPI_Send(edge_right" in ln)
    prof = write_profile(tmp_path / "p.json", [row("MPI_Send", str(C_CASE), send, 0.5, 0.9)])
    r = transform_file(C_CASE, Options(mode="persistent", select=Selector(prof)))
    existing = [s for s in r.sites if s["call"] in ("MPI_Isend", "MPI_Irecv")]
    assert existing and all(s["action"] == "unchanged" and "--profile" in s["reason"] for s in existing)
    assert [s["action"] for s in r.sites if s["line"] == send] == ["persistent"]
    assert "MPI_Send_init(edge_right" in r.output.decode() and "MPI_Recv_init(&ghost" not in r.output.decode()
