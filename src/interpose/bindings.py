#!/usr/bin/env python3
"""Writes the drop-in's MPI entry points for every row of collectives.list (its header says what
each row gets) as one C file, and the list of every PMPI_* name libmpiopt defines, so that its own
calls of those names go to the vendor (chain.h):

    bindings.py collectives.list OUTDIR [HAND_WRITTEN.c …]

OUTDIR gets bindings.c (the entry points), vendor.h (included before every source of the
library: each such PMPI_X, and those of INNER_CALLS, renamed to a pointer to the vendor's) and vendor_table.c (those
pointers and their names, which chain.c resolves). The hand-written entry points of
src/interpose/*.c are found by their MPIOPT_C_ENTRY(Name, …) (or _THEN) lines. The build runs it
(CMakeLists.txt); the output is plain C to read in build/<flavour>/generated/.
Only the standard library: it runs wherever CMake does."""
import os
import re
import sys

# kind: (C type, large-count C type, standard name, Fortran -> C conversion of argument x)
KINDS = {
    "sbuf": ("const void *", "const void *", "sendbuf", "mpiopt_fortran_buffer({})"),
    "rbuf": ("void *", "void *", "recvbuf", "mpiopt_fortran_buffer({})"),
    "count": ("int ", "MPI_Count ", "count", "(int)*{}"),
    # one count a process (MPI_Reduce_scatter): MPI_Fint is int (bindings.h checks)
    "counts": ("const int *", "const MPI_Count *", "recvcounts", "(const int *){}"),
    "type": ("MPI_Datatype ", "MPI_Datatype ", "datatype", "PMPI_Type_f2c(*{})"),
    "op": ("MPI_Op ", "MPI_Op ", "op", "PMPI_Op_f2c(*{})"),
    "root": ("int ", "int ", "root", "(int)*{}"),
    "comm": ("MPI_Comm ", "MPI_Comm ", "comm", "PMPI_Comm_f2c(*{})"),
}
FORMS = {"handoff", "local", "nonblocking", "persistent"}


class Row:
    def __init__(self, line_no, words):
        self.name = words[0]
        self.args = []      # (kind, name)
        self.forms = set()
        for w in words[1:]:
            kind, _, name = w.partition(":")
            if kind in KINDS:
                self.args.append((kind, name or KINDS[kind][2]))
            elif w in FORMS:
                self.forms.add(w)
            else:
                raise SystemExit(f"collectives.list:{line_no}: {w!r} is neither an argument kind "
                                 f"({', '.join(KINDS)}) nor a form ({', '.join(sorted(FORMS))})")
        if sum(k in ("count", "counts") for k, _ in self.args) != 1:
            raise SystemExit(f"collectives.list:{line_no}: {self.name} needs one count or counts "
                             f"argument")
        self.Name = self.name.capitalize()
        self.NAME = self.name.upper()
        self.count = next(n for k, n in self.args if k in ("count", "counts"))
        self.counts = any(k == "counts" for k, _ in self.args)

    def params(self, large=False):
        return ", ".join(f"{KINDS[k][1 if large else 0]}{n}" for k, n in self.args)

    def names(self, count=None):
        return ", ".join(count if count and n == self.count else n for _, n in self.args)

    def f_params(self):
        return ", ".join(("void *" if k in ("sbuf", "rbuf") else "MPI_Fint *") + n
                         for k, n in self.args)

    def f_args(self):
        return ", ".join(KINDS[k][3].format(n) for k, n in self.args)

    def api(self, args, form="blocking", extra=""):
        """The call of mpiopt's C API for this form, with args (a C argument list)."""
        if "local" in self.forms:
            return f"mpiopt_{self.name}({args})"
        fn = {"blocking": f"mpiopt_{self.name}", "nonblocking": f"mpiopt_i{self.name}",
              "persistent": f"mpiopt_{self.name}_init"}[form]
        info = ", info" if form == "persistent" else ""
        return f"{fn}({args}{info}{extra}, MPIOPT_ALG_AUTO{', ' + 'request' if form != 'blocking' else ''})"


def read_rows(path):
    rows = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if words:
                rows.append(Row(i, words))
    return rows


