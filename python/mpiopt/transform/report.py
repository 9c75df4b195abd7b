"""The transformation report: every collective call site, what was done and why."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .engine import FileResult

SCHEMA_VERSION = 1


def to_json(results: list[FileResult], written: dict) -> dict:
    files = []
    for r in results:
        files.append({"file": str(r.path), "output": written.get(str(r.path)), "changed": r.changed,
                      "seconds": round(r.seconds, 4),
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
        guard = {"all": "", "root": " (root)", "nonroot": " (non-root)"}[w["guard"]]
        flag = " flagged" if w["flag"] else ""
        parts.append(f"before line {w['line']}{guard}{flag}: {w['blocked_by']}"
                     f" (line {w['blocked_line']})")
    return "\n".join(parts)


def print_table(results: list[FileResult], console: Console | None = None):
    console = console or Console()
    table = Table(title="mpiopt transform: collective call sites", show_lines=True)
    for col in ("site", "function", "call", "action", "wait", "why"):
        table.add_column(col, overflow="fold")
    for r in results:
        for s in r.sites:
            style = {"unchanged": "yellow", "persistent": "cyan"}.get(s["action"], "green")
            table.add_row(f"{r.path.name}:{s['line']}", s["function"], s["call"],
                          f"[{style}]{s['action']}[/]", _waits(s), s["reason"])
    console.print(table)
    sites = [s for r in results for s in r.sites]
    console.print(f"{len(sites)} call sites: "
                  f"{sum(s['action'] == 'nonblocking' for s in sites)} nonblocking, "
                  f"{sum(s['action'] == 'persistent' for s in sites)} persistent, "
                  f"{sum(s['action'] == 'unchanged' for s in sites)} unchanged; "
                  f"{sum(r.seconds for r in results):.2f} s")
