/* mpiopt-allreduce: the OSU table and the JSON document. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "allreduce_bench.h"

/* ---- output ---- */

static const char *label(const options *o)
{
    static const char *const names[] = {"Allreduce", "Reduce", "Scan", "Exscan",
                                         "Reduce_scatter_block", "Reduce_scatter"};
    return names[o->operation];
}

static const char *operation_name(const options *o)
{
    static const char *const names[] = {"allreduce", "reduce", "scan", "exscan",
                                         "reduce_scatter_block", "reduce_scatter"};
    return names[o->operation];
}

/* Wide enough for "<algorithm>-max(us)": the columns of a row line up with its header. */
static int column_width(const char *algorithm)
{
    int w = (int)strlen(algorithm) + 8;
    return w > FIELD_WIDTH ? w : FIELD_WIDTH;
}

void print_table_header(const options *o)
{
    printf("# OSU MPI %s Latency Test (mpiopt-allreduce, %d ranks)\n", label(o), nranks);
    printf("# Datatype: %s.\n", o->type->mpi_name);
    printf("# Send buffer: %s.\n", o->fresh ? "written before every call (--fresh, as applications)"
                                            : "unchanged between calls (OSU's way)");
    if (o->op->op != MPI_SUM)
        printf("# Op: %s.\n", o->op->mpi_name);
    if (o->ncolumns == 1) {
        /* exactly osu_allreduce's columns; ours (algorithm, bandwidth) come after them */
        printf("# Algorithm: %s.\n", column_name(o->columns[0]));
        printf("%-*s%*s", 10, "# Size", FIELD_WIDTH, "Avg Latency(us)");
        if (o->full)
            printf("%*s%*s%*s", FIELD_WIDTH, "Min Latency(us)", FIELD_WIDTH, "Max Latency(us)", 12,
                   "Iterations");
        if (o->validate)
            printf("%*s", FIELD_WIDTH, "Validation");
        printf("%*s\n", FIELD_WIDTH, "Bandwidth(MB/s)");
        return;
    }
    /* one average-latency column per algorithm, then one bandwidth column per algorithm */
    printf("%-*s", 10, "# Size");
    char name[64];
    for (int c = 0; c < o->ncolumns; c++) {
        const char *alg = column_name(o->columns[c]);
        snprintf(name, sizeof name, "%s(us)", alg);
        printf(" %*s", column_width(alg), name);
        if (o->full) {
            snprintf(name, sizeof name, "%s-min(us)", alg);
            printf(" %*s", column_width(alg), name);
            snprintf(name, sizeof name, "%s-max(us)", alg);
            printf(" %*s", column_width(alg), name);
        }
    }
    for (int c = 0; c < o->ncolumns; c++) {
        snprintf(name, sizeof name, "%s(MB/s)", column_name(o->columns[c]));
        printf(" %*s", column_width(column_name(o->columns[c])), name);
    }
    if (o->full)
        printf(" %*s", 12, "Iterations");
    if (o->validate)
        printf(" %*s", FIELD_WIDTH, "Validation");
    printf("\n");
}

static double bandwidth(long long size, double us)
{
    return us > 0 ? (double)size / us : 0.0;  /* bytes per microsecond = MB/s */
}

void print_table_row(const options *o, long long size, int iterations, const column_result *res)
{
    int errors = 0;
    for (int c = 0; c < o->ncolumns; c++)
        errors += res[c].errors;
    if (o->ncolumns == 1) {
        printf("%-*lld%*.*f", 10, size, FIELD_WIDTH, FLOAT_PRECISION, res[0].avg_us);
        if (o->full)
            printf("%*.*f%*.*f%*d", FIELD_WIDTH, FLOAT_PRECISION, res[0].min_us, FIELD_WIDTH,
                   FLOAT_PRECISION, res[0].max_us, 12, iterations);
        if (o->validate)
            printf("%*s", FIELD_WIDTH, errors ? "Fail" : "Pass");
        printf("%*.*f\n", FIELD_WIDTH, FLOAT_PRECISION, bandwidth(size, res[0].avg_us));
    } else {
        printf("%-*lld", 10, size);
        for (int c = 0; c < o->ncolumns; c++) {
            int w = column_width(column_name(o->columns[c]));
            printf(" %*.*f", w, FLOAT_PRECISION, res[c].avg_us);
            if (o->full)
                printf(" %*.*f %*.*f", w, FLOAT_PRECISION, res[c].min_us, w, FLOAT_PRECISION,
                       res[c].max_us);
        }
        for (int c = 0; c < o->ncolumns; c++)
            printf(" %*.*f", column_width(column_name(o->columns[c])), FLOAT_PRECISION,
                   bandwidth(size, res[c].avg_us));
        if (o->full)
            printf(" %*d", 12, iterations);
        if (o->validate)
            printf(" %*s", FIELD_WIDTH, errors ? "Fail" : "Pass");
        printf("\n");
    }
    fflush(stdout);
}

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

void print_json_header(const options *o)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n")] = 0;  /* MPICH prints pages of configure options */
    printf("{\"benchmark\": \"mpiopt-allreduce\", \"operation\": \"%s\", \"ranks\": %d, "
           "\"live_comms\": %d, ", operation_name(o), nranks, o->live_comms);
    printf("\"datatype\": \"%s\", \"op\": \"%s\", \"validation\": %s, \"fresh\": %s, "
           "\"mpi_library\": ", o->type->mpi_name, o->op->mpi_name,
           o->validate ? "true" : "false", o->fresh ? "true" : "false");
    print_json_string(version);
    printf(", \"algorithms\": [");
    for (int c = 0; c < o->ncolumns; c++)
        printf("%s\"%s\"", c ? ", " : "", column_name(o->columns[c]));
    printf("],\n \"results\": [");
}

void print_json_rows(const options *o, long long size, int iterations, const column_result *res,
                            int *first)
{
    for (int c = 0; c < o->ncolumns; c++) {
        printf("%s\n  {\"algorithm\": \"%s\", \"bytes\": %lld, \"count\": %lld, \"iterations\": %d, "
               "\"avg_us\": %.4f, \"min_us\": %.4f, \"max_us\": %.4f, \"median_us\": %.4f, "
               "\"bandwidth_mb_s\": %.4f",
               *first ? "" : ",", column_name(o->columns[c]), size,
               size / (long long)o->type->size, iterations, res[c].avg_us, res[c].min_us,
               res[c].max_us, res[c].median_us, bandwidth(size, res[c].avg_us));
        if (o->validate)
            printf(", \"valid\": %s, \"errors\": %d", res[c].errors ? "false" : "true", res[c].errors);
        printf("}");
        *first = 0;
    }
    fflush(stdout);
}
