"""`mpiopt report`: the tables of one profile (mpiopt-profile.json), or two side by side with
the ratio of their averages (the FAST/SLOW view), the calls and ranks that dominate, and the
per-rank time and communication matrix pictures."""
from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import mpi
from ..errors import UsageError
from ..profile import Line, compare, compare_sites, load, sections, site_rows, top_calls, top_ranks
from ..profile.tables import node_split, papi_note
from ..console import console as report_console

EXAMPLE = """examples:
  mpiopt report mpiopt-profile.json                     System / MPI / region summaries
  mpiopt report fast/mpiopt-profile.json slow/mpiopt-profile.json   side by side, ratio slow/fast
  mpiopt report mpiopt-profile.json --top 5             the 5 calls and ranks that dominate
  mpiopt report mpiopt-profile.json --png prof          prof-ranks.png, prof-matrix.png
  mpiopt report mpiopt-profile.json --json              the profile's sections as JSON
  mpiopt report mpiopt-profile.json --sites             top call sites (mpiopt profile --sites)
  mpiopt report a/mpiopt-profile.json b/mpiopt-profile.json --sites   site by site, ratio B/A
  mpiopt report mpiopt-profile.json --chrome-trace t.json   the --trace timeline for Perfetto

imb% = 100 (max - avg) / max * N / (N - 1) for N ranks (CrayPat's: 100 when one rank holds
all of it); --json also gives imbalance = max - avg. minPE / maxPE: the rank of the min / max.
"""


def _value(v: float, kind: str) -> str:
    if kind == "time":
        return f"{v:.4g}" if abs(v) < 1 else f"{v:.3f}"
    if kind == "mb":
        return f"{v:.3f}"
    return f"{v:.0f}"


def _stat_cells(line: Line | None) -> list[str]:
    if line is None:
        return ["", "", "", "", "", ""]
    s = line.stat
    return [_value(s["min"], line.kind), _value(s["max"], line.kind), _value(s["avg"], line.kind),
            str(s["min_pe"]), str(s["max_pe"]), f"{line.imbalance_pct:.1f}"]


STAT_COLUMNS = ("min", "max", "avg", "minPE", "maxPE", "imb%")


def print_profile(prof, top: int = 0, console: Console | None = None) -> None:
    console = console or report_console()
    console.print(f"Profile of {prof.program}\nNumber of processes {prof.ranks}, MPI "
                  f"{prof.data.get('flavour', '?')}, collective sync timing "
                  f"{'on' if prof.data.get('sync_timing') else 'off'}")
    for title, lines in sections(prof):
        table = Table(title=title, title_justify="left")
        table.add_column("")
        for c in STAT_COLUMNS:
            table.add_column(c, justify="right", no_wrap=True)
        for line in lines:
            table.add_row(line.label, *_stat_cells(line))
        console.print(table)
    print_nodes(prof, console)
    if not prof.data.get("papi", {}).get("available"):
        console.print(f"PAPI summary: {papi_note(prof)}")
    if top:
        print_top(prof, top, console)


def print_nodes(prof, console: Console) -> None:
    """The point-to-point matrix split by the hosts the ranks ran on (node_split), where the
    profile has them and the ranks ran on more than one host."""
    split = node_split(prof)
    if not split or len(split["nodes"]) < 2:
        return
    table = Table(title=f"Nodes: point-to-point bytes sent on-node / off-node, by host "
                  f"({len(split['nodes'])} hosts)", title_justify="left")
    for col in ("host", "ranks", "on-node bytes", "off-node bytes", "on-node msgs", "off-node msgs"):
        table.add_column(col, justify="left" if col in ("host", "ranks") else "right")
    for row in split["nodes"]:
        table.add_row(Text(row["host"]), ",".join(map(str, row["ranks"])),
                      f"{row['bytes_on_node']:.4G}", f"{row['bytes_off_node']:.4G}",
                      str(row["messages_on_node"]), str(row["messages_off_node"]))
    table.add_row("all", "", f"{split['bytes_on_node']:.4G}", f"{split['bytes_off_node']:.4G}",
                  str(split["messages_on_node"]), str(split["messages_off_node"]))
    console.print(table)


