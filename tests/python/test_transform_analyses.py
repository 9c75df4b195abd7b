"""Unit tests of the transformer's analyses, one group per module: parsing, the collective table,
points-to (Steensgaard), read/write sets and summaries, wait placement and request slots, loop
invariance for persistent collectives, text rewriting, target detection."""
from __future__ import annotations

import shutil
import textwrap

import pytest

from mpiopt.transform import rewrite
from mpiopt.transform.alias import analyse as points_to
from mpiopt.transform.calls import COLLECTIVES
from mpiopt.transform.effects import EffectAnalysis
from mpiopt.transform.engine import Options, transform_file
from mpiopt.transform.parse import ParseError, parse
from mpiopt.transform.persistent import detect_target, why_not_persistent
from mpiopt.transform.placement import Placer, assign_slots, find_sites

pytestmark = pytest.mark.skipif(not shutil.which("mpicc.openmpi"), reason="needs Open MPI's headers")

HEADER = "#include <mpi.h>\n#include <stdlib.h>\n#include <string.h>\n"


def unit_of(tmp_path, body: str, name="case.c"):
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return parse(path)


def analysis(unit):
    return EffectAnalysis(unit, points_to(unit))


def var(pts, unit, fn, name):
    """The location of local/param/global `name` (searched in `fn`'s body and the globals)."""
    nodes = list(unit.functions[fn].node.walk()) + [g for g in unit.globals]
    for n in nodes:
        if n.kind in ("VAR_DECL", "PARM_DECL") and n.spelling == name:
            return pts.var(n.ref)
    raise KeyError(name)


# --- parse -------------------------------------------------------------------------------------

def test_parse_records_operators_references_and_shapes(tmp_path):
    u = unit_of(tmp_path, """
        int g;
        void f(double *p, int n) { double a[4]; a[0] = *p; g += n; p++; }
    """)
    f = u.functions["f"]
    ops = {n.op for n in f.body.walk() if n.op}
    assert {"=", "*", "+=", "++"} <= ops
    refs = {n.spelling: n for n in f.body.walk() if n.kind == "DECL_REF_EXPR"}
    assert refs["g"].is_global and not refs["p"].is_global
    assert refs["a"].shape == "array" and refs["p"].shape == "pointer"


def test_parse_error_names_file_and_line(tmp_path):
    path = tmp_path / "bad.c"
    path.write_text(HEADER + "int main(void) { return undeclared_thing; }\n")
    with pytest.raises(ParseError, match=r"bad\.c:4:.*undeclared"):
        parse(path)
    with pytest.raises(ParseError, match="no such file"):
        parse(tmp_path / "missing.c")


def test_compile_commands_flags_are_used(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "sizes.h").write_text("#define N 4\n")
    src = tmp_path / "uses_n.c"
    src.write_text(HEADER + '#include "sizes.h"\nint main(void) { double x[N]; (void)x; return 0; }\n')
    with pytest.raises(ParseError):
        parse(src)
    (tmp_path / "compile_commands.json").write_text(
        f'[{{"directory": "{tmp_path}", "file": "uses_n.c", "command": "cc -Iinc -c uses_n.c"}}]')
    assert "main" in parse(src).functions


# --- calls -------------------------------------------------------------------------------------

def test_collective_table_names_and_roles():
    assert len(COLLECTIVES) == 22
    assert COLLECTIVES["MPI_Allreduce"].nonblocking == "MPI_Iallreduce"
    assert COLLECTIVES["MPI_Neighbor_alltoallw"].nonblocking == "MPI_Ineighbor_alltoallw"
    assert COLLECTIVES["MPI_Reduce_scatter_block"].persistent("MPIX") == "MPIX_Reduce_scatter_block_init"
    for c in COLLECTIVES.values():
        assert c.roles[c.comm] == "value"
        if c.root is not None:
            assert c.roles[c.root] == "value"
    assert COLLECTIVES["MPI_Scatterv"].roles[0] == "send@root"
    assert COLLECTIVES["MPI_Gather"].roles[3] == "recv@root"


# --- alias -------------------------------------------------------------------------------------

