#!/usr/bin/env python3
"""Where a pytest run's time goes: per file and per test (each test is one launch or a few),
from the JUnit XML that `make test` writes (build/pytest-junit.xml), and, given the checks log
(MPIOPT_TEST_CHECKS_LOG, which `make test` writes to build/pytest-checks.tsv), the checks the
test programs reported ("N checks") per file.

  python3 tests/durations.py build/pytest-junit.xml [--checks build/pytest-checks.tsv] [--top 40]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("xml", nargs="+", help="one JUnit XML file, or two (before, after)")
    ap.add_argument("--checks", nargs="*", default=[], help="the checks log(s), in the same order")
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


if __name__ == "__main__":
    main()
