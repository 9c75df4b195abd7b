/* A reader for the tuning file, small on purpose: the file has one fixed shape
 *   {"version": 1, "flavour": "...", "model": {"alpha": .., "beta": .., "gamma": ..,
 *                                              "ranks_per_node": K, "intra_alpha": ..,
 *                                              "intra_beta": ..,
 *                                              "exchange": {"ranks": P, "patterns": [...]}},
 *    "allreduce": [{"ranks": P, "min_ranks": LO, "max_ranks": HI, "max_bytes": B,
 *                   "algorithm": "NAME"}, ...], "reduce": [...]}
 * ("exchange", optional, is what mpiopt-exchange --json prints; "min_ranks" and "max_ranks",
 * the row's rank-count class, are version 2's and optional: without them a row covers exactly
 * its "ranks", as every row of version 1 did)
 * so a recursive-descent walk over JSON values that picks those keys is enough; unknown keys are
 * skipped, so newer writers can add fields. The file is read inside the program's process (in
 * MPI_Init's first collective), so bad content must cost a warning, never the program: the
 * nesting is bounded (MAX_DEPTH; a file of 200,000 '[' overflowed the stack of the recursion) and
 * so is the size (MAX_FILE_BYTES). tests/fuzz/tuning_file_fuzz.c runs it under libFuzzer. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/select/select.h"
#include "coll/select/tuning_file.h"

/* the real format nests 4 deep ({"model": {"exchange": {"patterns": [{…}]}}}); a build may raise
 * it only to show that the bound matters (the fuzz test's control) */
#ifndef MPIOPT_TUNING_MAX_DEPTH
#define MPIOPT_TUNING_MAX_DEPTH 32
#endif
#define MAX_DEPTH MPIOPT_TUNING_MAX_DEPTH
/* a real table is a few KiB; anything near this is not one */
#define MAX_FILE_BYTES (16L << 20)

typedef struct {
    const char *s;
    const char *err;
    int depth;          /* objects and arrays open around the current value */
} parser;

/* Entering an object or array: -1 (and the error) past MAX_DEPTH. */
static int descend(parser *p)
{
    if (++p->depth > MAX_DEPTH) {
        p->err = "nested too deep (a tuning table nests 4 levels)";
        return -1;
    }
    return 0;
}

static void skip_ws(parser *p)
{
    while (isspace((unsigned char)*p->s))
        p->s++;
}

static int expect(parser *p, char ch)
{
    skip_ws(p);
    if (*p->s != ch) {
        p->err = "unexpected character";
        return -1;
    }
    p->s++;
    return 0;
}

/* Reads a string (no escapes needed for this format; \x is kept verbatim) into out. */
static int parse_string(parser *p, char *out, size_t outlen)
{
    if (expect(p, '"'))
        return -1;
    size_t n = 0;
    while (*p->s && *p->s != '"') {
        if (*p->s == '\\' && p->s[1])
            p->s++;
        if (n + 1 < outlen)
            out[n++] = *p->s;
        p->s++;
    }
    if (*p->s != '"') {
        p->err = "unterminated string";
        return -1;
    }
    p->s++;
    out[n] = 0;
    return 0;
}

/* A finite number (strtod also reads "nan" and "inf", which no field may hold: a NaN passes
 * every range check below). */
static int parse_number(parser *p, double *v)
{
    skip_ws(p);
    char *end;
    *v = strtod(p->s, &end);
    if (end == p->s || !isfinite(*v)) {
        p->err = "expected a number";
        return -1;
    }
    p->s = end;
    return 0;
}

/* A whole number in [lo, hi] into an int: converting a double outside int's range is undefined
 * behaviour (the fuzzer's first find, a "ranks" of 1e300). */