def test_steensgaard_unifies_through_assignment_and_pointer_arithmetic(tmp_path):
    u = unit_of(tmp_path, """
        void f(void) {
            double a[4], b[4], *p, *q, **pp;
            p = a;
            q = p + 2;
            pp = &q;
            (void)b; (void)pp;
        }
    """)
    pts = points_to(u)
    a, b, p, q, pp = (var(pts, u, "f", n) for n in ("a", "b", "p", "q", "pp"))
    assert pts.same(pts.pts(p), a) and pts.same(pts.pts(q), a)
    assert pts.same(pts.pts(pp), q)
    assert not pts.same(a, b)


def test_steensgaard_globals_and_unknown_calls(tmp_path):
    u = unit_of(tmp_path, """
        double *gp;
        extern double *mystery(double *);
        void f(void) {
            double x[2], y[2], z[2];
            gp = x;
            double *w = mystery(y);
            (void)w; (void)z;
        }
    """)
    pts = points_to(u)
    ea = EffectAnalysis(u, pts)
    x, y, z = (var(pts, u, "f", n) for n in "xyz")
    assert ea.may_reach_from_globals(x)          # stored in a global
    assert ea.may_reach_from_globals(y)          # given to code the tool cannot see
    assert not ea.may_reach_from_globals(z)


def test_parameters_stay_apart_per_call_site_unless_they_escape(tmp_path):
    u = unit_of(tmp_path, """
        double *keep;
        static void scale(double *v, int n) { for (int i = 0; i < n; i++) v[i] *= 2; }
        static double *same(double *v) { return v; }
        static void stash(double *v) { keep = v; }
        void f(void) {
            double a[2], b[2], c[2], d[2];
            scale(a, 2); scale(b, 2);
            double *r = same(c);
            stash(d);
            (void)r;
        }
    """)
    pts = points_to(u)
    a, b, c, d = (var(pts, u, "f", n) for n in "abcd")
    r = var(pts, u, "f", "r")
    assert not pts.same(a, b)                    # one helper, two buffers: no false alias
    assert pts.same(pts.pts(r), c)               # a returned parameter maps to the argument
    assert ("scale", 0) in pts.clean and ("stash", 0) not in pts.clean
    assert EffectAnalysis(u, pts).may_reach_from_globals(d)


# --- effects -----------------------------------------------------------------------------------

def _stmt_effects(u, ea, fn, index):
    return ea.of(u.functions[fn].body.children[index])


def test_read_and_write_sets_of_statements(tmp_path):
    u = unit_of(tmp_path, """
        struct S { int n; double v[4]; };
        void f(struct S *s, double *p, int i) {
            double a[4], x = 0;
            a[i] = *p + x;
            s->v[1] = a[0];
            x = sizeof(a[i++]);
        }
    """)
    pts = points_to(u)
    ea = EffectAnalysis(u, pts)
    a, p, s, x, i = (var(pts, u, "f", n) for n in ("a", "p", "s", "x", "i"))
    e1 = _stmt_effects(u, ea, "f", 1)
    assert any(pts.same(w, a) for w in e1.writes)
    assert any(pts.same(r, pts.pts(p)) for r in e1.reads)
    assert any(pts.same(r, i) for r in e1.reads) and any(pts.same(r, x) for r in e1.reads)
    e2 = _stmt_effects(u, ea, "f", 2)
    assert any(pts.same(w, pts.pts(s)) for w in e2.writes)       # through the pointer: *s
    assert any(pts.same(r, s) for r in e2.reads)                 # the pointer itself is read
    e3 = _stmt_effects(u, ea, "f", 3)                            # sizeof is not evaluated
    assert not any(pts.same(w, i) for w in e3.writes)


