"""The timeline of libmpiopt-profile (`mpiopt profile --trace`, `mpiopt report --chrome-trace`):
real runs on both MPIs, the OTF2 archive read back by OTF2's own reader (`otf2-print`), the
Chrome trace-event JSON checked as JSON, and a buffer too small for the run."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import BUILT_FLAVOURS, run_mpiopt
from mpiopt import mpi

PROFILED = [f for f in BUILT_FLAVOURS if mpi.profile_library(f).exists()
            and mpi.binary(f, "mpiopt-otf2-chrome").exists()]
pytestmark = [pytest.mark.skipif(not PROFILED, reason="libmpiopt-profile with OTF2 not built "
                                 "(libotf2-trace-dev, make build)"),
              pytest.mark.skipif(not shutil.which("otf2-print"), reason="no otf2-print (otf2-tools)")]


def traced(tmp_path: Path, flavour: str, np_: int, *program, extra=()) -> dict:
    out = tmp_path / "prof"
    r = run_mpiopt("profile", "-np", np_, "-o", out, "--flavour", flavour, "--json", "--trace",
                   *extra, "--", mpi.binary(flavour, "test-plain_profile_check"), *program,
                   timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    summary = json.loads(r.stdout[r.stdout.index("{\n"):])
    summary["_dir"] = out
    return summary


def otf2_events(anchor: Path) -> tuple[Counter, dict]:
    """{(rank, ENTER|LEAVE, region): n} and the attributes of each ENTER line, by otf2-print."""
    defs = subprocess.run(["otf2-print", "-G", anchor], capture_output=True, text=True, check=True).stdout
    rank_of = {int(m.group(1)): int(m.group(2)) for m in
               re.finditer(r"^LOCATION\s+(\d+)\s+Name: .*Group: \"rank (\d+)\"", defs, re.M)}
    text = subprocess.run(["otf2-print", anchor], capture_output=True, text=True, check=True).stdout
    counts, attrs = Counter(), []
    for m in re.finditer(r"^(ENTER|LEAVE)\s+(\d+)\s+(\d+)\s+Region: \"([^\"]+)\" <\d+>(?:\s*\n\s+ADDITIONAL "
                         r"ATTRIBUTES: (.*))?", text, re.M):
        rank = rank_of[int(m.group(2))]
        counts[rank, m.group(1), m.group(4)] += 1
        if m.group(5):
            attrs.append((rank, m.group(4), dict(re.findall(r"\(\"(\w+)\" <\d+>; \w+; (-?\d+)\)", m.group(5)))))
    return counts, attrs


@pytest.mark.parametrize("flavour", PROFILED)
def test_otf2_has_every_call_and_region_per_rank(tmp_path, flavour):
    n, iters = 3, 4
    s = traced(tmp_path, flavour, n, "imbalance", 1, iters)
    assert s["trace"]["written"] and s["trace"]["dropped"] == 0
    # per rank: iters regions (2 marks each) and iters allreduces
    assert s["trace"]["events_recorded"] == n * 3 * iters
    counts, attrs = otf2_events(s["_dir"] / "mpiopt-trace" / "traces.otf2")
    want = Counter()
    for r in range(n):
        for kind in ("ENTER", "LEAVE"):
            want[r, kind, "MPI_Allreduce"] = iters
            want[r, kind, "work"] = iters
    assert counts == want
    assert {(a["bytes"], a["peer"]) for _, name, a in attrs if name == "MPI_Allreduce"} == {("8", "-1")}


@pytest.mark.parametrize("flavour", PROFILED)
def test_peer_and_bytes_and_chrome_json(tmp_path, flavour):
    n, nbytes, iters = 3, 1000, 3
    s = traced(tmp_path, flavour, n, "ring", nbytes, iters)
    counts, attrs = otf2_events(s["_dir"] / "mpiopt-trace" / "traces.otf2")
    sendrecv = [(r, a) for r, name, a in attrs if name == "MPI_Sendrecv"]
    assert len(sendrecv) == n * iters
    assert all(a["peer"] == str((r + 1) % n) and a["bytes"] == str(nbytes) for r, a in sendrecv)

    out = tmp_path / "timeline.json"
    r = run_mpiopt("report", s["_dir"] / "mpiopt-profile.json", "--chrome-trace", out, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["chrome_trace"]["events"] == 2 * n * iters
    events = json.loads(out.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] in "BE"]
    assert {e["pid"] for e in slices} == set(range(n))                   # one track a rank
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {k: f"rank {k}" for k in range(n)}
    for pid in range(n):
        mine = [e for e in slices if e["pid"] == pid]
        assert [e["ts"] for e in mine] == sorted(e["ts"] for e in mine)  # monotone
        assert [e["ph"] for e in mine] == ["B", "E"] * iters
        assert all(e["args"] == {"bytes": nbytes, "peer": (pid + 1) % n, "communicator": e["args"]["communicator"]}
                   for e in mine if e["ph"] == "B")


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_regions_are_slices(tmp_path, flavour):
    s = traced(tmp_path, flavour, 2, "imbalance", 1, 2)
    out = tmp_path / "t.json"
    r = run_mpiopt("report", s["_dir"] / "mpiopt-profile.json", "--chrome-trace", out)
    assert r.returncode == 0 and "one track a rank" in r.stdout
    events = json.loads(out.read_text())["traceEvents"]
    work = [e for e in events if e["name"] == "work"]
    assert len(work) == 2 * 2 * 2 and {e["cat"] for e in work} == {"region"}


@pytest.mark.parametrize("flavour", PROFILED)
def test_small_buffer_drops_and_counts(tmp_path, flavour):
    n, iters, cap = 2, 10, 5
    s = traced(tmp_path, flavour, n, "imbalance", 0, iters, extra=("--trace-events", cap))
    t = s["trace"]
    assert t["written"] and t["capacity_per_thread"] == cap
    assert t["events_recorded"] == n * cap and t["dropped"] == n * (3 * iters - cap)
    # what was kept is still a valid trace: every enter has its leave
    counts, _ = otf2_events(s["_dir"] / "mpiopt-trace" / "traces.otf2")
    for (rank, kind, name), k in counts.items():
        assert counts[rank, "LEAVE" if kind == "ENTER" else "ENTER", name] == k
    text = (s["_dir"] / "mpiopt-profile.txt").read_text()
    assert f"{n * (3 * iters - cap)} dropped" in text


def test_errors(tmp_path, flavours):
    flavour = PROFILED[0]
    s = traced(tmp_path, flavour, 2, "ring", 8, 1)
    r = run_mpiopt("report", s["_dir"] / "mpiopt-profile.json", "--chrome-trace", tmp_path / "no/such/dir.json")
    assert r.returncode == 2 and "does not exist" in r.stderr
    # a profile without --trace
    out = tmp_path / "plain"
    r = run_mpiopt("profile", "-np", 2, "-o", out, "--", mpi.binary(flavour, "test-plain_profile_check"),
                   "ring", 8, 1, timeout=300)
    assert r.returncode == 0
    r = run_mpiopt("report", out / "mpiopt-profile.json", "--chrome-trace", tmp_path / "x.json")
    assert r.returncode == 2 and "mpiopt profile --trace" in r.stderr and not (tmp_path / "x.json").exists()
    r = run_mpiopt("profile", "--trace-events", 0, "--", "true")
    assert r.returncode == 2 and "--trace-events" in r.stderr


@pytest.mark.parametrize("flavour", PROFILED[:1])
def test_an_existing_directory_is_not_written_over(tmp_path, flavour):
    """OTF2 cannot write over an archive: a directory mpiopt-trace that is not the profiler's
    (here with a file of the user's) stays, and the trace goes to mpiopt-trace.1."""
    mine = tmp_path / "prof" / "mpiopt-trace"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    s = traced(tmp_path, flavour, 2, "ring", 8, 2)
    assert (mine / "notes.txt").read_text() == "mine" and s["trace"]["path"].endswith("mpiopt-trace.1")
    out = tmp_path / "t.json"
    r = run_mpiopt("report", s["_dir"] / "mpiopt-profile.json", "--chrome-trace", out, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["chrome_trace"]["events"] == 2 * 2 * 2