static int parse_int(parser *p, int *out, int lo, int hi, const char *what)
{
    double v;
    if (parse_number(p, &v))
        return -1;
    if (v < lo || v > hi) {
        p->err = what;
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int skip_value(parser *p);

/* Calls on_key(key, ctx) for each member; on_key must consume the value. */
static int parse_object(parser *p, int (*on_key)(parser *, const char *, void *), void *ctx)
{
    if (expect(p, '{') || descend(p))
        return -1;
    skip_ws(p);
    if (*p->s == '}') {
        p->s++;
        p->depth--;
        return 0;
    }
    for (;;) {
        char key[64];
        if (parse_string(p, key, sizeof key) || expect(p, ':') || on_key(p, key, ctx))
            return -1;
        skip_ws(p);
        if (*p->s == ',') {
            p->s++;
            continue;
        }
        p->depth--;
        return expect(p, '}');
    }
}

/* Calls on_item(ctx) for each element; on_item must consume the element. */
static int parse_array(parser *p, int (*on_item)(parser *, void *), void *ctx)
{
    if (expect(p, '[') || descend(p))
        return -1;
    skip_ws(p);
    if (*p->s == ']') {
        p->s++;
        p->depth--;
        return 0;
    }
    for (;;) {
        if (on_item(p, ctx))
            return -1;
        skip_ws(p);
        if (*p->s == ',') {
            p->s++;
            continue;
        }
        p->depth--;
        return expect(p, ']');
    }
}

static int skip_key(parser *p, const char *key, void *ctx)
{
    return skip_value(p);
}

static int skip_item(parser *p, void *ctx)
{
    return skip_value(p);
}

static int skip_value(parser *p)
{
    skip_ws(p);
    char buf[8];
    double v;
    switch (*p->s) {
    case '{':
        return parse_object(p, skip_key, NULL);
    case '[':
        return parse_array(p, skip_item, NULL);
    case '"':
        return parse_string(p, buf, sizeof buf);
    case 't':
    case 'f':
    case 'n':
        while (isalpha((unsigned char)*p->s))
            p->s++;
        return 0;
    default:
        return parse_number(p, &v);
    }
}

/* One entry of "patterns" as mpiopt-exchange prints it. */
typedef struct {
    char name[32];
    double distance, alpha, beta;
} pattern_entry;

static int pattern_key(parser *p, const char *key, void *ctx)
{
    pattern_entry *e = ctx;
    if (!strcmp(key, "pattern"))
        return parse_string(p, e->name, sizeof e->name);
    double *field = !strcmp(key, "distance") ? &e->distance
                    : !strcmp(key, "alpha") ? &e->alpha
                    : !strcmp(key, "beta") ? &e->beta : NULL;
    return field ? parse_number(p, field) : skip_value(p);
}

static int pattern_item(parser *p, void *ctx)
{
    mpiopt_cost_params *m = ctx;
    pattern_entry e = {"", 0, -1, -1};
    if (parse_object(p, pattern_key, &e))
        return -1;
    if (e.alpha < 0 || e.beta < 0) {
        p->err = "a pattern needs alpha >= 0 and beta >= 0";
        return -1;
    }
    mpiopt_link_cost l = {e.alpha, e.beta};
    if (!strcmp(e.name, MPIOPT_PATTERN_STEP)) {
        int k = 0;
        while (k < MPIOPT_COST_MAX_STEPS && (double)(1 << k) < e.distance)
            k++;
        if (k == MPIOPT_COST_MAX_STEPS || (double)(1 << k) != e.distance) {
            p->err = "a step pattern's distance must be a power of two";
            return -1;
        }
        m->step[k] = l;
        if (k + 1 > m->exchange_steps)
            m->exchange_steps = k + 1;
    } else if (!strcmp(e.name, MPIOPT_PATTERN_FOLD)) {
        m->fold = l;
    } else if (!strcmp(e.name, MPIOPT_PATTERN_RING)) {
        m->ring = l;
    } else if (!strcmp(e.name, MPIOPT_PATTERN_DOUBLING)) {
        m->doubling_latency = e.alpha;
    } else if (!strcmp(e.name, MPIOPT_PATTERN_HALVING_DOUBLING)) {
        m->halving_doubling_latency = e.alpha;
    }
    return 0;    /* patterns this library does not price are skipped */
}

static int exchange_key(parser *p, const char *key, void *ctx)
{
    mpiopt_cost_params *m = ctx;
    if (!strcmp(key, "ranks"))
        return parse_int(p, &m->exchange_ranks, 0, 1 << 30, "exchange ranks out of range");
    if (!strcmp(key, "patterns"))
        return parse_array(p, pattern_item, m);
    return skip_value(p);
}

static int model_key(parser *p, const char *key, void *ctx)
{
    mpiopt_cost_params *m = ctx;
    if (!strcmp(key, "exchange")) {
        /* replaces any earlier measurements */
        mpiopt_cost_params fresh = {.alpha = m->alpha, .beta = m->beta, .gamma = m->gamma,
                                    .ranks_per_node = m->ranks_per_node,
                                    .intra_alpha = m->intra_alpha,
                                    .intra_beta = m->intra_beta};
        *m = fresh;
        if (parse_object(p, exchange_key, m))
            return -1;
        if (m->exchange_ranks < 2 || m->exchange_steps < 1) {
            p->err = "\"exchange\" needs ranks >= 2 and step patterns";
            return -1;
        }
        return 0;
    }
    if (!strcmp(key, "ranks_per_node"))
        return parse_int(p, &m->ranks_per_node, 0, 1 << 30, "ranks_per_node out of range");
    double *field = !strcmp(key, "alpha") ? &m->alpha
                    : !strcmp(key, "beta") ? &m->beta
                    : !strcmp(key, "gamma") ? &m->gamma
                    : !strcmp(key, "intra_alpha") ? &m->intra_alpha
                    : !strcmp(key, "intra_beta") ? &m->intra_beta : NULL;
    if (!field)
        return skip_value(p);
    if (parse_number(p, field))
        return -1;
    if (*field < 0) {
        p->err = "negative model parameter";
        return -1;
    }
    return 0;
}

static int row_key(parser *p, const char *key, void *ctx)
{
    mpiopt_tuning_row *r = ctx;
    if (!strcmp(key, "ranks"))
        return parse_int(p, &r->ranks, 1, 1 << 30, "a row's ranks out of range");
    if (!strcmp(key, "min_ranks"))
        return parse_int(p, &r->min_ranks, 1, 1 << 30, "a row's min_ranks out of range");
    if (!strcmp(key, "max_ranks"))
        return parse_int(p, &r->max_ranks, 1, 1 << 30, "a row's max_ranks out of range");
    if (!strcmp(key, "max_bytes"))
        return parse_number(p, &r->max_bytes);
    if (!strcmp(key, "algorithm")) {
        char name[64];
        if (parse_string(p, name, sizeof name))
            return -1;
        int a = mpiopt_algorithm_from_name(name);
        if (a < 0 || a == MPIOPT_ALG_AUTO) {
            p->err = "unknown algorithm name";
            return -1;
        }
        r->algorithm = (mpiopt_algorithm)a;
        return 0;
    }
    return skip_value(p);
}

typedef struct {
    mpiopt_tuning *t;
    int which;
} rows_ctx;

static int row_item(parser *p, void *ctx)
{
    rows_ctx *rc = ctx;
    mpiopt_tuning_row r = {0, -1, (mpiopt_algorithm)-1, 0, 0};
    if (parse_object(p, row_key, &r))
        return -1;
    if (r.ranks < 1 || r.max_bytes < 0 || (int)r.algorithm < 0) {
        p->err = "a row needs ranks >= 1, max_bytes >= 0 and algorithm";
        return -1;
    }
    /* a bound not given is the measured count itself */
    if (!r.min_ranks)
        r.min_ranks = r.ranks;
    if (!r.max_ranks)
        r.max_ranks = r.ranks;
    if (r.min_ranks > r.ranks || r.ranks > r.max_ranks) {
        p->err = "a row needs min_ranks <= ranks <= max_ranks";
        return -1;
    }
    if (rc->t->nrows[rc->which] == MPIOPT_TUNING_MAX_ROWS) {
        p->err = "too many rows";
        return -1;
    }
    rc->t->rows[rc->which][rc->t->nrows[rc->which]++] = r;
    return 0;
}

static int parse_rows(parser *p, mpiopt_tuning *t, int which)
{
    rows_ctx rc = {t, which};
    t->nrows[which] = 0;
    return parse_array(p, row_item, &rc);
}

static int top_key(parser *p, const char *key, void *ctx)
{
    mpiopt_tuning *t = ctx;
    if (!strcmp(key, "model"))
        return parse_object(p, model_key, &t->model);
    if (!strcmp(key, "allreduce"))
        return parse_rows(p, t, 0);
    if (!strcmp(key, "reduce"))
        return parse_rows(p, t, 1);
    if (!strcmp(key, "version")) {
        double v;
        if (parse_number(p, &v))
            return -1;
        if (v != 1 && v != 2) {
            p->err = "unsupported version (this library reads versions 1 and 2)";
            return -1;
        }
        return 0;
    }
    return skip_value(p);
}

static int compare_rows(const void *a, const void *b)
{
    const mpiopt_tuning_row *x = a, *y = b;
    if (x->ranks != y->ranks)
        return x->ranks < y->ranks ? -1 : 1;
    return (x->max_bytes > y->max_bytes) - (x->max_bytes < y->max_bytes);
}

int mpiopt_tuning_class(const mpiopt_tuning_row *rows, int n, int p, int *min_ranks,
                        int *max_ranks)
{
    int best = -1;
    long best_distance = 0;
    for (int i = 0; i < n; i++) {
        if (p < rows[i].min_ranks || p > rows[i].max_ranks)
            continue;
        long d = labs((long)rows[i].ranks - p);
        if (best < 0 || d < best_distance ||
            (d == best_distance && rows[i].ranks > rows[best].ranks)) {
            best = i;
            best_distance = d;
        }
    }
    if (best < 0)
        return 0;
    if (min_ranks)
        *min_ranks = rows[best].min_ranks;
    if (max_ranks)
        *max_ranks = rows[best].max_ranks;
    return rows[best].ranks;
}

int mpiopt_tuning_parse(const char *text, const char *name, mpiopt_tuning *t, char *err,
                        int errlen)
{
    mpiopt_tuning parsed = *t;
    parser p = {text, NULL, 0};
    int rc = parse_object(&p, top_key, &parsed);
    if (rc == 0) {
        skip_ws(&p);
        if (*p.s) {
            p.err = "trailing characters";
            rc = -1;
        }
    }
    if (rc) {
        snprintf(err, (size_t)errlen, "%s: %s at byte %ld", name, p.err ? p.err : "syntax error",
                 (long)(p.s - text));
    } else {
        for (int w = 0; w < 2; w++)
            qsort(parsed.rows[w], (size_t)parsed.nrows[w], sizeof(mpiopt_tuning_row),
                  compare_rows);
        *t = parsed;
    }
    return rc;
}

int mpiopt_tuning_read(const char *path, mpiopt_tuning *t, char *err, int errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, (size_t)errlen, "cannot open %s", path);
        return -1;
    }
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len > MAX_FILE_BYTES) {
        fclose(f);
        snprintf(err, (size_t)errlen, "%s: %ld bytes, more than a tuning table can be (%ld)", path,
                 len, MAX_FILE_BYTES);
        return -1;
    }
    char *text = len >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)len + 1) : NULL;
    if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        free(text);
        snprintf(err, (size_t)errlen, "cannot read %s", path);
        return -1;
    }
    fclose(f);
    text[len] = 0;
    int rc = mpiopt_tuning_parse(text, path, t, err, errlen);
    free(text);
    return rc;
}