def test_interprocedural_summaries_and_stops(tmp_path):
    u = unit_of(tmp_path, """
        static void inner(double *v) { v[0] = 1; }
        static void outer(double *v) { inner(v); }
        static void fin(void) { MPI_Finalize(); }
        static int rec(int n) { return n ? rec(n - 1) : 0; }
        void f(double *buf) {
            outer(buf);
            fin();
            rec(3);
            while (1) { if (buf[0]) break; }
            return;
        }
    """)
    pts = points_to(u)
    ea = EffectAnalysis(u, pts)
    buf = pts.pts(var(pts, u, "f", "buf"))
    assert any(pts.same(w, buf) for w in _stmt_effects(u, ea, "f", 0).writes)
    assert "MPI_Finalize" in _stmt_effects(u, ea, "f", 1).stop[0]
    assert _stmt_effects(u, ea, "f", 2).stop is None             # recursion terminates
    assert _stmt_effects(u, ea, "f", 3).stop is None             # a break inside its own loop
    assert _stmt_effects(u, ea, "f", 4).stop[0] == "return"


def test_collective_buffer_roles_and_in_place(tmp_path):
    u = unit_of(tmp_path, """
        void f(double *s, double *r, int *counts, int *displs) {
            MPI_Allgatherv(s, 1, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
            MPI_Allreduce(MPI_IN_PLACE, r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
    """)
    ea = analysis(u)
    body = u.functions["f"].body.children
    roles = {role: written for _loc, written, _arg, role in ea.buffer_accesses(body[0])}
    assert roles == {"send": False, "recv": True, "array": False}
    in_place = ea.buffer_accesses(body[1])
    assert [(w, r) for _l, w, _a, r in in_place] == [(True, "recv")]


# --- placement ---------------------------------------------------------------------------------

def _placed(u, fn):
    ea = analysis(u)
    sites = find_sites(u, fn, ea)
    todo = [s for s in sites if s.block is not None]
    n = assign_slots(u.functions[fn].body, todo)
    placer = Placer(ea)
    for s in todo:
        placer.place(s)
    return sites, n


def test_request_slots_are_shared_by_exclusive_branches(tmp_path):
    """The paper's figure 4: two calls on exclusive paths share a request; the count is the
    maximum over branches."""
    u = unit_of(tmp_path, """
        void f(int c, int *x, int *y) {
            if (c)
                { MPI_Bcast(x, 1, MPI_INT, 0, MPI_COMM_WORLD); }
            else
                { MPI_Bcast(y, 1, MPI_INT, 0, MPI_COMM_WORLD); MPI_Bcast(x, 1, MPI_INT, 0, MPI_COMM_WORLD); }
            MPI_Bcast(y, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
    """)
    sites, n = _placed(u, "f")
    assert [s.slot for s in sites] == [0, 0, 1, 2]
    assert n == 3


def test_wait_leaves_an_if_with_a_flag_but_not_a_loop(tmp_path):
    u = unit_of(tmp_path, """
        void f(int c, double *a, double *b, double *other) {
            if (c) {
                MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            }
            other[0] = 1;
            other[1] = b[0];
            for (int i = 0; i < 2; i++) {
                MPI_Allreduce(a, other, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            }
        }
    """)
    sites, _ = _placed(u, "f")
    w = sites[0].waits[0]
    assert w.flag and w.block is u.functions["f"].body and w.index == 2
    assert "reads `b[0]`" in w.blocked_by
    loop_wait = sites[1].waits[0]
    assert not loop_wait.flag and loop_wait.blocked_by == "end of the loop body"


def test_send_buffer_reads_do_not_stop_the_wait_but_writes_do(tmp_path):
    u = unit_of(tmp_path, """
        void f(double *s, double *r, double *t) {
            MPI_Allreduce(s, r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            t[0] = s[0];
            s[0] = 2;
        }
    """)
    sites, _ = _placed(u, "f")
    assert sites[0].waits[0].index == 2 and "writes `s[0]`" in sites[0].waits[0].blocked_by


def test_rooted_collective_gets_rank_guarded_waits(tmp_path):
    u = unit_of(tmp_path, """
        void f(double *in, double *out, double *w) {
            MPI_Reduce(in, out, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            w[0] = out[0];
            in[0] = 1;
        }
    """)
    sites, _ = _placed(u, "f")
    s = sites[0]
    assert s.rank_guard
    assert [(w.guard, w.index) for w in s.waits] == [("root", 1), ("nonroot", 2)]


