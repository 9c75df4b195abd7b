"""The transformer on C++ (tests/transform_cases/cpp_features.cpp): every collective is found
wherever it is (methods, a constructor, a namespace, a template, a lambda), waits stop where
the case's markers say (references, overloads, throw, calls that may throw), the output is a
fixpoint, and the transformed program prints what the original prints with both MPIs.

Kept small for `make test`'s budget: one C++ program, 2 ranks, compiled once a flavour and mode."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from mpiopt import mpi
from mpiopt.transform import Options, transform_file

sys.path.insert(0, str(Path(__file__).parent))
import difftest  # noqa: E402

CASE = Path(__file__).resolve().parents[1] / "transform_cases" / "cpp_features.cpp"
pytestmark = pytest.mark.skipif(not shutil.which("mpicxx.openmpi"), reason="needs Open MPI's C++ wrapper")

_RESULTS: dict = {}


def result(mode="nonblocking", flavour="openmpi"):
    key = (mode, flavour)
    if key not in _RESULTS:
        _RESULTS[key] = transform_file(CASE, Options(mode=mode, flavour=flavour))
    return _RESULTS[key]


def collective_lines() -> list[int]:
    """Lines of the case that call a blocking collective (from the text, not from the tool)."""
    return [i for i, ln in enumerate(CASE.read_text().splitlines(), 1)
            if re.search(r"\bMPI_(Allreduce|Bcast|Reduce|Barrier|Send|Recv)\(", ln)]


def markers(name: str) -> list[int]:
    return [i for i, ln in enumerate(CASE.read_text().splitlines(), 1) if f"/* {name} */" in ln]


def test_every_collective_is_a_site_in_its_function():
    r = result()
    by_line = {s["line"]: s for s in r.sites}
    assert sorted(by_line) == collective_lines()
    functions = {s["function"] for s in r.sites}
    for name in ("Stats::Stats(double)", "Stats::mean(double)", "Stats::spread(double)",
                 "grid::total(const std::vector<double> &)", "global_sum(T, MPI_Datatype)"):
        assert name in functions, functions
    assert any(f.startswith("lambda at line") and f.endswith("in lambda_case()") for f in functions)
    assert any(f.startswith("lambda at line") and f.endswith("in scaled_max") for f in functions)
    assert any(f.startswith("method at line") and f.endswith("in local_class(double)") for f in functions)
    unchanged = [s for s in r.sites if s["action"] != "nonblocking"]
    # the one receive with MPI_ANY_TAG stays blocking, and says why
    assert [(s["call"], "MPI_ANY_TAG" in s["reason"]) for s in unchanged] == [("MPI_Recv", True)], unchanged


def test_waits_stop_at_conflicts_and_pass_independent_statements():
    r = result()
    sites = sorted(r.sites, key=lambda s: s["line"])

    def site_before(line):
        return max((s for s in sites if s["line"] < line), key=lambda s: s["line"])

    conflicts, overlaps = markers("CONFLICT"), markers("OVERLAP")
    assert len(conflicts) >= 6 and len(overlaps) >= 7
    for line in conflicts:
        s = site_before(line)
        assert all(w["line"] <= line for w in s["waits"]), (line, s)
    for line in overlaps:
        s = site_before(line)
        assert all(w["line"] > line for w in s["waits"]), (line, s)


def test_reasons_name_the_cpp_constructs():
    by_fn = {}
    for s in result().sites:
        if s["waits"]:
            by_fn.setdefault(s["function"], []).append(s["waits"][0]["blocked_by"])
    assert "writes `r`" in by_fn["reference_alias()"][0]            # a reference to the buffer
    assert "calls bump" in by_fn["reference_parameter()"][0]         # a reference parameter
    assert "writes `t.value`" in by_fn["reference_member()"][0]     # a reference member
    assert "calls touch (`touch(recv)`)" in by_fn["overloads()"][0]  # the pointer overload
    assert by_fn["checked(double)"][0] == "throw"
    assert "may throw" in by_fn["may_throw(double)"][0]
    assert by_fn["cannot_throw(double)"][0] == "return"             # noexcept: std::terminate


def test_point_to_point_in_a_method():
    r = result()
    pair = sorted((s for s in r.sites if s["function"] == "Pair::swap_and_scale(double)"),
                  key=lambda s: s["line"])
    assert [s["call"] for s in pair] == ["MPI_Send", "MPI_Recv", "MPI_Recv", "MPI_Recv", "MPI_Send", "MPI_Send"]
    text = CASE.read_text().splitlines()
    use = next(i for i, ln in enumerate(text, 1) if "return theirs + scaled + tagged;" in ln)
    scale = use - 1
    for recv in (pair[1], pair[3]):       # both receives of `theirs` wait after the scaling
        assert recv["action"] == "nonblocking"
        assert all(scale < w["line"] <= use for w in recv["waits"]), recv["waits"]


def test_template_pattern_and_lambda_rewritten_in_place():
    out = result().output.decode()
    tmpl = out[out.index("T global_sum(T value"):out.index("// `throw` stops a wait")]
    assert "MPI_Iallreduce(&value, &sum, 1, type, MPI_SUM, MPI_COMM_WORLD, &mpiopt_reqs[0]);" in tmpl
    assert tmpl.index("MPI_Wait(&mpiopt_reqs[0]") < tmpl.index("return sum;")
    lam = out[out.index("auto reduce = [&](double v) {"):out.index("double got[3]")]
    assert lam.count("MPI_Request mpiopt_reqs[1];") == 1
    # the class holds no request arrays: they are in the method bodies
    cls = out[out.index("class Stats {"):out.index("double Stats::spread")]
    assert "MPI_Request mpiopt_reqs" not in cls.split("explicit Stats(double seed)")[0]


def test_range_for_loop_becomes_persistent():
    r = result(mode="persistent")
    (loop,) = [s for s in r.sites if s["function"] == "range_loop()"]
    assert loop["action"] == "persistent", loop["reason"]
    out = r.output.decode()
    body = out[out.index("static void range_loop()"):out.index("int main(")]
    assert body.index("_Allreduce_init(&in, &out") < body.index("for (double s : steps)") \
        < body.index("MPI_Start(&mpiopt_reqs[0])") < body.index("MPI_Request_free(&mpiopt_reqs[0])")


@pytest.mark.parametrize("mode", ["nonblocking", "persistent"])
def test_transforming_the_cpp_output_again_changes_nothing(tmp_path, mode):
    first = result(mode)
    once = tmp_path / CASE.name
    once.write_bytes(first.output)
    assert first.changed
    assert transform_file(once, Options(mode=mode)).output == first.output


def test_cpp_case_prints_the_same_as_the_original(tmp_path):
    failures = difftest.check_transformed(CASE, tmp_path, modes=("nonblocking", "persistent"), ranks=(2,))
    assert not failures, "\n".join(failures)


def test_advise_transforms_cpp_files_of_the_profile(tmp_path):
    """`mpiopt advise`'s transformation step takes the profile's C++ (and Fortran) files too (it
    took *.c only); a file the profile does not name, or of another language, is not taken."""
    from mpiopt.advise.steps import _site_files

    for name in ("a.cpp", "b.cc", "c.c", "d.f90", "e.cpp", "f.py"):
        (tmp_path / name).write_text("")
    sites = [{"file": f"/src/{n}", "debug_info": True} for n in ("a.cpp", "b.cc", "c.c", "d.f90", "f.py")]
    assert [f.name for f in _site_files(sites, tmp_path)] == ["a.cpp", "b.cc", "c.c", "d.f90"]


def test_language_and_standard(tmp_path):
    """C++ by suffix, -std=gnu++17 by default, the compilation database's -std when it has one."""
    from mpiopt.transform import ParseError
    from mpiopt.transform.parse import language_of, parse

    assert [language_of(Path(n)) for n in ("a.c", "a.cpp", "a.cc", "a.cxx", "a.C", "a.hpp")] == \
        ["c", "c++", "c++", "c++", "c++", "c++"]
    src = tmp_path / "k.cc"
    src.write_text("#include <mpi.h>\n#include <vector>\n"
                   "int f() { if constexpr (sizeof(int) > 1) { return 1; } return 0; }\n")
    assert parse(src).lang == "c++"                      # C++17's `if constexpr` parses
    db = tmp_path / "compile_commands.json"
    db.write_text('[{"directory": "%s", "file": "k.cc", "arguments": ["c++", "-std=c++98", "-c", "k.cc"]}]'
                  % tmp_path)
    with pytest.raises(ParseError, match=r"k\.cc:3:"):   # at `if constexpr`
        parse(src)                                       # the database's C++98 does not have it


def test_function_try_block_sites_are_reported_unchanged(tmp_path):
    src = tmp_path / "ftb.cpp"
    src.write_text("#include <mpi.h>\n#include <stdexcept>\n"
                   "double f(double x) try {\n    double y = 0;\n"
                   "    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);\n    return y;\n"
                   "} catch (const std::exception &) {\n    return 0;\n}\n")
    r = transform_file(src, Options())
    assert not r.changed
    assert [(s["line"], s["function"], s["action"]) for s in r.sites] == [(5, "f(double)", "unchanged")]
    assert "function-try-block" in r.sites[0]["reason"]