def entry(name, params, args, call, attrs=""):
    """The C entry point `name` and its PMPI_ name, running `call` unless a tool follows
    (chain.h)."""
    return f"MPIOPT_CHAIN_ENTRY({attrs}, {name}, ({params}), ({args}),\n                   {call})\n"


def fortran_symbols(impl, params, args, lower, upper):
    return (f"MPIOPT_FORTRAN_ENTRY({impl}, ({params}), ({args}), {lower}, {upper})\n"
            f"MPIOPT_FORTRAN_F08_ENTRY({impl}, ({params}), ({args}), {lower})\n")


def blocking(r):
    out = []
    if "handoff" in r.forms:
        out.append(entry(f"MPI_{r.Name}", r.params(), r.names(),
                         f"mpiopt_{r.name}_entry({r.names()}, MPIOPT_ALG_AUTO)",
                         "MPIOPT_HANDOFF_PLACEMENT"))
    else:
        out.append(entry(f"MPI_{r.Name}", r.params(), r.names(), r.api(r.names())))
    fp, fa = f"{r.f_params()}, MPI_Fint *ierr", f"{r.names()}, ierr"
    out.append(f"static void {r.name}_f({fp})\n{{\n"
               f"    mpiopt_report_door(MPIOPT_DOOR_FORTRAN);\n"
               f"    int rc = {r.api(r.f_args())};\n"
               f"    if (ierr)\n        *ierr = (MPI_Fint)rc;\n}}\n")
    out.append(fortran_symbols(f"{r.name}_f", fp, fa, f"mpi_{r.name}", f"MPI_{r.NAME}"))
    return out


def nonblocking(r):
    fp, fa = f"{r.f_params()}, MPI_Fint *request, MPI_Fint *ierr", f"{r.names()}, request, ierr"
    api = r.api(r.f_args(), "nonblocking").replace(", request)", ", &c_request)")
    return [
        entry(f"MPI_I{r.name}", f"{r.params()}, MPI_Request *request", f"{r.names()}, request",
              r.api(r.names(), "nonblocking")),
        f"static void i{r.name}_f({fp})\n{{\n"
        f"    mpiopt_report_door(MPIOPT_DOOR_FORTRAN);\n    MPI_Request c_request;\n"
        f"    int rc = {api};\n"
        f"    mpiopt_fortran_started(rc, c_request, request, ierr);\n}}\n",
        fortran_symbols(f"i{r.name}_f", fp, fa, f"mpi_i{r.name}", f"MPI_I{r.NAME}"),
    ]


def persistent(r):
    fp = f"{r.f_params()}, MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr"
    fa = f"{r.names()}, info, request, ierr"
    api = r.api(r.f_args(), "persistent").replace(", info,", ", PMPI_Info_f2c(*info),")
    api = api.replace(", request)", ", &c_request)")
    impl = f"{r.name}_init_f"
    return [
        "#ifdef PERSISTENT_NAME\n" +
        entry(f"PERSISTENT_NAME({r.Name}_init)", f"{r.params()}, MPI_Info info, MPI_Request *request",
              f"{r.names()}, info, request", r.api(r.names(), "persistent")) + "#endif\n",
        f"static void {impl}({fp})\n{{\n"
        f"    mpiopt_report_door(MPIOPT_DOOR_FORTRAN);\n    MPI_Request c_request;\n"
        f"    int rc = {api};\n"
        f"    mpiopt_fortran_started(rc, c_request, request, ierr);\n}}\n",
        # MPI-4 names where the MPI has them, else Open MPI 4.1's MPIX_ (whose `use mpi_f08`
        # calls its own names, fortran.h)
        "#if MPI_VERSION >= 4 || defined(MPIOPT_HAVE_PERSISTENT_COLL)\n"
        f"MPIOPT_FORTRAN_ENTRY({impl}, ({fp}), ({fa}), mpi_{r.name}_init, MPI_{r.NAME}_INIT)\n"
        "#else\n"
        f"MPIOPT_FORTRAN_ENTRY({impl}, ({fp}), ({fa}), mpix_{r.name}_init, MPIX_{r.NAME}_INIT)\n"
        f"MPIOPT_FORTRAN_F08_ENTRY({impl}, ({fp}), ({fa}), mpix_{r.name}_init)\n"
        "#endif\n",
    ]


