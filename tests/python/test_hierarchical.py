"""The node-aware `hierarchical` allreduce and reduce (src/coll/algorithms/hierarchical.c) with pretend nodes
on one machine: MPIOPT_RANKS_PER_NODE=k makes each run of k ranks of MPI_COMM_WORLD a node
(src/coll/node/node_layout.c), the last one smaller when k does not divide p.

The collectives checker (tests/c/coll_check.c) runs `hierarchical` against the rank-order
reference: every op and type of its case set, in place, non-commutative ops, counts around p and
large ones, roots at both ends, on MPI_COMM_WORLD (consecutive nodes) and on a communicator split
with reversed keys (nodes of uneven sizes whose ranks are not consecutive: commutative ops run
node-aware there, non-commutative ones go to a flat algorithm). Blocking calls at every p from 1
to 17 (under MPICH a spread: P_FOR_K_MPICH says why); nonblocking and persistent ones (the
schedule recording) at a spread of p. The three ways
the algorithm splits the work (the whole vector for small counts, halving shares on nodes of one
power-of-two size, direct shares otherwise) all run: counts 1 to 65537, k = 2, 4 and 3."""
import json
import os
import tempfile

import pytest

from mpiopt import mpi
from conftest import require_build, wide
from test_coll import assert_all_checks_passed, run_checker, verbose_lines

RANKS_PER_NODE = [1, 2, 3, 4]
# Every p from 1 to 17 for nodes of 2 and 3 ranks (3: the last node uneven at most p); a spread
# for 1 and 4, whose layouts those runs mostly repeat: 136 oversubscribed runs of the checker
# were more than CI's time allows beside the rest of the suite.
P_FOR_K = {1: [1, 2, 3, 5, 8, 13, 17], 2: list(range(1, 18)), 3: list(range(1, 18)),
           4: [1, 3, 4, 5, 6, 8, 9, 12, 16, 17]}
# Under MPICH, which polls while oversubscribed, a run takes about three times Open MPI's: there
# a spread of the same layouts (every shape of last node, powers of two and not, 17), those
# above 8 ranks in the full tier (conftest.wide). The algorithm's code is the same under both
# MPIs; Open MPI runs every p in `make test`.
P_FOR_K_MPICH = {1: [1, 2, 5, 17], 2: [1, 2, 3, 4, 5, 7, 8, 11, 16, 17],
                 3: [1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 17], 4: [1, 4, 5, 6, 8, 9, 17]}
P_NONBLOCKING = {"openmpi": (3, 5, 8, 17), "mpich": (3, 8)}


def options(p, mode):
    """The checker's matrix for one run: smaller as p grows (p > 2 is oversubscribed here)."""
    common = ["--algorithms", "hierarchical", "--comms", "world,split"]
    if mode != "blocking":
        common += ["--mode", mode]
    if p <= 5:
        return common + ["--big-cases", "quick"]
    if p <= 9:
        return common + ["--cases", "quick", "--big-cases", "minimal"]
    return common + ["--cases", "minimal", "--counts", "1,p-1,p+1,1000,65537", "--roots", "last"]


def run_with_nodes(flavour, p, k, mode="blocking", **env):
    return run_checker(flavour, p, options(p, mode), timeout=400,
                       env=dict(os.environ, MPIOPT_RANKS_PER_NODE=str(k), **env))


def tiers(flavour, k):
    """The p of one test each tier: `make test`'s (conftest.wide says which are the full tier's)
    and the full tier's, as pytest params (flavour, k, the p list)."""
    every = (P_FOR_K_MPICH if flavour == "mpich" else P_FOR_K)[k]
    out = [pytest.param(flavour, k, [p for p in every if not wide(flavour, p)], id=f"{flavour}-{k}")]
    full = [p for p in every if wide(flavour, p)]
    if full:
        out.append(pytest.param(flavour, k, full, id=f"{flavour}-{k}-wide", marks=pytest.mark.full))
    return out


@pytest.mark.parametrize("flavour,k,ranks", [t for f in mpi.FLAVOURS for k in RANKS_PER_NODE
                                             for t in tiers(f, k)])
def test_blocking_matches_reference_at_every_p(flavour, k, ranks):
    require_build(flavour)
    for p in ranks:
        assert_all_checks_passed(run_with_nodes(flavour, p, k), p)


@pytest.mark.parametrize("mode", ["nonblocking", "persistent"])
@pytest.mark.parametrize("k", RANKS_PER_NODE)
@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_nonblocking_and_persistent_match_reference(flavour, k, mode):
    require_build(flavour)
    for p in P_NONBLOCKING.get(flavour, (3, 5, 8, 17)):
        assert_all_checks_passed(run_with_nodes(flavour, p, k, mode), p)


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_nodes_found_by_mpi(flavour):
    """Without the knob the layout comes from MPI_Comm_split_type: here one node, where the
    algorithm is its node's reduce-scatter and allgather alone."""
    require_build(flavour)
    env = {k: v for k, v in os.environ.items() if k != "MPIOPT_RANKS_PER_NODE"}
    for p in (3, 4):
        assert_all_checks_passed(run_checker(flavour, p, options(p, "blocking"), env=env), p)


