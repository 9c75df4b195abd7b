/* libFuzzer target: the tuning-file reader (src/coll/select/tuning_file.c) on arbitrary bytes.
 *
 * The reader runs inside the user's program (MPI_Init's first collective reads
 * MPIOPT_TUNING_FILE), so no content may crash it, overflow its stack or read past the text:
 * built with clang's -fsanitize=fuzzer,address,undefined by tests/python/test_tuning_fuzz.py,
 * which runs it for a fixed time from the seed files in tests/fuzz/tuning_seeds/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tuning_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);      /* the reader takes NUL-terminated text, as read_file does */
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    static mpiopt_tuning t;             /* large (two tables of 512 rows): not on the stack */
    memset(&t, 0, sizeof t);
    char err[256];
    if (mpiopt_tuning_parse(text, "fuzz", &t, err, sizeof err) == 0) {
        /* what a parse that succeeded promises: row counts within the tables */
        for (int w = 0; w < 2; w++)
            if (t.nrows[w] < 0 || t.nrows[w] > MPIOPT_TUNING_MAX_ROWS)
                abort();
    } else if (!memchr(err, 0, sizeof err) || !err[0]) {
        abort();                        /* a failure always says why */
    }
    free(text);
    return 0;
}