def large_count(r):
    """MPI_*_c: a count that fits an int takes the int binding's own path (counts that all fit
    an int: a copy of them as ints)."""
    out = []
    forms = [("blocking", f"MPI_{r.Name}_c", f"PMPI_{r.Name}_c", f"MPIOPT_CALL_{r.NAME}", "", "")]
    if "nonblocking" in r.forms:
        forms.append(("nonblocking", f"MPI_I{r.name}_c", f"PMPI_I{r.name}_c",
                      f"MPIOPT_CALL_I{r.NAME}", ", MPI_Request *request", ", request"))
    if "persistent" in r.forms:
        forms.append(("persistent", f"MPI_{r.Name}_init_c", f"PMPI_{r.Name}_init_c",
                      f"MPIOPT_CALL_{r.NAME}_INIT", ", MPI_Info info, MPI_Request *request",
                      ", info, request"))
    for form, name, vendor, kind, extra_params, extra_args in forms:
        if form == "blocking" and "handoff" in r.forms:
            call = f"mpiopt_{r.name}_entry({r.names('n')}, MPIOPT_ALG_AUTO)"
        else:
            call = r.api(r.names("n"), form)
        # the work of the call is a function of its own, which the chain's two names call
        own = f"mpiopt_own_{name}"
        params, args = f"{r.params(large=True)}{extra_params}", f"{r.names()}{extra_args}"
        if r.counts:
            out.append(f"static inline int {own}({params})\n{{\n"
                       f"    int *n = mpiopt_counts_fit({r.count}, comm, {kind});\n"
                       f"    if (!n)\n"
                       f"        return {vendor}({args});\n"
                       f"    int rc = {call};\n    free(n);\n    return rc;\n}}\n")
        else:
            out.append(f"static inline int {own}({params})\n{{\n    int n;\n"
                       f"    if (!mpiopt_count_fits({r.count}, &n, {kind}))\n"
                       f"        return {vendor}({args});\n"
                       f"    return {call};\n}}\n")
        out.append(entry(name, params, args, f"{own}({args})"))
    return out


def fortran_guarded(parts):
    """Each Fortran part (the ones taking MPI_Fint) only where the MPI has Fortran handles: the
    MPI standard ABI (mpi_abi.h) has no MPI_Fint (CMakeLists.txt sets MPIOPT_HAVE_MPI_FINT)."""
    return [f"#ifdef MPIOPT_HAVE_MPI_FINT\n{p}#endif\n" if "MPI_Fint" in p else p for p in parts]


# The calls of mpiopt's own messages and shared windows (its algorithms', its node windows', its
# agreements'), which it does not define: taken from the vendor's library too, so that a tool that
# defines PMPI_X itself (Darshan maps both names to its wrapper) and is preloaded in front of
# mpiopt never sees mpiopt's inner messages, as a tool that defines MPI_X alone never does.
INNER_CALLS = ["Send", "Recv", "Isend", "Irecv", "Sendrecv", "Cancel", "Barrier", "Bcast",
               "Gather", "Gatherv", "Allgather", "Win_allocate_shared", "Win_shared_query",
               "Win_free"]


def entry_names(rows, hand_written):
    """The C entry points libmpiopt defines, as (preprocessor guard or None, name): the
    collectives' of every form, and the hand-written ones."""
    names = []
    for r in rows:
        names.append((None, f"MPI_{r.Name}"))
        if "nonblocking" in r.forms:
            names.append((None, f"MPI_I{r.name}"))
        if "persistent" in r.forms:
            names.append(("MPIOPT_PERSISTENT_MPI4", f"MPI_{r.Name}_init"))
            names.append(("MPIOPT_PERSISTENT_MPIX", f"MPIX_{r.Name}_init"))
    for r in rows:
        names.append(("MPIOPT_HAVE_LARGE_COUNT", f"MPI_{r.Name}_c"))
        if "nonblocking" in r.forms:
            names.append(("MPIOPT_HAVE_LARGE_COUNT", f"MPI_I{r.name}_c"))
        if "persistent" in r.forms:
            names.append(("MPIOPT_HAVE_LARGE_COUNT", f"MPI_{r.Name}_init_c"))
    names += [(None, f"MPI_{n}") for n in hand_written]
    names += [(None, f"MPI_{n}") for n in INNER_CALLS if (None, f"MPI_{n}") not in names]
    return names


