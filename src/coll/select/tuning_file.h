/* The tuning table: which algorithm to use for a communicator size and message size, and the
 * cost-model parameters for sizes without rows. Read from MPIOPT_TUNING_FILE (written by
 * `mpiopt tune`, format in docs/collectives.md) or compiled in (select.c). */
#ifndef MPIOPT_TUNING_FILE_H
#define MPIOPT_TUNING_FILE_H

#include "mpiopt.h"

#define MPIOPT_TUNING_MAX_ROWS 512

/* One row: up to max_bytes, communicators of min_ranks..max_ranks ranks (the row's rank-count
 * class) run `algorithm`; `ranks` is the count it was measured at. A row without class bounds (a
 * version 1 file, the built-in rows) covers exactly its `ranks`: min_ranks = max_ranks = ranks. */
typedef struct {
    int ranks;
    double max_bytes;
    mpiopt_algorithm algorithm;
    int min_ranks, max_ranks;
} mpiopt_tuning_row;

typedef struct {
    mpiopt_cost_params model;
    int nrows[2];                                       /* [0] allreduce, [1] reduce */
    mpiopt_tuning_row rows[2][MPIOPT_TUNING_MAX_ROWS];  /* sorted by (ranks, max_bytes) */
} mpiopt_tuning;

/* The measured rank count whose rows a communicator of p ranks takes from rows[0..n): among the
 * rows whose class holds p, the one measured nearest p (the larger on a tie); 0 if no class holds
 * p (then the cost model decides). *min_ranks and *max_ranks get its class (if not NULL). */
int mpiopt_tuning_class(const mpiopt_tuning_row *rows, int n, int p, int *min_ranks,
                        int *max_ranks);

/* Parses a tuning file into *t (rows sorted). Returns 0, or -1 with a message in err. Fields not
 * in the file keep the values *t had. */
int mpiopt_tuning_read(const char *path, mpiopt_tuning *t, char *err, int errlen);
/* The same from text in memory (NUL-terminated; `name` names it in the error): the fuzz
 * target's entry (tests/fuzz/tuning_file_fuzz.c). */
int mpiopt_tuning_parse(const char *text, const char *name, mpiopt_tuning *t, char *err,
                        int errlen);

#endif