def print_top(prof, n: int, console: Console) -> None:
    table = Table(title=f"top {n} calls by time on the slowest rank", title_justify="left")
    for c in ("call", "max time", "maxPE", "avg time", "share of MPI", "imb%"):
        table.add_column(c, justify="left" if c == "call" else "right")
    for r in top_calls(prof, n):
        table.add_row(r["call"], f"{r['max_time']:.6f}", str(r["max_pe"]), f"{r['avg_time']:.6f}",
                      f"{100 * r['share_of_mpi_time']:.1f}%", f"{r['imbalance_pct']:.1f}")
    console.print(table)
    ranks = top_ranks(prof, n)
    table = Table(title=f"top {n} ranks", title_justify="left")
    for c in ("by MPI time", "MPI time", "by compute time", "compute time"):
        table.add_column(c, justify="right")
    for a, b in zip(ranks["mpi_time"], ranks["compute_time"]):
        table.add_row(str(a["rank"]), f"{a['mpi_time']:.6f}", str(b["rank"]), f"{b['compute_time']:.6f}")
    console.print(table)


SITES_SHOWN = 20


def _no_sites(prof) -> str:
    return (f"{prof.path}: no call sites (profile with `mpiopt profile --sites`, or "
            "MPIOPT_PROFILE_SITES=1)")


def print_sites(prof, n: int, console: Console) -> None:
    """The top call sites table: call, file:line, function, count, bytes, time min/max/avg,
    minPE/maxPE (of time), % of MPI time (summed over ranks)."""
    rows = site_rows(prof)
    if not rows:
        console.print(_no_sites(prof))
        return
    sites = prof.data["sites"]
    table = Table(title=f"top call sites ({min(n, len(rows))} of {len(rows)}, by time summed over "
                  f"ranks; {sites.get('resolver')})", title_justify="left")
    for c in ("call", "file:line", "function", "count avg", "bytes avg", "time min", "time max",
              "time avg", "minPE", "maxPE", "% MPI"):
        table.add_column(c, justify="left" if c in ("call", "file:line", "function") else "right")
    for r in rows[:n]:
        t = r["time"]
        where = r["where"] + "".join(f"\n  < {s}" for s in r["stack"])
        # Text, not markup: a C++ name's "[clone .isra.0]" would be taken for a style and dropped
        table.add_row(_short_call(r["call"]), Text(where), Text(r["function"]), f"{r['count']['avg']:.4g}",
                      f"{r['bytes']['avg']:.4g}", f"{t['min']:.3g}", f"{t['max']:.3g}",
                      f"{t['avg']:.3g}", str(t["min_pe"]), str(t["max_pe"]),
                      f"{100 * r['share_of_mpi_time']:.1f}")
    console.print(table)
    if sites.get("overflow"):
        console.print(f"{sites['overflow']:.0f} calls not counted by site: a thread's table of "
                      f"{sites.get('capacity_per_thread')} sites was full")
    if any(not r["debug_info"] for r in rows[:n]):
        console.print("no debug info: function+offset and the module, not file:line (build with -g "
                      "for lines; an mpi4py program's sites are in mpi4py's MPI module)")


def print_trace_note(prof) -> None:
    t = prof.data.get("trace") or {}
    if not t.get("enabled"):
        return
    if not t.get("written"):
        print(f"trace: not written: {t.get('reason')}")
        return
    dropped = f", {t['dropped']} dropped (buffers full: --trace-events)" if t.get("dropped") else ""
    print(f"trace: {t['path']}/traces.otf2, {t['events_recorded']} events{dropped} "
          f"(mpiopt report {prof.path} --chrome-trace OUT.json)")