def hand_written_entries(paths):
    """The names of MPIOPT_C_ENTRY(Name, …) in the hand-written sources, in order."""
    out = []
    for path in paths:
        with open(path) as f:
            out += re.findall(r"^MPIOPT_C_ENTRY(?:_THEN)?\((\w+),", f.read(), re.M)
    return out


def guarded(names, line):
    """line(name) for every name, each under its guard."""
    out = []
    for guard, name in names:
        text = line(name)
        out.append(f"#ifdef {guard}\n{text}#endif\n" if guard else text)
    return "".join(out)


def vendor_header(names):
    return (
        "/* Generated by src/interpose/bindings.py: every PMPI_* name libmpiopt defines (chain.h),\n"
        " * renamed in the library's own sources to a pointer to the vendor's (vendor_table.c; chain.c\n"
        " * resolves them at load), so that mpiopt's inner calls never reach mpiopt's own entry points\n"
        " * or a tool's. Included before every source of the library (CMakeLists.txt). */\n"
        "#ifndef MPIOPT_GENERATED_VENDOR_H\n#define MPIOPT_GENERATED_VENDOR_H\n"
        "/* the sources that ask for GNU extensions ask before any system header: this comes first */\n"
        "#ifndef _GNU_SOURCE\n#define _GNU_SOURCE\n#endif\n"
        "#include <mpi.h>\n#include \"persistent_name.h\"\n\n"
        + guarded(names, lambda n: f"extern __typeof__(P{n}) *mpiopt_vendor_P{n} "
                                   f"__attribute__((visibility(\"hidden\")));\n"
                                   f"#define P{n} (*mpiopt_vendor_P{n})\n")
        + "\n#endif\n")


def vendor_table(names):
    return (
        "/* Generated by src/interpose/bindings.py: the vendor's entry points of vendor.h. */\n"
        "#include <stddef.h>\n#include \"interpose/chain.h\"\n\n"
        + guarded(names, lambda n: f"__typeof__(mpiopt_vendor_P{n}) mpiopt_vendor_P{n};\n")
        + "\nconst struct mpiopt_vendor_slot mpiopt_vendor_slots[] = {\n"
        + guarded(names, lambda n: f"    {{\"P{n}\", (void **)&mpiopt_vendor_P{n}}},\n")
        + "    {NULL, NULL},\n};\n")


def write(path, text):
    tmp = f"{path}.{os.getpid()}.tmp"     # a file of this run's own, then one rename
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: bindings.py collectives.list OUTDIR [HAND_WRITTEN.c ...]")
    rows = read_rows(sys.argv[1])
    outdir = sys.argv[2]
    names = entry_names(rows, hand_written_entries(sys.argv[3:]))
    parts = [
        "/* Generated by src/interpose/bindings.py from src/interpose/collectives.list: edit those,\n"
        " * not this file. */\n"
        '#include "mpiopt.h"\n#include "coll/entry/handoff.h"\n#include "coll/engine/report.h"\n'
        '#include "interpose/bindings.h"\n#include "interpose/fortran.h"\n'
    ]
    for r in rows:
        parts.append(f"\n/* ---- {r.name} ---- */\n")
        parts += blocking(r)
        if "nonblocking" in r.forms:
            parts += nonblocking(r)
        if "persistent" in r.forms:
            parts += persistent(r)
    parts.append("\n#ifdef MPIOPT_HAVE_LARGE_COUNT\n")
    for r in rows:
        parts += large_count(r)
    parts.append("#endif\n")
    write(os.path.join(outdir, "bindings.c"), "\n".join(fortran_guarded(parts)))
    write(os.path.join(outdir, "vendor.h"), vendor_header(names))
    write(os.path.join(outdir, "vendor_table.c"), vendor_table(names))


if __name__ == "__main__":
    main()
