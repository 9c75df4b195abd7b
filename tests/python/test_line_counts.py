"""The counting build (CMake MPIOPT_COUNT_LINES, src/coll/node/line_count.h): the lines the
shared-memory small allreduce reads and the flags it writes, counted at the source, equal what
its design says. bench/line_counts.py builds build/count-lines and runs
tests/c/plain_line_counts.c through it (Open MPI, oversubscribed) at p = 4 and 8, a few calls.

The flat path (shared_memory.c's exchange_piece), each call: a rank publishes the header line of
its ring buffer (the input on it and the lines after, from byte 16) and reads every other
rank's; below SCATTER_FROM_BYTES it reduces all p inputs (their data lines), from it (4 KiB at
p > 2) only its share of them, then publishes its share's result (a second flag) and reads the
others' shares. The described node (HWLOC_SYNTHETIC, rank r on core r) puts two ranks on a NUMA
node and four on a package, so each crossing is counted too. The tree (tree.c) reads its
children's lines and its parent's result: at most (radix - 1) a level and one, each a line (and
the payload's lines after it above TREE_INLINE_BYTES), and a line crosses the sockets once a
socket up and once down.

Large messages (issue 68), at p = 4 on a node of two 2-core packages: the ring's, recursive
doubling's and the flat stages' (staged.c) bytes and lines a call, from their designs exactly."""
from __future__ import annotations

import importlib.util
import shutil

import pytest

from mpiopt import mpi

spec = importlib.util.spec_from_file_location("line_counts", mpi.repo_root() / "bench" / "line_counts.py")
line_counts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(line_counts)

CALLS = 5           # under the ring's 16 buffers: no call looks at the ring's reuse
NODE = "package:2 numa:2 core:2 pu:1"   # 8 cores: NUMA node = r // 2, package = r // 4
HEADER = 16         # a ring buffer's data starts 16 bytes into its header line
TREE_INLINE_BYTES = 56


def lines(start: int, end: int) -> int:
    """The 64-byte lines that bytes [start, end) of a line-aligned buffer touch."""
    return 0 if end <= start else (end - 1) // 64 - start // 64 + 1


def flat_expected(p: int, me: int, nbytes: int) -> tuple[int, int]:
    """(lines read, flag lines written) by rank `me` in one flat allreduce call of nbytes."""
    if nbytes < 4096:    # every input whole: its header line and the data's lines after it
        return (p - 1) * lines(0, HEADER + nbytes), 1
    share = nbytes // p  # the reduce-scatter: this rank's share of each input, then the results
    mine = lines(HEADER + me * share, HEADER + (me + 1) * share)
    header_apart = 0 if HEADER + me * share < 64 else 1   # the flag's line, unless in the share
    return (p - 1) * (mine + header_apart + lines(HEADER, HEADER + share)), 2


@pytest.fixture(scope="module")
def counting_build():
    if not shutil.which("mpicc.openmpi") or not shutil.which("mpirun.openmpi"):
        pytest.skip("no Open MPI (mpicc.openmpi)")
    return line_counts.build("openmpi", log=None)


def counts(build, p, nbytes, path):
    return line_counts.run(p, nbytes, path, CALLS, out=build, env={"HWLOC_SYNTHETIC": NODE})


