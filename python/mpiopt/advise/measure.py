"""Figures from repeated runs: median, spread, the change from one variant to another and a plain
verdict, and whether a variant's output still says what the baseline's says."""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from ..benchmarks.transform import compare_outputs
from .launches import RunRecord


@dataclass
class Figures:
    """A variant's times over its repetitions (runs that failed left out)."""
    values: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def spread(self) -> float:
        """(max - min) / median: how far apart the repetitions were."""
        return (self.high - self.low) / self.median if self.median > 0 else 0.0

    def to_json(self) -> dict:
        return {"median": self.median, "min": self.low, "max": self.high, "spread": self.spread,
                "values": self.values}


def figures(records: list[RunRecord], key: str) -> Figures | None:
    values = [getattr(r, key) for r in records if r.ok and getattr(r, key) is not None]
    return Figures(values) if values else None


@dataclass
class Change:
    """after against before: the ratio of the medians and whether the runs tell them apart."""
    before: Figures
    after: Figures

    @property
    def ratio(self) -> float:
        """after / before: below 1 is faster."""
        return self.after.median / self.before.median if self.before.median > 0 else float("nan")

    @property
    def measurable(self) -> bool:
        """The two ranges of repetitions do not overlap: every run of one was faster than every
        run of the other. With a few repetitions on a shared machine, anything less is noise."""
        return self.after.high < self.before.low or self.after.low > self.before.high

    @property
    def verdict(self) -> str:
        if len(self.before.values) < 2 or len(self.after.values) < 2:
            return "one run each: no spread to judge by"
        if not self.measurable:
            return "no measurable change"
        pct = abs(1 - self.ratio) * 100
        return f"{pct:.0f} % faster" if self.ratio < 1 else f"{pct:.0f} % slower"

    def to_json(self) -> dict:
        return {"ratio": self.ratio, "measurable": self.measurable, "verdict": self.verdict}


def result_text(stdout: str, check: str | None) -> str:
    """What is compared between runs: the whole stdout, or with --check the text its regex
    matches (every match, one a line; a regex with groups gives the groups)."""
    if check is None:
        return stdout
    out = []
    for m in re.finditer(check, stdout, re.M):
        out.append(" ".join(g or "" for g in m.groups()) if m.groups() else m.group(0))
    return "\n".join(out)


@dataclass
class OutputCheck:
    ok: bool | None                 # None: could not be checked
    message: str

    def to_json(self) -> dict:
        return {"ok": self.ok, "message": self.message}


def baseline_reference(baseline: list[RunRecord], check: str | None) -> tuple[str | None, str]:
    """The baseline's result text, or (None, why) when the baseline's own runs disagree (a
    program that prints timings) or --check matches nothing."""
    texts = [result_text(r.stdout, check) for r in baseline if r.ok]
    if not texts:
        return None, "no baseline run finished"
    if check is not None and not texts[0].strip():
        return None, f"--check {check!r} matches nothing in the baseline's output"
    for other in texts[1:]:
        if compare_outputs(texts[0], other):
            what = "the text --check matches" if check else "its output"
            hint = "" if check else ": give --check REGEX to compare the results only"
            return None, f"the baseline's runs differ among themselves in {what}{hint}"
    return texts[0], ""


def check_output(reference: str | None, why_not: str, records: list[RunRecord],
                 check: str | None) -> OutputCheck:
    """Every run of a variant against the baseline's result (floating numbers to a relative
    1e-8: another reduction order changes the last bits, wrong data changes leading digits)."""
    if reference is None:
        return OutputCheck(None, f"not checked: {why_not}")
    ran = [r for r in records if r.ok]
    if not ran:
        return OutputCheck(None, "not checked: no run finished")
    for r in ran:
        diffs = compare_outputs(reference, result_text(r.stdout, check))
        if diffs:
            return OutputCheck(False, f"output differs from the baseline's (run {r.repetition + 1}): "
                               f"{diffs[0]}" + (f" (+{len(diffs) - 1} more)" if len(diffs) > 1 else ""))
    what = "--check's matches" if check else "stdout"
    return OutputCheck(True, f"{what} as the baseline's in {len(ran)} of {len(ran)} runs")
