"""Reading the table MPIOPT_REPORT=1 makes rank 0 print on stderr at MPI_Finalize
(src/coll/engine/report.c): which reduction calls mpiopt ran, with which algorithms, and why the
others went to the vendor. Shared by `mpiopt advise` and the tests."""
from __future__ import annotations

import re
from dataclasses import dataclass

_ROW = re.compile(r"^  (MPI_\S+(?: \(Fortran\))?)\s+(\d+)\s+(\d+)\s+(\d+)  (.*)$", re.M)
_TOTAL = re.compile(r"^mpiopt: (\d+) of (\d+) reduction calls ran mpiopt's algorithms$", re.M)
_NONE_TAKEN = re.compile(r"^mpiopt: warning: none of the (\d+) reduction calls", re.M)


@dataclass
class ReportRow:
    entry: str          # MPI_Allreduce, MPI_Reduce (Fortran), …
    calls: int
    by_mpiopt: int
    by_vendor: int
    details: str        # "ring 12, shared_memory 3 | why the vendor's: …"

    @property
    def algorithms(self) -> str:
        return self.details.split(" | ")[0] if self.by_mpiopt else ""

    @property
    def vendor_reasons(self) -> str:
        if not self.by_vendor:
            return ""
        return self.details.split(" | ")[-1]


def rows(stderr: str) -> dict[str, ReportRow]:
    """{entry point: its row} of the report in a run's stderr ({} when there is none)."""
    return {m.group(1): ReportRow(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                                  m.group(5)) for m in _ROW.finditer(stderr)}


def total(stderr: str) -> tuple[int, int] | None:
    """(calls mpiopt ran, all reduction calls) from the report's last line, or None."""
    m = _TOTAL.search(stderr)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = _NONE_TAKEN.search(stderr)
    return (0, int(m.group(1))) if m else None


def notes(stderr: str) -> list[str]:
    """The report's other lines of its own (fallbacks of the shared-memory path, warnings)."""
    return [line for line in stderr.splitlines()
            if line.startswith("mpiopt: ") and not _TOTAL.match(line)]
