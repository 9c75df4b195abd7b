/* At MPI_Finalize: every metric of every rank reduced to rank 0 in one MPI_Reduce (min, max,
 * sum, rank of the min, rank of the max), the matrix and a few per-rank times gathered, and rank
 * 0 writes mpiopt-profile.json and mpiopt-profile.txt (each under a temporary name, renamed
 * when complete, so an aborted run leaves no profile that looks whole). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "profile.h"
#include "report.h"

#ifndef MPIOPT_FLAVOUR
#define MPIOPT_FLAVOUR "unknown"
#endif

/* (min, max, sum, rank of min, rank of max); ties go to the lower rank. */
static void combine(void *in_, void *inout_, int *len, MPI_Datatype *type)
{
    const struct prof_stat *in = in_;
    struct prof_stat *io = inout_;
    for (int i = 0; i < *len; i++) {
        if (in[i].min < io[i].min || (in[i].min == io[i].min && in[i].min_pe < io[i].min_pe)) {
            io[i].min = in[i].min;
            io[i].min_pe = in[i].min_pe;
        }
        if (in[i].max > io[i].max || (in[i].max == io[i].max && in[i].max_pe < io[i].max_pe)) {
            io[i].max = in[i].max;
            io[i].max_pe = in[i].max_pe;
        }
        io[i].sum += in[i].sum;
    }
}