def test_barrier_wait_stops_at_output(tmp_path):
    u = unit_of(tmp_path, """
        #include <stdio.h>
        void f(int *x) {
            MPI_Barrier(MPI_COMM_WORLD);
            x[0] = 1;
            printf("after\\n");
        }
    """)
    sites, _ = _placed(u, "f")
    assert sites[0].waits[0].index == 2


def test_calls_that_cannot_be_transformed_say_why(tmp_path):
    u = unit_of(tmp_path, """
        #define BCAST(x) MPI_Bcast(x, 1, MPI_INT, 0, MPI_COMM_WORLD)
        int f(int c, int *x) {
            int rc = MPI_Bcast(x, 1, MPI_INT, 0, MPI_COMM_WORLD);
            if (c) MPI_Bcast(x, 1, MPI_INT, 0, MPI_COMM_WORLD);
            BCAST(x);
            return rc;
        }
    """)
    sites, _ = _placed(u, "f")
    reasons = [s.reason for s in sites]
    assert "result is used" in reasons[0]
    assert "not a statement of a { } block" in reasons[1]
    assert "macro" in reasons[2]


# --- persistent --------------------------------------------------------------------------------

def test_loop_invariance(tmp_path):
    u = unit_of(tmp_path, """
        void f(double *a, double *b, int n, int *counts, int *displs) {
            double *p = a, *q = b;
            for (int i = 0; i < n; i++) {
                MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                MPI_Allreduce(a, b, i, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                MPI_Allreduce(p, q, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                MPI_Allgatherv(a, 1, MPI_DOUBLE, b, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
                double *t = p; p = q; q = t;
                counts[0] = 1;
            }
            while (n--) {
                int m = 3;
                MPI_Allreduce(a, b, m, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            }
        }
    """)
    ea = analysis(u)
    sites = [s for s in find_sites(u, "f", ea)]
    why = [why_not_persistent(s, ea) for s in sites]
    assert why[0] == ""
    assert "`i`" in why[1]                                   # the loop counter
    assert "`p`" in why[2]                                   # swapped pointers
    assert "counts" in why[3]                                # the counts array changes
    assert "declared inside the loop" in why[4]


def test_target_detection():
    if shutil.which("mpicc.openmpi"):
        t = detect_target("openmpi")
        assert (t.version, t.prefix, t.header) == (3, "MPIX", "mpi-ext.h")
        assert detect_target("openmpi", 4).prefix == "MPI"
    if shutil.which("mpicc.mpich"):
        assert detect_target("mpich").prefix == "MPI"
        assert detect_target("mpich", 3).prefix == ""


# --- rewrite -----------------------------------------------------------------------------------

def test_rewrite_keeps_everything_outside_the_edits():
    src = b"int f(void)\n{\n    a(); /* keep */\n    b();\n}\n"
    out = rewrite.apply(src, [
        rewrite.Edit(18, 19, "A"),
        rewrite.insert_before_statement(src, src.index(b"b();"), "w();"),
        rewrite.insert_before_brace(src, src.rindex(b"}"), "z();", "    "),
    ])
    assert out == b"int f(void)\n{\n    A(); /* keep */\n    w();\n    b();\n    z();\n}\n"
    with pytest.raises(rewrite.EditConflict):
        rewrite.apply(src, [rewrite.Edit(0, 5, "x"), rewrite.Edit(3, 6, "y")])


def test_persistent_mode_without_persistent_names_stays_nonblocking(tmp_path):
    if not shutil.which("mpicc.mpich"):
        pytest.skip("needs MPICH")
    path = tmp_path / "loop.c"
    path.write_text(HEADER + textwrap.dedent("""
        void f(double *a, double *b) {
            for (int i = 0; i < 3; i++) {
                MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            }
        }
    """))
    r = transform_file(path, Options(mode="persistent", flavour="mpich", mpi_version=3))
    assert r.sites[0]["action"] == "nonblocking"
    assert "no persistent collectives" in r.sites[0]["reason"]
    r4 = transform_file(path, Options(mode="persistent", flavour="mpich"))
    assert r4.sites[0]["action"] == "persistent" and b"MPI_Allreduce_init(" in r4.output


