"""The report's lines: the Cray profiler's sections (System summary, MPI summary with one
line per call for time, calls and bytes, user regions, PAPI) from a profile, two profiles side
by side, and the calls and ranks that dominate."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .data import Profile

SYSTEM = (("wall_time", "Wall clock time", "time"), ("user_time", "User processor time", "time"),
          ("system_time", "System processor time", "time"),
          ("max_rss_mb", "Maximum memory usage (MB)", "mb"),
          ("minor_page_faults", "Minor page faults", "count"),
          ("major_page_faults", "Major page faults", "count"))
MPI = (("mpi_time", "Total MPI time", "time"), ("compute_time", "Total compute time", "time"),
       ("communication_time", "Total communication time", "time"),
       ("wait_probe_time", "Total Wait and Probe time", "time"),
       ("collective_sync_time", "Total collective sync time", "time"))


def imbalance_pct(stat: dict, ranks: int) -> float:
    """Imb% = 100 (max - avg) / max * N / (N - 1) (design.md, CrayPat's): 100 when one rank holds
    all of it, 0 when all hold the same (and for one rank, or max 0). Without the N / (N - 1)
    factor this is issue 9's (max - avg) / max."""
    mx = stat["max"]
    if mx <= 0 or ranks < 2:
        return 0.0
    return 100.0 * (mx - stat["avg"]) / mx * ranks / (ranks - 1)


@dataclass
class Line:
    label: str
    stat: dict          # min, max, avg, min_pe, max_pe
    kind: str           # time, count, bytes, mb: how to print the values
    ranks: int

    @property
    def imbalance(self) -> float:
        """max - avg"""
        return self.stat["max"] - self.stat["avg"]

    @property
    def imbalance_pct(self) -> float:
        return imbalance_pct(self.stat, self.ranks)


def _short(name: str) -> str:
    return name.split("_", 1)[1] if name.startswith(("MPI_", "MPIX_")) else name


def sections(p: Profile) -> list[tuple[str, list[Line]]]:
    """[(title, lines)] in the order of the Cray report; the MPI section includes the per-call
    lines of every call some rank made (time, then calls, then bytes and average bytes)."""
    d = p.data
    n = p.ranks
    system = [Line(label, d["system"][k], kind, n) for k, label, kind in SYSTEM if k in d["system"]]
    mpi = [Line("Init-Finalize elapsed time", d["system"]["wall_time"], "time", n)] if "wall_time" in d["system"] else []
    mpi += [Line(label, d["mpi"][k], kind, n) for k, label, kind in MPI if k in d["mpi"]]
    calls = d["calls"]
    mpi += [Line(f"{_short(name)} total time", c["time"], "time", n) for name, c in calls.items()]
    mpi += [Line(f"{_short(name)} calls", c["calls"], "count", n) for name, c in calls.items()]
    for name, c in calls.items():
        if c["bytes"]["max"] > 0:
            mpi += [Line(f"{_short(name)} total bytes", c["bytes"], "bytes", n),
                    Line(f"{_short(name)} average bytes", c["avg_bytes"], "bytes", n)]
    out = [("System summary", system), ("MPI summary", mpi)]
    regions = []
    for name, r in d["regions"].items():
        regions += [Line(f"{name} count", r["count"], "count", n),
                    Line(f"{name} time", r["time"], "time", n),
                    Line(f"{name} MPI time", r["mpi_time"], "time", n)]
    if regions:
        out.append(("Region summary", regions))
    counters = d.get("papi", {}).get("counters", {}) if d.get("papi", {}).get("available") else {}
    if counters:
        out.append(("PAPI summary", [Line(name, stat, "count", n) for name, stat in counters.items()]))
    return out


def papi_note(p: Profile) -> str:
    papi = p.data.get("papi", {})
    if papi.get("available"):
        return "available"
    return f"unavailable: {papi.get('reason', 'not recorded')}"


def compare(a: Profile, b: Profile) -> list[tuple[str, list[tuple[str, Line | None, Line | None, float | None]]]]:
    """Both profiles' sections line by line: (label, line of a, line of b, avg of b / avg of a);
    a line one of them lacks is None there (a call only one run made)."""
    out = []
    sa, sb = dict(sections(a)), dict(sections(b))
    for title in list(sa) + [t for t in sb if t not in sa]:
        la = {l.label: l for l in sa.get(title, [])}
        lb = {l.label: l for l in sb.get(title, [])}
        rows = []
        for label in list(la) + [k for k in lb if k not in la]:
            x, y = la.get(label), lb.get(label)
            ratio = y.stat["avg"] / x.stat["avg"] if x and y and x.stat["avg"] else None
            rows.append((label, x, y, ratio))
        out.append((title, rows))
    return out


def top_calls(p: Profile, n: int) -> list[dict]:
    """The n calls with the largest time on their slowest rank."""
    rows = [{"call": name, "max_time": c["time"]["max"], "max_pe": c["time"]["max_pe"],
             "avg_time": c["time"]["avg"], "calls": c["calls"]["max"],
             "imbalance_pct": imbalance_pct(c["time"], p.ranks),
             "share_of_mpi_time": c["time"]["avg"] / p.data["mpi"]["mpi_time"]["avg"]
             if p.data["mpi"]["mpi_time"]["avg"] else 0.0}
            for name, c in p.data["calls"].items()]
    return sorted(rows, key=lambda r: -r["max_time"])[:n]


def top_ranks(p: Profile, n: int) -> dict[str, list[dict]]:
    """The n ranks with the most MPI time and the n with the most compute time (the overloaded
    ones, which the others wait for)."""
    out = {}
    for key in ("mpi_time", "compute_time"):
        values = p.per_rank(key)
        order = np.argsort(-values, kind="stable")[:n]
        out[key] = [{"rank": int(r), key: float(values[r]),
                     "wall_time": float(p.per_rank("wall_time")[r])} for r in order]
    return out


def _where(frame: dict) -> str:
    """file:line of a frame, or module (no debug info): what the report prints in `file:line`."""
    if frame.get("debug_info"):
        return f"{frame['file'].rsplit('/', 1)[-1]}:{frame['line']}"
    return f"{frame['module'].rsplit('/', 1)[-1]} (no debug info)"


def _function(frame: dict) -> str:
    return frame["function"] if frame.get("debug_info") else f"{frame['function']}+0x{frame['offset']:x}"


def site_rows(p: Profile) -> list[dict]:
    """The call sites of a profile taken with --sites, by time summed over ranks (largest first):
    call, where (file:line), function, the stack above (as "function where"), count, bytes and
    time (min/max/avg/min_pe/max_pe over ranks) and share of MPI time. [] without --sites."""
    sites = p.data.get("sites") or {}
    rows = []
    for s in sites.get("list", []):
        rows.append({"call": s["call"], "where": _where(s), "function": _function(s),
                     "file": s["file"], "line": s["line"], "debug_info": s["debug_info"],
                     "stack": [f"{_function(f)} {_where(f)}" for f in s.get("stack", [])],
                     "count": s["count"], "bytes": s["bytes"], "time": s["time"],
                     "share_of_mpi_time": s["share_of_mpi_time"]})
    return rows


def site_key(row: dict) -> tuple:
    """What makes two profiles' sites the same: call, line, function and the stack above."""
    return (row["call"], row["where"], row["function"], tuple(row["stack"]))


def compare_sites(a: Profile, b: Profile) -> list[tuple[tuple, dict | None, dict | None, float | None]]:
    """Both profiles' sites matched by site_key: (key, site of a, site of b, avg time b / a),
    in a's order, then the sites only b has."""
    ra = {site_key(r): r for r in site_rows(a)}
    rb = {site_key(r): r for r in site_rows(b)}
    out = []
    for key in list(ra) + [k for k in rb if k not in ra]:
        x, y = ra.get(key), rb.get(key)
        ratio = y["time"]["avg"] / x["time"]["avg"] if x and y and x["time"]["avg"] else None
        out.append((key, x, y, ratio))
    return out


def node_split(p: Profile) -> dict | None:
    """The matrix split by the hosts the ranks ran on (the profile's `hosts`): per host, in
    first-seen order, its ranks and the point-to-point bytes and messages its ranks sent to ranks
    on the same host (on-node) and on other hosts (off-node); None without hosts."""
    hosts = p.hosts
    if not hosts:
        return None
    nbytes, msgs = p.matrix()
    names = list(dict.fromkeys(hosts))
    where = np.array([names.index(h) for h in hosts])
    same = where[:, None] == where[None, :]
    rows = []
    for i, name in enumerate(names):
        mine = where == i
        rows.append({"host": name, "ranks": [int(r) for r in np.flatnonzero(mine)],
                     "bytes_on_node": float(nbytes[mine][:, where == i].sum()),
                     "bytes_off_node": float(nbytes[mine][:, where != i].sum()),
                     "messages_on_node": int(msgs[mine][:, where == i].sum()),
                     "messages_off_node": int(msgs[mine][:, where != i].sum())})
    return {"nodes": rows, "bytes_on_node": float(nbytes[same].sum()),
            "bytes_off_node": float(nbytes[~same].sum()),
            "messages_on_node": int(msgs[same].sum()), "messages_off_node": int(msgs[~same].sum())}