def auto_choices(flavour, p, model, **env):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"version": 1, "model": model, "allreduce": [], "reduce": []}, f)
    try:
        r = run_checker(flavour, p, ["--algorithms", "auto", "--cases", "minimal", "--counts",
                                     "1,100000", "--comms", "world"],
                        env=dict(os.environ, MPIOPT_TUNING_FILE=f.name, MPIOPT_VERBOSE="1",
                                 **env))
    finally:
        os.unlink(f.name)
    assert r.returncode == 0, r.stderr[-2000:]
    return {l.rsplit(": ", 1)[1] for l in verbose_lines(r.stderr)
            if l.startswith(f"mpiopt: allreduce p={p}")}


@pytest.mark.parametrize("flavour", mpi.FLAVOURS)
def test_auto_picks_hierarchical_only_across_nodes_of_several_ranks(flavour):
    """A network 20x slower than the node: with 2 nodes of 4 ranks auto goes node-aware; with
    all 8 ranks on one node, or one rank a node, it has no second level to use."""
    require_build(flavour)
    net = {"alpha": 2e-5, "beta": 1e-9, "gamma": 0, "intra_alpha": 1e-6, "intra_beta": 5e-11}
    assert "hierarchical" in auto_choices(flavour, 8, dict(net, ranks_per_node=4))
    assert "hierarchical" in auto_choices(flavour, 8, net, MPIOPT_RANKS_PER_NODE="4")
    assert "hierarchical" not in auto_choices(flavour, 8, dict(net, ranks_per_node=8))
    assert "hierarchical" not in auto_choices(flavour, 8, dict(net, ranks_per_node=1))


WIDE_FLAVOURS = [pytest.param(f, marks=[pytest.mark.full] if wide(f, 16) else []) for f in mpi.FLAVOURS]


@pytest.mark.parametrize("flavour", WIDE_FLAVOURS)
def test_whole_vector_rounds_across_nodes(flavour):
    """The whole-vector allreduce by rounds of up to m nodes at once (whole_allreduce_radix),
    which the model picks for small counts when the network is much slower than the node: 2
    nodes of 4 (one round of 2 nodes: the node's two subgroups of 2 ranks both do it), 8 nodes
    of 2 (three rounds), 8 nodes of 4 (a round of 4 nodes, then one of 2 in two subgroups)."""
    require_build(flavour)
    model = {"alpha": 2e-5, "beta": 1e-6, "gamma": 0, "intra_alpha": 1e-8, "intra_beta": 1e-12}
    for p, k in ((8, 4), (16, 2), (32, 4)):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"version": 1, "model": dict(model, ranks_per_node=k), "allreduce": [],
                       "reduce": []}, f)
        try:
            r = run_checker(flavour, p, ["--algorithms", "hierarchical", "--comms", "world",
                                         "--cases", "minimal", "--counts", "1,p-1,p+1"],
                            timeout=400, env=dict(os.environ, MPIOPT_RANKS_PER_NODE=str(k),
                                                  MPIOPT_TUNING_FILE=f.name))
        finally:
            os.unlink(f.name)
        assert_all_checks_passed(r, p)


@pytest.mark.parametrize("mode", ["blocking", "nonblocking", "persistent"])
@pytest.mark.parametrize("flavour", WIDE_FLAVOURS)
def test_shares_in_rounds_of_several_nodes(flavour, mode):
    """The shares' allreduce between nodes in rounds of up to 16 nodes at once
    (share_allreduce_rounds), which the model picks when network steps are dear and further
    messages cheap: 8 nodes of 2 (one round of 8), 4 nodes of 4 (one of 4), 32 nodes of 1 (two
    rounds of different sizes: 4 then 8 nodes). Counts smaller than the nodes leave some blocks
    empty; the non-commutative matrix product checks node order."""
    require_build(flavour)
    model = {"alpha": 2e-5, "beta": 1e-9, "gamma": 0, "intra_alpha": 1e-8, "intra_beta": 1e-12}
    cases = ((16, 2), (16, 4), (32, 1)) if mode == "blocking" else ((16, 2),)
    for p, k in cases:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"version": 1, "model": dict(model, ranks_per_node=k), "allreduce": [],
                       "reduce": []}, f)
        try:
            r = run_checker(flavour, p, ["--algorithms", "hierarchical", "--comms", "world,split",
                                         "--mode", mode, "--cases", "minimal", "--counts",
                                         "1,p-1,p+1,1000,65537"],
                            timeout=600, env=dict(os.environ, MPIOPT_RANKS_PER_NODE=str(k),
                                                  MPIOPT_TUNING_FILE=f.name))
        finally:
            os.unlink(f.name)
        assert_all_checks_passed(r, p)