@pytest.mark.parametrize("p", [4, 8])
@pytest.mark.parametrize("nbytes", [8, 512, 4096])
def test_flat_path_reads_every_other_ranks_lines(counting_build, p, nbytes):
    ranks = counts(counting_build, p, nbytes, "flat")
    for r in ranks:
        me, k = r["comm_rank"], r["allreduce"]
        read, flags = flat_expected(p, me, nbytes)
        assert k["calls"] == CALLS, r
        assert (k["lines_read"], k["lines_read_max"], k["flag_lines_written"]) == \
            (CALLS * read, read, CALLS * flags), (me, r)
        if nbytes < 4096:   # every other rank's lines, the same number from each
            numa = sum(1 for o in range(p) if o != me and o // 2 != me // 2)
            socket = sum(1 for o in range(p) if o // 4 != me // 4)
            each = read // (p - 1)
            assert (k["numa_lines"], k["socket_lines"]) == (CALLS * numa * each,
                                                           CALLS * socket * each), (me, r)
        assert (r["cores"], r["cores_per_numa"], r["cores_per_package"]) == (8, 2, 4), r


def tree_bound(p: int, nbytes: int) -> tuple[int, int]:
    """(most lines a rank reads a call, most socket-crossing lines a call over all ranks) by the
    tree's design: radix 2 at every level of this node (NUMA nodes of 2, packages of 4), so
    log2 p levels, one child a level and the parent's result; an edge is the flag line and, above
    TREE_INLINE_BYTES, the payload's lines after it; one edge up and one down crosses sockets."""
    levels, edge = p.bit_length() - 1, 1 + (0 if nbytes <= TREE_INLINE_BYTES else lines(0, nbytes))
    return (levels + 1) * edge, 2 * edge


@pytest.mark.parametrize("p", [4, 8])
@pytest.mark.parametrize("nbytes", [8, 512, 4096])
def test_tree_reads_grow_with_its_levels_and_cross_sockets_once(counting_build, p, nbytes):
    ranks = counts(counting_build, p, nbytes, "tree")
    most, socket = tree_bound(p, nbytes)
    sockets = 2
    per_call = [line_counts.steady(r["allreduce"], "lines_read") for r in ranks]
    assert max(per_call) <= most, per_call
    if nbytes < 4096:   # at 4 KiB the flat path reduce-scatters: 1/p of each input a rank
        assert max(per_call) < min(flat_expected(p, r, nbytes)[0] for r in range(p)), per_call
    crossing = sum(line_counts.steady(r["allreduce"], "socket_lines") for r in ranks)
    assert crossing <= sockets * socket, crossing
    assert 0 < crossing or p == 4, crossing     # p = 4: one package
    # every rank publishes its up line, and a rank with children (rank 0 among them) its
    # result for them: one or two flag lines a call
    flags = [line_counts.steady(r["allreduce"], "flag_lines_written") for r in ranks]
    assert all(f in (1, 2) for f in flags) and flags[0] == 2, flags


@pytest.mark.parametrize("nbytes", [8, 512, 4096])
def test_default_takes_the_tree_where_its_model_prices_it_lower(counting_build, nbytes):
    """MPIOPT_SHM_TREE unset (tree.c's default, from bench/line_model.py's model) at 16 ranks: a
    payload on the flag's line (8 B) stays flat (the tree only from 64 ranks), one past it
    (512 B) goes up the tree, and an allreduce of 4 KiB stays with the flat path's
    reduce-scatter: the flat path's counts exactly, or the tree's bound."""
    p = 16
    node = "package:2 numa:2 core:4 pu:1"
    ranks = line_counts.run(p, nbytes, "default", CALLS, out=counting_build,
                            env={"HWLOC_SYNTHETIC": node})
    read = [line_counts.steady(r["allreduce"], "lines_read") for r in ranks]
    if nbytes == 512:
        edge = 1 + nbytes // 64
        assert max(read) <= (3 + 1 + 1) * edge, read  # radix 4,2,2: the top reads 3 + 1 + 1 edges
        assert max(read) < flat_expected(p, 0, nbytes)[0]
    else:
        assert read == [flat_expected(p, me, nbytes)[0] for me in range(p)], read


def test_line_model_fits_p2_and_prices_the_paths():
    """bench/line_model.py: the fit reproduces the two p = 2 timings it was given (and only
    those: the others are held out, priced from the fit and compared), and the
    tree's price counts two handovers a level, the flat path's one (two from 4 KiB at p > 2)."""
    spec = importlib.util.spec_from_file_location("line_model",
                                                  mpi.repo_root() / "bench" / "line_model.py")
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    counts = {8: {"read_max": 2.0, "socket_per_call": 0.0}, 4096: {"read_max": 75.0, "socket_per_call": 0.0}}
    times = {8: 0.30e-6, 4096: 1.33e-6}
    L = 0.16e-6
    C, s = model.fit(counts, times, L)
    for n in counts:
        h, r, x, hx = model.path_terms(2, n, "flat", {"read_max": counts[n]["read_max"],
                                                      "socket_per_call": 0.0})
        assert (h, x, hx) == (1, 0.0, 0)
        assert abs(model.model_seconds(C, L, s, h, r, x, hx) - times[n]) < 1e-12
    # the sizes between are held out: priced from the fit alone, whatever their timing says
    counts[512] = {"read_max": 10.0, "socket_per_call": 0.0}
    for held_out_time in (0.60e-6, 60e-6):
        times[512] = held_out_time
        rows = {row["bytes"]: row for row in model.p2_rows(counts, times, C, L, s)}
        assert [rows[n]["path"] for n in (8, 512, 4096)] == \
            ["p = 2 (fitted)", "p = 2 (held out)", "p = 2 (fitted)"]
        assert rows[512]["model_us"] == pytest.approx((C + L + 9 * s) * 1e6)
        assert rows[512]["measured_over_model"] == pytest.approx(held_out_time / (C + L + 9 * s))
        assert rows[8]["measured_over_model"] == pytest.approx(1.0)
    tree = {"read_max": 12.0, "socket_per_call": 2.0, "radix": [4, 4, 2, 2]}
    assert model.path_terms(64, 8, "tree", tree) == (8, 12.0 + 4, 2.0, 2)
    flat = {"read_max": 315.0, "socket_per_call": 64 * 159.5}
    assert model.path_terms(64, 4096, "flat", flat) == (2, 315.0, 159.5, 1)


# Large messages (issue 68): the stages' lines (staged.c) and the point-to-point algorithms'
# messages (src/coll/engine/p2p.c), counted at p = 4 on a node whose two packages each hold two
# of the ranks (package = NUMA node = r // 2), so that every figure has a part that crosses.
LARGE_NODE = "package:2 numa:1 core:2 pu:1"
LARGE_CALLS = 3
LARGE_BYTES = 256 << 10         # of doubles: 4 of the stages' 64 KiB chunks
DOUBLE = 8
STAGE_BYTES = 64 << 10


def large_counts(build, p, nbytes, algorithm):
    """Every rank's allreduce counts with `algorithm` forced (shared_memory: single copy off, so
    the call goes through the stages, and the flat stages, not the node's groups where they are
    built in: MPIOPT_SHM_GROUPS=0, what the flat test below derives)."""
    env = {"HWLOC_SYNTHETIC": LARGE_NODE, "MPIOPT_SHM_SINGLE_COPY": "0", "MPIOPT_SHM_GROUPS": "0"}
    ranks = line_counts.run(p, nbytes, "default", LARGE_CALLS, out=build, env=env,
                            algorithm=algorithm)
    for r in ranks:
        assert (r["cores"], r["cores_per_numa"], r["cores_per_package"]) == (4, 2, 2), r
        assert r["allreduce"]["calls"] == LARGE_CALLS, r
    return ranks


def every_call(kind: dict, field: str) -> int:
    """`field` of one call, asserted the same in the first call and in every call after"""
    first = kind["first"][field]
    assert kind[field] == LARGE_CALLS * first, (field, kind)
    return first


def ring_block(count: int, p: int, b: int) -> int:
    """Elements of the ring's block b (ring.c's mpiopt_ring_block: the first count % p blocks
    one longer)"""
    return count // p + (1 if b < count % p else 0)


def test_ring_receives_its_blocks_from_the_left(counting_build):
    """ring.c: p - 1 steps of reduce-scatter, block (r - s - 1) mod p from the left at step s,
    and p - 1 of allgather, block (r - s) mod p: each rank receives
    2 (p - 1) / p of the vector, all of it from rank r - 1, across the packages where r - 1 is
    in the other one (ranks 0 and 2 here)."""
    p, count = 4, LARGE_BYTES // DOUBLE
    for r in large_counts(counting_build, p, LARGE_BYTES, "ring"):
        me, k = r["comm_rank"], r["allreduce"]
        left = (me - 1) % p
        blocks = [(me - s - 1) % p for s in range(p - 1)] + [(me - s) % p for s in range(p - 1)]
        want = DOUBLE * sum(ring_block(count, p, b) for b in blocks)
        assert want == 2 * (p - 1) * LARGE_BYTES // p
        cross = want if left // 2 != me // 2 else 0
        assert (every_call(k, "message_bytes"), every_call(k, "message_numa_bytes"),
                every_call(k, "message_socket_bytes")) == (want, cross, cross), (me, r)
        assert every_call(k, "stage_lines") == every_call(k, "lines_read") == 0, r


def test_recursive_doubling_swaps_the_whole_vector_each_step(counting_build):
    """recursive_doubling.c: log2 p steps, at step i the whole vector from rank r xor 2^i; the
    step with r xor 2 is the one across the packages."""
    p = 4
    for r in large_counts(counting_build, p, LARGE_BYTES, "recursive_doubling"):
        me, k = r["comm_rank"], r["allreduce"]
        partners = [me ^ (1 << i) for i in range(p.bit_length() - 1)]
        cross = LARGE_BYTES * sum(1 for o in partners if o // 2 != me // 2)
        assert cross == LARGE_BYTES
        assert (every_call(k, "message_bytes"), every_call(k, "message_socket_bytes"),
                every_call(k, "message_numa_bytes")) == \
            (len(partners) * LARGE_BYTES, cross, cross), (me, r)


def share_of(m: int, r: int, p: int) -> tuple[int, int]:
    """staged.c's share_of: (first, n) elements of rank r's share of a chunk of m"""
    first = m * r // p
    return first, m * (r + 1) // p - first


def test_flat_stages_read_each_share_of_every_chunk(counting_build):
    """staged.c's flat allreduce (p > 2), each 64 KiB chunk: a rank reads its share of the p - 1
    other ranks' inputs in their stages (`in`, from its share's first byte) and then their
    shares of the result (`out`, from the stage's start); every read counts, each chunk anew.
    Flags: it waits for p - 1 ranks' done, in and out lines a chunk and posts its own three."""
    p, per_chunk = 4, STAGE_BYTES // DOUBLE
    count = LARGE_BYTES // DOUBLE
    chunks = [min(per_chunk, count - at) for at in range(0, count, per_chunk)]
    for r in large_counts(counting_build, p, LARGE_BYTES, "shared_memory"):
        me, k = r["comm_rank"], r["allreduce"]
        lines_of = {o: 0 for o in range(p) if o != me}
        for m in chunks:
            first, n = share_of(m, me, p)
            for o in lines_of:
                lines_of[o] += lines(first * DOUBLE, (first + n) * DOUBLE)    # reduce
                lines_of[o] += lines(0, share_of(m, o, p)[1] * DOUBLE)        # gather
        assert sum(lines_of.values()) == len(chunks) * 2 * (p - 1) * (STAGE_BYTES // p // 64)
        cross = sum(v for o, v in lines_of.items() if o // 2 != me // 2)
        assert (every_call(k, "stage_lines"), every_call(k, "stage_numa_lines"),
                every_call(k, "stage_socket_lines")) == \
            (sum(lines_of.values()), cross, cross), (me, r)
        assert every_call(k, "message_bytes") == 0, r
        assert every_call(k, "flag_lines_written") == 3 * len(chunks), r
        assert every_call(k, "lines_read") == 3 * (p - 1) * len(chunks), r


STAGE_OUT_BYTES = STAGE_BYTES // 2 - 5 * 64    # node_window.h: a share of a chunk, half a stage


def test_grouped_stages_cross_the_sockets_only_with_the_partials(counting_build):
    """staged_groups.c at p = 4 on packages of 2 (groups of 2, 2 groups), each chunk (8110
    doubles: a share of the group's partial, half a chunk and an element, fits `out`): rank j of
    group b reads share j of its group partner's input, then share j of its counterpart's
    partial in the other package (the only lines crossing the sockets), then its partner's share
    of the whole (in its partner's `in`, where the partner's own input share would be)."""
    p, group = 4, 2
    per_chunk = min(STAGE_BYTES // DOUBLE, (STAGE_OUT_BYTES // DOUBLE - 1) * group)
    count = LARGE_BYTES // DOUBLE
    chunks = [min(per_chunk, count - at) for at in range(0, count, per_chunk)]
    env = {"HWLOC_SYNTHETIC": LARGE_NODE, "MPIOPT_SHM_SINGLE_COPY": "0", "MPIOPT_VERBOSE": "1"}
    err: list[str] = []
    ranks = line_counts.run(p, LARGE_BYTES, "default", LARGE_CALLS, out=counting_build, env=env,
                            algorithm="shared_memory", stderr=err)
    assert "shared_memory stages on 4 ranks: groups of 2, 2 groups" in "".join(err), err
    for r in ranks:
        me, k = r["comm_rank"], r["allreduce"]
        j = me % group
        same = other = 0
        for m in chunks:
            first, n = share_of(m, j, group)
            partner_first, partner_n = share_of(m, 1 - j, group)
            same += lines(first * DOUBLE, (first + n) * DOUBLE)                     # reduce
            other += lines(0, n * DOUBLE)                                           # partials
            same += lines(partner_first * DOUBLE, (partner_first + partner_n) * DOUBLE)  # gather
        assert (every_call(k, "stage_lines"), every_call(k, "stage_socket_lines")) == \
            (same + other, other), (me, r)
        assert every_call(k, "message_bytes") == 0, r
        assert every_call(k, "flag_lines_written") == 4 * len(chunks), r
