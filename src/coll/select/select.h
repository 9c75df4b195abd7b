/* Selection (src/coll/select/): which algorithm a call runs. The rows (select.c: the environment,
 * the tuning file, the cost model), auto's timed trials on a communicator's first calls
 * (measured.c) and the tuning file's parser (tuning_file.c). Above the algorithms. */
#ifndef MPIOPT_COLL_SELECT_H
#define MPIOPT_COLL_SELECT_H

#include "coll/algorithms/algorithms.h"

/* The algorithm to run: `requested` unless it is AUTO (then the env var, tuning table or cost
 * model decides); an algorithm that cannot do a non-commutative op is replaced by one that can.
 * vendor_ok = 0 keeps `auto` from choosing the vendor (its result is known to be wrong, or it
 * polls an oversubscribed node: the caller, collective_args.c, knows). */
mpiopt_algorithm mpiopt_select(int is_reduce, mpiopt_algorithm requested, int p, size_t bytes,
                               int commutative, int vendor_ok, int rank);

/* auto's choice for a communicator whose ranks are on more than one node, where the rows chose
 * shared_memory (it would fall back to message passing there): the cost model's cheapest of the
 * others (hierarchical among them). */
mpiopt_algorithm mpiopt_select_across_nodes(int is_reduce, int p, size_t bytes, int commutative,
                                            int rank);

/* The cost-model parameters `auto` selects with (built in, or MPIOPT_TUNING_FILE's); registered
 * with the cost model (mpiopt_cost_model_source) for the algorithms that choose inner ones. */
const mpiopt_cost_params *mpiopt_selection_model(void);

/* 1 if MPIOPT_ALLREDUCE (is_reduce = 0) / MPIOPT_REDUCE names the vendor. */
int mpiopt_env_asks_vendor(int is_reduce);

/* 1 unless MPIOPT_REPRODUCIBLE=0: a call whose result depends on the order of its reduction
 * (floating-point sums and products, mpiopt_result_order_free) at more than two ranks runs one of
 * mpiopt's algorithms, never the vendor's, whose order is its own: the rows' choice depends on p
 * and the size alone and auto's trials choose among algorithms with the same bits
 * (tests/c/same_bits.c), so the program's results do not change from run to run with the
 * machine's timings. With 0 the vendor may take such a call where faster. */
int mpiopt_selection_reproducible(void);

/* 1 if `auto` may time its candidates (measured.c): it chooses from the built-in rows (no tuning
 * file, no MPIOPT_ALLREDUCE / MPIOPT_REDUCE) and MPIOPT_MEASURE is not 0. */
int mpiopt_selection_measures(int is_reduce);

/* 1 if MPIOPT_ALLREDUCE (is_reduce = 0) / MPIOPT_REDUCE names an algorithm: auto's choices are
 * then the user's. */
int mpiopt_selection_forced(int is_reduce);

/* ---- measured choice (measured.c): auto times its candidates on a communicator's first calls ----
 * The algorithm a blocking allreduce of count elements on c runs, where the rows chose
 * rows_choice: a trial's candidate (*measuring = 1: time the call and give the time to
 * mpiopt_measured_record), the class's agreed choice, or rows_choice where nothing is measured.
 * predefined_op: the op is one of MPI's own (some candidates take only those); vendor_ok: the
 * vendor may take the call (mpiopt_select's), and so be a candidate (MPIOPT_ALG_VENDOR: hand the
 * call to PMPI_Allreduce, timed like the others). */
mpiopt_algorithm mpiopt_measured_pick(const mpiopt_coll *c, mpiopt_algorithm rows_choice,
                                      size_t count, int predefined_op, int vendor_ok,
                                      int *measuring);
void mpiopt_measured_record(const mpiopt_coll *c, size_t count, int predefined_op,
                            int vendor_ok, double seconds);

#endif