/* Region names of every rank, in first-seen order by rank: the same list on every rank. */
static int region_union(char (*names)[PROF_REGION_NAME])
{
    char mine[PROF_MAX_REGIONS][PROF_REGION_NAME];
    memset(mine, 0, sizeof mine);
    for (int i = 0; i < prof_nregions; i++)
        memcpy(mine[i], prof_regions[i].name, PROF_REGION_NAME);
    char *all = NULL;
    if (prof.rank == 0)
        all = calloc((size_t)prof.size, sizeof mine);
    PMPI_Gather(mine, (int)sizeof mine, MPI_CHAR, all, (int)sizeof mine, MPI_CHAR, 0,
                MPI_COMM_WORLD);
    int n = 0;
    if (prof.rank == 0 && all) {
        for (int r = 0; r < prof.size; r++)
            for (int i = 0; i < PROF_MAX_REGIONS; i++) {
                const char *name = all + ((size_t)r * PROF_MAX_REGIONS + i) * PROF_REGION_NAME;
                int seen = !name[0];
                for (int j = 0; j < n && !seen; j++)
                    seen = strcmp(names[j], name) == 0;
                if (!seen && n < PROF_MAX_REGIONS)
                    memcpy(names[n++], name, PROF_REGION_NAME);
            }
    }
    free(all);
    PMPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    PMPI_Bcast(names, n * PROF_REGION_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    return n;
}

static void set(struct prof_stat *s, double v)
{
    *s = (struct prof_stat){v, v, v, prof.rank, prof.rank};
}

/* This rank's metrics, in the order report.h gives them names. */
static void local_metrics(struct prof_stat *m, int nregions, char (*names)[PROF_REGION_NAME])
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double wall = prof.t_final - prof.t_init, mpi = prof_mpi_time();
    double wait = prof.time_kind[PROF_WAIT];
    set(&m[M_WALL], wall);
    set(&m[M_USER], (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec);
    set(&m[M_SYS], (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec);
    set(&m[M_RSS], (double)ru.ru_maxrss / 1024.0);
    set(&m[M_MINFLT], (double)ru.ru_minflt);
    set(&m[M_MAJFLT], (double)ru.ru_majflt);
    set(&m[M_MPI], mpi);
    set(&m[M_COMPUTE], wall - mpi);
    set(&m[M_COMM], mpi - wait - prof.sync_time);
    set(&m[M_WAIT], wait);
    set(&m[M_SYNC], prof.sync_time);
    for (int c = 0; c < PROF_NCALLS; c++) {
        const struct prof_call_stats *s = &prof.call[c];
        struct prof_stat *p = &m[M_CALLS + 4 * c];
        set(&p[0], (double)s->calls);
        set(&p[1], s->time);
        set(&p[2], (double)s->bytes);
        set(&p[3], s->calls ? (double)s->bytes / (double)s->calls : 0.0);
    }
    for (int i = 0; i < nregions; i++) {
        struct prof_stat *p = &m[M_CALLS + 4 * PROF_NCALLS + 3 * i];
        const struct prof_region *r = NULL;
        for (int j = 0; j < prof_nregions && !r; j++)
            if (strcmp(prof_regions[j].name, names[i]) == 0)
                r = &prof_regions[j];
        set(&p[0], r ? (double)r->count : 0.0);
        set(&p[1], r ? r->time : 0.0);
        set(&p[2], r ? r->mpi_time : 0.0);
    }
    struct prof_stat *papi = &m[M_CALLS + 4 * PROF_NCALLS + 3 * nregions];
    set(&papi[0], prof_papi.available);
    for (int i = 0; i < PROF_PAPI_MAX; i++)
        set(&papi[1 + i], i < prof_papi.nevents ? (double)prof_papi.values[i] : 0.0);
}

/* The nonzero row of this rank's matrix as (dest, bytes, messages) triples, gathered. */
static double *gather_matrix(int *total)
{
    int mine = 0;
    for (int d = 0; d < prof.size; d++)
        mine += prof.matrix_msgs[d] > 0;
    double *row = malloc(3 * (size_t)(mine + 1) * sizeof *row);
    int k = 0;
    for (int d = 0; d < prof.size && row; d++)
        if (prof.matrix_msgs[d]) {
            row[k++] = d;
            row[k++] = prof.matrix_bytes[d];
            row[k++] = (double)prof.matrix_msgs[d];
        }
    int *counts = NULL, *displs = NULL;
    double *all = NULL;
    if (prof.rank == 0) {
        counts = calloc((size_t)prof.size, sizeof *counts);
        displs = calloc((size_t)prof.size, sizeof *displs);
    }
    PMPI_Gather(&k, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    *total = 0;
    if (prof.rank == 0) {
        for (int r = 0; r < prof.size; r++) {
            displs[r] = *total;
            *total += counts[r];
        }
        all = malloc(((size_t)*total + 1) * sizeof *all);
    }
    PMPI_Gatherv(row, k, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    /* rows carry no source: put it back from the displacement */
    if (prof.rank == 0 && all) {
        double *triples = malloc(((size_t)*total / 3 * 4 + 1) * sizeof *triples);
        int t = 0;
        for (int r = 0; r < prof.size; r++)
            for (int i = displs[r]; i < displs[r] + counts[r]; i += 3) {
                triples[t++] = r;
                triples[t++] = all[i];
                triples[t++] = all[i + 1];
                triples[t++] = all[i + 2];
            }
        free(all);
        all = triples;
        *total /= 3;
    }
    free(row);
    free(counts);
    free(displs);
    return all;
}

void prof_write_report(void)
{
    static char names[PROF_MAX_REGIONS][PROF_REGION_NAME];
    int nregions = region_union(names);
    int n = M_CALLS + 4 * PROF_NCALLS + 3 * nregions + 1 + PROF_PAPI_MAX;
    struct prof_stat *mine = calloc((size_t)n, sizeof *mine);
    struct prof_stat *all = calloc((size_t)n, sizeof *all);
    local_metrics(mine, nregions, names);

    MPI_Datatype stat_type;
    MPI_Op op;
    PMPI_Type_contiguous(5, MPI_DOUBLE, &stat_type);
    PMPI_Type_commit(&stat_type);
    PMPI_Op_create(combine, 1, &op);
    PMPI_Reduce(mine, all, n, stat_type, op, 0, MPI_COMM_WORLD);
    PMPI_Op_free(&op);
    PMPI_Type_free(&stat_type);

    double per_rank_mine[4] = {mine[M_WALL].sum, mine[M_MPI].sum, mine[M_COMPUTE].sum,
                               mine[M_SYNC].sum};
    double *per_rank = prof.rank == 0 ? malloc(4 * (size_t)prof.size * sizeof(double)) : NULL;
    PMPI_Gather(per_rank_mine, 4, MPI_DOUBLE, per_rank, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    /* each rank's host (MPI_Get_processor_name, the node name on both MPIs): the node split
     * of the matrix that `mpiopt report` prints */
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int host_len = 0;
    PMPI_Get_processor_name(host, &host_len);
    host[MPI_MAX_PROCESSOR_NAME - 1] = 0;
    char *hosts = prof.rank == 0 ? calloc((size_t)prof.size, MPI_MAX_PROCESSOR_NAME) : NULL;
    PMPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                0, MPI_COMM_WORLD);
    int nentries = 0;
    double *matrix = gather_matrix(&nentries);
    struct prof_sites sites;
    prof_sites_gather(&sites);
    const char *dir = getenv("MPIOPT_PROFILE_DIR");
    if (!dir || !*dir)
        dir = ".";
    struct prof_trace_summary trace;
    prof_trace_write(dir, &trace, nregions, names, prof.scale);

    if (prof.rank == 0) {
        struct prof_report rep = {
            .stats = all, .nregions = nregions, .region_names = names, .per_rank = per_rank,
            .matrix = matrix, .hosts = hosts, .nentries = nentries, .ranks = prof.size, .sync = prof.sync,
            .flavour = MPIOPT_FLAVOUR,
            .papi = &all[M_CALLS + 4 * PROF_NCALLS + 3 * nregions], .sites = &sites,
            .trace = &trace,
        };
        if (prof_write_json(&rep, dir) != 0 || prof_write_text(&rep, dir) != 0)
            fprintf(stderr, "libmpiopt-profile: cannot write the profile in %s: %s\n", dir,
                    strerror(errno));
    }
    prof_sites_free(&sites);
    free(per_rank);
    free(hosts);
    free(matrix);
    free(mine);
    free(all);
}