def trace_archive(prof) -> Path:
    """The OTF2 anchor file of a profile taken with --trace: mpiopt-trace/ (or mpiopt-trace.N/
    where an older one was in the way) beside the profile."""
    t = prof.data.get("trace") or {}
    if not t.get("enabled"):
        raise UsageError(f"{prof.path}: no trace (profile with `mpiopt profile --trace`, or "
                         "MPIOPT_PROFILE_TRACE=1)")
    if not t.get("written"):
        raise UsageError(f"{prof.path}: the trace was not written: {t.get('reason')}")
    # the archive's directory beside the profile (its recorded path may be relative to the
    # directory the program ran in)
    anchor = prof.path.parent / Path(t.get("path") or "mpiopt-trace").name / "traces.otf2"
    if not anchor.exists():
        raise UsageError(f"{anchor} does not exist (moved without the profile's mpiopt-trace/?)")
    return anchor


def chrome_trace(prof, out: Path) -> dict:
    """The profile's OTF2 trace as Chrome trace-event JSON, by mpiopt-otf2-chrome (the OTF2
    reader API, built with the profiler); {"events": n, "path": out}."""
    anchor = trace_archive(prof)
    converters = [mpi.binary(f, "mpiopt-otf2-chrome") for f in
                  [prof.data.get("flavour")] + mpi.built_flavours() if f]
    exe = next((c for c in converters if c.exists()), None)
    if exe is None:
        raise UsageError("mpiopt-otf2-chrome is not built (make build; it needs libotf2-trace-dev)")
    if out.parent and not out.parent.exists():
        raise UsageError(f"--chrome-trace: directory {out.parent} does not exist")
    r = subprocess.run([str(exe), str(anchor), str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        raise UsageError(r.stderr.strip() or f"{exe.name} failed with status {r.returncode}")
    return {"path": str(out), "events": int(r.stdout.split()[0]), "archive": str(anchor)}


def _short_call(name: str) -> str:
    return name[4:] if name.startswith("MPI_") else name


def print_sites_comparison(a, b, n: int, console: Console) -> None:
    rows = compare_sites(a, b)
    if not rows:
        console.print(_no_sites(a) if not site_rows(a) else _no_sites(b))
        return
    table = Table(title="call sites, A and B (avg time a rank, ratio B/A)", title_justify="left")
    for c in ("call", "file:line", "function", "A count", "A time", "B count", "B time", "B/A"):
        table.add_column(c, justify="left" if c in ("call", "file:line", "function") else "right")
    for (call, where, function, stack), x, y, ratio in rows[:n]:
        table.add_row(_short_call(call), Text(where + "".join(f"\n  < {s}" for s in stack)), Text(function),
                      f"{x['count']['avg']:.4g}" if x else "", f"{x['time']['avg']:.3g}" if x else "",
                      f"{y['count']['avg']:.4g}" if y else "", f"{y['time']['avg']:.3g}" if y else "",
                      f"{ratio:.2f}" if ratio is not None else "")
    console.print(table)


def print_comparison(a, b, console: Console) -> None:
    console.print(f"A: {a.path} ({a.ranks} ranks)  {a.program}\nB: {b.path} ({b.ranks} ranks)  {b.program}")
    for title, rows in compare(a, b):
        table = Table(title=title, title_justify="left")
        table.add_column("")
        # avg, max and maxPE of each run keep the table readable in 80 columns; --json has all
        for side in ("A", "B"):
            for c in ("avg", "max", "maxPE"):
                table.add_column(f"{side} {c}", justify="right", no_wrap=True)
        table.add_column("B/A", justify="right", no_wrap=True)
        for label, x, y, ratio in rows:
            cx, cy = _stat_cells(x), _stat_cells(y)
            table.add_row(label, cx[2], cx[1], cx[4], cy[2], cy[1], cy[4],
                          f"{ratio:.2f}" if ratio is not None else "")
        console.print(table)


def _lines_json(lines: list[Line]) -> list[dict]:
    return [{"label": l.label, **l.stat, "imbalance": l.imbalance, "imbalance_pct": l.imbalance_pct}
            for l in lines]


def report(args) -> int:
    if args.top < 0:
        raise UsageError("--top must be at least 0")
    profiles = [load(p) for p in args.profiles]
    chrome = None
    if args.chrome_trace:
        if len(profiles) != 1:
            raise UsageError("--chrome-trace takes one profile")
        chrome = chrome_trace(profiles[0], Path(args.chrome_trace))
    pngs = []
    if args.png:
        from ..profile.plots import matrix_png, ranks_png
        prefix = Path(args.png)
        if prefix.parent and not prefix.parent.exists():
            raise UsageError(f"--png: directory {prefix.parent} does not exist")
        pngs = [str(ranks_png(profiles[0], Path(f"{prefix}-ranks.png"))),
                str(matrix_png(profiles[0], Path(f"{prefix}-matrix.png")))]
    if args.json:
        out = []
        for p in profiles:
            out.append({"profile": str(p.path), "ranks": p.ranks, "program": p.program,
                        "sections": {t: _lines_json(ls) for t, ls in sections(p)},
                        "papi": papi_note(p), "hosts": p.hosts, "node_split": node_split(p),
                        **({"top_calls": top_calls(p, args.top), "top_ranks": top_ranks(p, args.top)}
                           if args.top else {}),
                        **({"sites": site_rows(p)} if args.sites else {})})
        doc = {"profiles": out, "png": pngs, **({"chrome_trace": chrome} if chrome else {})}
        if len(profiles) == 2:
            doc["ratio_b_over_a"] = {f"{t}: {label}": ratio for t, rows in compare(*profiles)
                                     for label, _, _, ratio in rows}
            if args.sites:
                doc["sites_b_over_a"] = [
                    {"call": k[0], "where": k[1], "function": k[2], "stack": list(k[3]),
                     "a": x, "b": y, "time_ratio": ratio}
                    for k, x, y, ratio in compare_sites(*profiles)]
        print(json.dumps(doc, indent=1))
        return 0
    console = report_console()
    if len(profiles) == 2:
        print_comparison(*profiles, console)
        if args.top:
            for p in profiles:
                console.print(f"{p.path}:")
                print_top(p, args.top, console)
    else:
        print_profile(profiles[0], args.top, console)
    if args.sites:
        n = args.top or SITES_SHOWN
        if len(profiles) == 2:
            print_sites_comparison(*profiles, n, console)
        else:
            print_sites(profiles[0], n, console)
    for png in pngs:
        print(f"wrote {png}")
    if chrome:
        print(f"wrote {chrome['path']}: {chrome['events']} events, one track a rank (open it in "
              "ui.perfetto.dev or chrome://tracing)")
    return 0


def register(sub) -> None:
    p = sub.add_parser("report", help="show a profile (or two side by side) from mpiopt profile",
                       description="Tables of an mpiopt-profile.json written by libmpiopt-profile "
                       "(`mpiopt profile`): System and MPI summaries with min, max, avg, minPE, "
                       "maxPE and imbalance per line; with a second profile, both side by side.",
                       epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profiles", nargs="+", metavar="PROFILE.json", help="one profile, or two to compare")
    p.add_argument("--top", type=int, default=0, metavar="N", help="the N calls and ranks that dominate")
    p.add_argument("--png", metavar="PREFIX",
                   help="write PREFIX-ranks.png (MPI and compute time per rank) and PREFIX-matrix.png")
    p.add_argument("--sites", action="store_true",
                   help="the top call sites (a profile taken with --sites); with two profiles, "
                   "site by site; --top N sets how many (default 20)")
    p.add_argument("--chrome-trace", metavar="OUT.json",
                   help="convert the profile's OTF2 trace (mpiopt profile --trace) to Chrome "
                   "trace-event JSON: one track a rank, MPI calls and MPI_Pcontrol regions as slices")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=_checked)


def _checked(args) -> int:
    if len(args.profiles) > 2:
        raise UsageError(f"report takes one or two profiles, got {len(args.profiles)}")
    return report(args)
