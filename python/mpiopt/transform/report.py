"""The transformation report: every collective call site, what was done and why."""
from __future__ import annotations

import shutil
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .engine import FileResult

SCHEMA_VERSION = 1


def to_json(results: list[FileResult], written: dict, select=None) -> dict:
    """The report; with `select` (a costs.Selector, --profile) a "profile" section: the profile,
    the selection, and its sites of blocking collectives that matched no call in the files."""
    files = []
    for r in results:
        files.append({"file": str(r.path), "output": written.get(str(r.path)), "changed": r.changed,
                      "seconds": round(r.seconds, 4), "cpu_seconds": round(r.cpu_seconds, 4),
                      "target": {"mpi_version": r.target.version, "persistent_prefix": r.target.prefix},
                      "sites": r.sites})
    sites = [s for r in results for s in r.sites]
    out = {"schema": SCHEMA_VERSION, "files": files,
            "summary": {"sites": len(sites),
                        "nonblocking": sum(s["action"] == "nonblocking" for s in sites),
                        "persistent": sum(s["action"] == "persistent" for s in sites),
                        "unchanged": sum(s["action"] == "unchanged" for s in sites),
                        "across_functions": sum(_moved_across(s) for s in sites)}}
    if select is not None:
        out["profile"] = select.to_json([r.path for r in results])
        out["summary"]["skipped_by_profile"] = sum(_skipped(s) for s in sites)
    return out


def _moved_across(site: dict) -> bool:
    """A call of a helper whose collective's wait (and what the helper does after it) moved into
    the caller (across.py)."""
    return "helper" in site.get("across", {}) and site["action"] != "unchanged"


def _across_note(site: dict) -> str:
    a = site.get("across")
    if not a or "split" not in a:
        return ""
    if a["split"]:
        moved = [c["line"] for c in a["calls"] if c["moved"]]
        return f"; split: its wait moves into the call(s) at line {', '.join(map(str, moved))}"
    return f"; its wait stays in it: {a['reason']}" if a["reason"] else ""


def _skipped(site: dict) -> bool:
    """Left as it is because the profile did not choose it (not for the transformer's reasons)."""
    p = site.get("profile")
    return p is not None and not p["selected"] and site["reason"] == p["reason"]


def _cost(site: dict) -> str:
    p = site.get("profile")
    if p is None:
        return ""
    if p["seconds"] is None:
        return "not called"
    rank = f"#{p['rank']} " if p["rank"] else ""
    pct = p["percent"]
    return (f"{rank}{pct:.2g} % of MPI\n" if pct < 1 else f"{rank}{pct:.1f} % of MPI\n") + \
        f"{p['seconds']:.3g} s, {p['count']:g} call{'s' * (p['count'] != 1)}"


def _waits(site: dict) -> str:
    parts = []
    for w in site["waits"]:
        guard = {"all": "", "root": " root", "nonroot": " non-root"}[w["guard"]]
        flag = " (flag)" if w["flag"] else ""
        parts.append(f"line {w['line']}{guard}{flag}")
    return "\n".join(parts)


def _stops(site: dict) -> str:
    return "\n".join(f"{w['blocked_by']} (line {w['blocked_line']})" for w in site["waits"])


def _console() -> Console:
    # wide enough for the reasons when the output is a file or a pipe
    return Console(width=max(shutil.get_terminal_size((150, 24)).columns, 120))


def print_table(results: list[FileResult], console: Console | None = None, select=None):
    console = console or _console()
    if select is not None:
        console.print(f"profile {select.path} ({select.ranks} ranks): rewriting the call sites with "
                      f"{select.describe()}")
    table = Table(title="mpiopt transform: collective call sites", show_lines=True)
    table.add_column("site", no_wrap=True)
    table.add_column("function")
    table.add_column("call", no_wrap=True)
    table.add_column("action")
    if select is not None:
        table.add_column("profile", no_wrap=True)
    table.add_column("wait before", no_wrap=True)
    table.add_column("stopped by", ratio=3)
    table.add_column("note", ratio=2)
    for r in results:
        for s in r.sites:
            style = {"unchanged": "yellow", "persistent": "cyan"}.get(s["action"], "green")
            action = "skipped" if _skipped(s) else s["action"]
            note = s["reason"] + _across_note(s)
            if s.get("profile") and s["profile"]["note"]:
                note += f" ({s['profile']['note']})"
            call = s["call"].replace("MPI_", "") + (f" ({s['half']})" if s.get("half") else "")
            if "helper" in s.get("across", {}):
                call = f"{s['across']['helper_call']}() -> {call}"
            row = [f"{r.path.name}:{s['line']}", s["function"], call,
                   f"[{style}]{action}[/]"] + ([_cost(s)] if select is not None else []) + \
                [_waits(s), _stops(s), note]
            table.add_row(*row)
    console.print(table)
    if select is not None:
        _print_unmatched(select, [r.path for r in results], console)
    sites = [s for r in results for s in r.sites]
    console.print(f"{len(sites)} call sites: "
                  f"{sum(s['action'] == 'nonblocking' for s in sites)} nonblocking, "
                  f"{sum(s['action'] == 'persistent' for s in sites)} persistent, "
                  f"{sum(s['action'] == 'unchanged' for s in sites)} unchanged"
                  + (f" ({sum(_moved_across(s) for s in sites)} waits moved across a function boundary)"
                     if any(_moved_across(s) for s in sites) else "")
                  + (f" ({sum(_skipped(s) for s in sites)} skipped by the profile)"
                     if select is not None else "") + "; "
                  f"{sum(r.seconds for r in results):.2f} s")


def _print_unmatched(select, paths, console: Console):
    rest = select.unmatched(paths)
    if rest:
        table = Table(title="profile sites of collectives that match no call in the files given")
        for c in ("site", "function", "call", "% of MPI", "time (s)", "calls a rank", "why"):
            table.add_column(c)
        for u in rest:
            where = f"{u['file']}:{u['line']}" if u["file"] else "?"
            table.add_row(where, ", ".join(u["function"]), u["call"].replace("MPI_", ""),
                          f"{u['percent']:.3g}", f"{u['seconds']:.3g}", f"{u['count']:g}", u["reason"])
        console.print(table)
    other = select.other_calls()
    if other:
        console.print(f"{other} profile site(s) of other MPI calls (point-to-point, setup, nonblocking "
                      "or persistent collectives): not ranked (blocking sends and receives in the "
                      "files are rewritten when they pass the percentage threshold, never by --top)")


def print_profile_summary(results: list[FileResult], select, stream):
    """One line a call site, and the profile's unmatched sites: on stderr when the output is the
    source (or a diff), so that what was skipped is never silent."""
    out = []
    for r in results:
        for s in r.sites:
            p = s.get("profile") or {"reason": "", "note": ""}
            what = "skipped" if _skipped(s) else s["action"]
            note = f" ({p['note']})" if p["note"] else ""
            if what == "unchanged":
                why = f"{s['reason']}; profile: {p['reason']}"
            else:
                why = p["reason"] or s["reason"]       # a call of a split helper has no profile row
            out.append(f"  {r.path.name}:{s['line']} {s['call']} in {s['function']}: {what}: {why}{note}")
    for u in select.unmatched([r.path for r in results]):
        where = f"{Path(u['file']).name}:{u['line']}" if u["file"] else "?"
        out.append(f"  profile site {where} {u['call']} ({u['percent']:.3g} % of MPI time): {u['reason']}")
    stream.write(f"mpiopt transform: profile {select.path}: rewriting the call sites with "
                 f"{select.describe()}\n" + "\n".join(out) + ("\n" if out else ""))
