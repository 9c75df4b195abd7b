"""Benchmarks run by `mpiopt bench NAME`, one module each.

A module defines NAME, HELP, IN_REPORT (whether the bare `mpiopt bench` runs it as part of the
main report; REPORT_RUNS, optional: the argument lists of its runs there, default [[]]),
`add_arguments(parser)` and `run(args) -> int`. `args` always has `json` (print
JSON instead of tables) and `results` (the directory for tables and plots)."""
from __future__ import annotations

import json
from pathlib import Path


def save_document(args, filename: str, out: dict) -> Path:
    """Writes a benchmark's JSON document to RESULTS/filename (its path listed in out["files"])
    and, with --json, prints it: the file and the printed document are the same."""
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    path = results / filename
    out.setdefault("files", [str(path)])
    path.write_text(json.dumps(out, indent=1) + "\n")
    if args.json:
        print(json.dumps(out, indent=1))
    return path
