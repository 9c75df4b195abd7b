"""Benchmarks run by `mpiopt bench NAME`, one module each.

A module defines NAME, HELP, IN_REPORT (whether the bare `mpiopt bench` runs it as part of the
main report; REPORT_RUNS, optional: the argument lists of its runs there, default [[]]),
`add_arguments(parser)` and `run(args) -> int`. `args` always has `json` (print
JSON instead of tables) and `results` (the directory for tables and plots)."""