def test_a_parameter_stored_through_another_parameter_is_not_kept_apart(tmp_path):
    u = unit_of(tmp_path, """
        static void publish(double **out, double *in) { *out = in; }
        void f(void) {
            double buf[2], *p;
            publish(&p, buf);
            p[0] = 1;
        }
    """)
    pts = points_to(u)
    assert ("publish", 1) not in pts.clean
    buf, p = var(pts, u, "f", "buf"), var(pts, u, "f", "p")
    assert pts.same(pts.pts(p), buf)


def test_loop_written_argument_is_not_invariant(tmp_path):
    u = unit_of(tmp_path, """
        void f(double *a, double *b, int n) {
            int k = 1;
            for (int i = 0; i < n; i++) {
                MPI_Allreduce(a, b, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                k = 2;
            }
        }
    """)
    ea = analysis(u)
    (site,) = find_sites(u, "f", ea)
    assert "`k` in argument `k` is written in the loop" in why_not_persistent(site, ea)


def test_an_mpi_call_in_the_loop_may_change_the_communicator(tmp_path):
    u = unit_of(tmp_path, """
        void f(double *a, double *b, int n) {
            MPI_Comm comm = MPI_COMM_WORLD;
            for (int i = 0; i < n; i++) {
                MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_SUM, comm);
                MPI_Comm_split(MPI_COMM_WORLD, i % 2, 0, &comm);
            }
        }
    """)
    ea = analysis(u)
    (site,) = find_sites(u, "f", ea)
    assert "may be changed by MPI_Comm_split" in why_not_persistent(site, ea)


def test_library_calls_that_return_their_destination_alias_it(tmp_path):
    u = unit_of(tmp_path, """
        void f(char *src) {
            char dst[8], *p = strcpy(dst, src);
            (void)p;
        }
    """)
    pts = points_to(u)
    assert pts.same(pts.pts(var(pts, u, "f", "p")), var(pts, u, "f", "dst"))


def test_mpi_bottom_buffers_stay_blocking(tmp_path):
    u = unit_of(tmp_path, """
        void f(MPI_Datatype absolute, int *out) {
            MPI_Allreduce(MPI_BOTTOM, out, 1, absolute, MPI_SUM, MPI_COMM_WORLD);
        }
    """)
    (site,) = find_sites(u, "f", analysis(u))
    assert site.block is None and "MPI_BOTTOM" in site.reason


IFDEF_CASE = """#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x = rank + 1, y = 0, z = 0;
#ifdef USE_SUM
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#endif
    z = x * 2;
    if (rank == 0)
        printf("%g %g\\n", y, z);
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.skipif(not shutil.which("mpicc.openmpi"), reason="needs Open MPI's headers")
def test_a_wait_stays_inside_the_conditional_of_its_call(tmp_path):
    """Parsed with -DUSE_SUM, the call's wait must not move past the #endif that closes its
    branch (the next statement touches nothing of the call's): without USE_SUM the output would
    wait for a request never started. The wait goes right after the call, before the #endif, and
    the report names the directive."""
    src = tmp_path / "ifdef.c"
    src.write_text(IFDEF_CASE)
    r = transform_file(src, Options(extra_args=["-DUSE_SUM"]))
    out = r.output.decode()
    assert out.index("MPI_Iallreduce(") < out.index("MPI_Wait(") < out.index("#endif"), out
    [site] = r.sites
    assert "`#endif`" in site["waits"][0]["blocked_by"]
    assert site["waits"][0]["line"] == IFDEF_CASE.splitlines().index("#endif") + 1
    # without a directive in the way the same wait moves past `z = x * 2;`
    plain = tmp_path / "plain.c"
    plain.write_text(IFDEF_CASE.replace("#ifdef USE_SUM\n", "").replace("#endif\n", ""))
    moved = transform_file(plain, Options())
    assert moved.sites[0]["waits"][0]["moved_past"] >= 1
