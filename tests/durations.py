#!/usr/bin/env python3
"""Where a pytest run's time goes: per file and per test (each test is one launch or a few),
from the JUnit XML that `make test` writes (build/pytest-junit.xml), and, given the checks log
(MPIOPT_TEST_CHECKS_LOG, which `make test` writes to build/pytest-checks.tsv), the checks the
test programs reported ("N checks") per file; given the launches log (MPIOPT_TEST_LAUNCHES_LOG,
build/pytest-launches.tsv), each file's launches by program (mpirun.openmpi, mpirun.mpich,
smpirun, mpicc, mpiopt COMMAND, ...): how many, and the seconds they took.

  python3 tests/durations.py build/pytest-junit.xml [--checks build/pytest-checks.tsv]
      [--launches build/pytest-launches.tsv] [--top 40]
  python3 tests/durations.py BEFORE.xml AFTER.xml      two runs side by side, per file
"""
from __future__ import annotations

import argparse
import collections
import xml.etree.ElementTree as ET


def cases(path: str) -> list[tuple[str, str, float, str]]:
    """(file, test, seconds, outcome) of every test case of a JUnit XML file."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        file = case.get("classname", "").split(".")[-1] + ".py" if case.get("classname") else "?"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        out.append((file, case.get("name", "?"), float(case.get("time", 0)), outcome))
    return out


def per_file(rows) -> dict[str, tuple[float, int]]:
    totals: dict[str, list] = collections.defaultdict(lambda: [0.0, 0])
    for file, _, seconds, outcome in rows:
        totals[file][0] += seconds
        totals[file][1] += outcome == "passed"
    return {f: (t, n) for f, (t, n) in totals.items()}


def checks_per_file(path: str) -> dict[str, int]:
    out: dict[str, int] = collections.Counter()
    with open(path) as f:
        for line in f:
            test, n, _ = line.rstrip("\n").split("\t", 2)
            out[test.split("::")[0].split("/")[-1]] += int(n)
    return out


def launches_per_file(path: str) -> dict[str, dict[str, list]]:
    """{file: {program: [launches, seconds]}} from a launches log (test, program, ranks, s, rc)."""
    out: dict[str, dict[str, list]] = collections.defaultdict(
        lambda: collections.defaultdict(lambda: [0, 0.0]))
    with open(path) as f:
        for line in f:
            test, program, _ranks, seconds, _rc = line.rstrip("\n").split("\t")
            entry = out[test.split("::")[0].split("/")[-1]][program]
            entry[0] += 1
            entry[1] += float(seconds)
    return out


def print_launches(path: str, top: int) -> None:
    """Per file: the launches (all programs), their seconds, and the three costliest programs."""
    files = launches_per_file(path)
    print("\nlaunches per file (the three costliest programs: launches, seconds):\n")
    print("| file | launches | s in launches | by program |\n|---|---|---|---|")
    order = sorted(files, key=lambda f: -sum(s for _, s in files[f].values()))
    for f in order[:top]:
        progs = sorted(files[f].items(), key=lambda kv: -kv[1][1])
        shown = ", ".join(f"{p} {n} / {s:.0f}" for p, (n, s) in progs[:3])
        print(f"| {f} | {sum(n for n, _ in files[f].values())} | "
              f"{sum(s for _, s in files[f].values()):.0f} | {shown} |")
    totals = collections.defaultdict(lambda: [0, 0.0])
    for progs in files.values():
        for p, (n, s) in progs.items():
            totals[p][0] += n
            totals[p][1] += s
    print("\n| program | launches | s | s a launch |\n|---|---|---|---|")
    for p, (n, s) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"| {p} | {n} | {s:.0f} | {s / n:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("xml", nargs="+", help="one JUnit XML file, or two (before, after)")
    ap.add_argument("--checks", nargs="*", default=[], help="the checks log(s), in the same order")
    ap.add_argument("--launches", help="the launches log of the (last) run")
    ap.add_argument("--top", type=int, default=30, help="slowest tests to list (one XML)")
    args = ap.parse_args()
    runs = [cases(x) for x in args.xml]
    checks = [checks_per_file(c) for c in args.checks]
    files = per_file(runs[0]) if len(runs) == 1 else None
    tables = [per_file(r) for r in runs]
    names = sorted(set().union(*tables), key=lambda f: -max(t.get(f, (0, 0))[0] for t in tables))
    head = "| file | " + " | ".join(f"s ({x}) | passed | checks" for x in ("run",) * len(runs)) + " |"
    if len(runs) == 2:
        head = "| file | s before | passed | checks | s after | passed | checks |"
    print(head)
    print("|" + "---|" * (1 + 3 * len(runs)))
    for f in names:
        cells = []
        for i, t in enumerate(tables):
            s, n = t.get(f, (0.0, 0))
            c = checks[i].get(f, 0) if i < len(checks) else ""
            cells += [f"{s:.0f}", str(n), str(c)]
        print(f"| {f} | " + " | ".join(cells) + " |")
    totals = []
    for i, r in enumerate(runs):
        c = sum(checks[i].values()) if i < len(checks) else ""
        totals += [f"{sum(x[2] for x in r):.0f}", str(sum(x[3] == "passed" for x in r)), str(c)]
    print("| **all** | " + " | ".join(totals) + " |")
    if files is not None:
        print(f"\nslowest {args.top} tests:\n")
        print("| s | test |\n|---|---|")
        for file, name, s, outcome in sorted(runs[0], key=lambda x: -x[2])[:args.top]:
            print(f"| {s:.1f} | {file}::{name}{'' if outcome == 'passed' else ' (' + outcome + ')'} |")

    if args.launches:
        print_launches(args.launches, args.top)


if __name__ == "__main__":
    main()
