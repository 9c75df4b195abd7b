"""The transformation report: every collective call site, what was done and why."""
from __future__ import annotations

import shutil

from rich.console import Console
from rich.table import Table

from .engine import FileResult

SCHEMA_VERSION = 1


def to_json(results: list[FileResult], written: dict) -> dict:
    files = []
    for r in results:
        files.append({"file": str(r.path), "output": written.get(str(r.path)), "changed": r.changed,
                      "seconds": round(r.seconds, 4), "cpu_seconds": round(r.cpu_seconds, 4),
                      "target": {"mpi_version": r.target.version, "persistent_prefix": r.target.prefix},
                      "sites": r.sites})
    sites = [s for r in results for s in r.sites]
    return {"schema": SCHEMA_VERSION, "files": files,
            "summary": {"sites": len(sites),
                        "nonblocking": sum(s["action"] == "nonblocking" for s in sites),
                        "persistent": sum(s["action"] == "persistent" for s in sites),
                        "unchanged": sum(s["action"] == "unchanged" for s in sites)}}


def _waits(site: dict) -> str:
    parts = []
    for w in site["waits"]:
        guard = {"all": "", "root": " root", "nonroot": " non-root"}[w["guard"]]
        flag = " (flag)" if w["flag"] else ""
        parts.append(f"line {w['line']}{guard}{flag}")
    return "\n".join(parts)


def _stops(site: dict) -> str:
    return "\n".join(f"{w['blocked_by']} (line {w['blocked_line']})" for w in site["waits"])


def print_table(results: list[FileResult], console: Console | None = None):
    # wide enough for the reasons when the output is a file or a pipe
    console = console or Console(width=max(shutil.get_terminal_size((150, 24)).columns, 120))
    table = Table(title="mpiopt transform: collective call sites", show_lines=True)
    table.add_column("site", no_wrap=True)
    table.add_column("function")
    table.add_column("call")
    table.add_column("action")
    table.add_column("wait before", no_wrap=True)
    table.add_column("stopped by", ratio=3)
    table.add_column("note", ratio=2)
    for r in results:
        for s in r.sites:
            style = {"unchanged": "yellow", "persistent": "cyan"}.get(s["action"], "green")
            table.add_row(f"{r.path.name}:{s['line']}", s["function"], s["call"].replace("MPI_", ""),
                          f"[{style}]{s['action']}[/]", _waits(s), _stops(s), s["reason"])
    console.print(table)
    sites = [s for r in results for s in r.sites]
    console.print(f"{len(sites)} call sites: "
                  f"{sum(s['action'] == 'nonblocking' for s in sites)} nonblocking, "
                  f"{sum(s['action'] == 'persistent' for s in sites)} persistent, "
                  f"{sum(s['action'] == 'unchanged' for s in sites)} unchanged; "
                  f"{sum(r.seconds for r in results):.2f} s")
