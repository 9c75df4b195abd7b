/* The profile as rank 0 holds it after the reduction, and the two files written from it. */
#ifndef MPIOPT_PROFILE_REPORT_H
#define MPIOPT_PROFILE_REPORT_H

#include "profile.h"

/* One metric over all ranks (sum: divide by ranks for the average). */
struct prof_stat {
    double min, max, sum, min_pe, max_pe;
};

/* Order of the reduced vector: system and MPI totals, then 4 per call (calls, time, bytes,
 * average bytes), then 3 per region (count, time, MPI time), then PAPI: 1 + PROF_PAPI_MAX. */
enum {
    M_WALL, M_USER, M_SYS, M_RSS, M_MINFLT, M_MAJFLT,
    M_MPI, M_COMPUTE, M_COMM, M_WAIT, M_SYNC,
    M_CALLS
};

/* Call sites merged over the ranks (sites.c), by time summed over ranks, largest first. */
struct prof_site_frame {
    const char *function, *file, *module;   /* "?" / "" where unknown */
    int line;                               /* 0: no line (no debug info) */
    unsigned long offset;                   /* of the address in function (or module) */
    int debug;                              /* file and line known */
};
struct prof_site_row {
    int call;                               /* enum prof_call */
    int nframes;                            /* [0]: the caller, then the stack above it */
    struct prof_site_frame frame[PROF_SITE_FRAMES];
    struct prof_stat count, bytes, time;
};
struct prof_sites {
    int enabled, frames;
    const char *resolver;
    double overflow;                        /* calls not counted, all ranks */
    int capacity;                           /* sites a thread holds */
    int nrows;
    struct prof_site_row *rows;
    char *text;                             /* the rows' strings */
};
/* Collective over MPI_COMM_WORLD; the rows on rank 0 only. */
void prof_sites_gather(struct prof_sites *out);
void prof_sites_free(struct prof_sites *s);

/* The timeline (trace.c) as the report tells of it. */
struct prof_trace_summary {
    int enabled, written;
    char path[4096];                        /* the OTF2 archive's directory */
    char reason[256];                       /* why not written */
    double recorded, dropped, capacity;     /* events over all ranks; events a thread holds */
};
/* Collective over MPI_COMM_WORLD: writes DIR/mpiopt-trace/ (OTF2); out on rank 0. */
void prof_trace_write(const char *dir, struct prof_trace_summary *out, int nregions,
                      char (*names)[PROF_REGION_NAME], double scale);

struct prof_report {
    const struct prof_stat *stats;
    int nregions;
    char (*region_names)[PROF_REGION_NAME];
    const double *per_rank;     /* [ranks][4]: wall, MPI, compute, sync time */
    const double *matrix;       /* [nentries][4]: source, destination, bytes, messages */
    const char *hosts;          /* [ranks][MPI_MAX_PROCESSOR_NAME]: each rank's host */
    int nentries;
    int ranks;
    int sync;
    const char *flavour;
    const struct prof_stat *papi;   /* [0]: counters read (min over ranks: all read them),
                                       [1..]: rank 0's events of prof_papi.names */
    const struct prof_sites *sites;
    const struct prof_trace_summary *trace;
};

int prof_write_json(const struct prof_report *rep, const char *dir);
int prof_write_text(const struct prof_report *rep, const char *dir);

#endif
