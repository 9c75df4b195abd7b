/* mpiopt-otf2-chrome ARCHIVE/traces.otf2 OUT.json: an OTF2 archive (as libmpiopt-profile
 * writes it with --trace) in Chrome's trace-event format, which Perfetto (ui.perfetto.dev) and
 * chrome://tracing open: one process a location group (an MPI rank: "rank N"), one thread a
 * location, a B/E pair a region entered and left (MPI calls, user regions), the event's
 * attributes (bytes, peer, communicator) as its args. Read with the OTF2 reader API, events in
 * time order (the global event reader), so every track's times are monotone.
 *
 * Used by `mpiopt report --chrome-trace`; exit status 2 and a message on a bad archive. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <otf2/otf2.h>

#define MAX_DEFS (1 << 20)

struct defs {
    char **strings;                 /* by string ref */
    uint32_t nstrings;
    uint32_t *region_name;          /* region ref -> string ref */
    uint32_t *region_paradigm;
    uint32_t nregions;
    uint64_t *location_group;       /* location ref -> group (rank) */
    uint32_t *group_name;           /* group ref -> string ref */
    uint32_t ngroups;
    uint64_t nlocations;
    uint64_t locations[MAX_DEFS / 16];
    uint64_t resolution;
    uint32_t attr_name[16];         /* attribute ref -> string ref */
    uint32_t nattrs;
    FILE *out;
    uint64_t events;
    int first;
};

static const char *string_of(const struct defs *d, uint32_t ref)
{
    return ref < d->nstrings && d->strings[ref] ? d->strings[ref] : "?";
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static OTF2_CallbackCode on_string(void *u, OTF2_StringRef self, const char *s)
{
    struct defs *d = u;
    if (self >= MAX_DEFS)
        return OTF2_CALLBACK_SUCCESS;
    if (self >= d->nstrings) {
        d->strings = realloc(d->strings, (self + 1) * sizeof *d->strings);
        memset(d->strings + d->nstrings, 0, (self + 1 - d->nstrings) * sizeof *d->strings);
        d->nstrings = self + 1;
    }
    d->strings[self] = strdup(s);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_region(void *u, OTF2_RegionRef self, OTF2_StringRef name,
                                   OTF2_StringRef canonical, OTF2_StringRef description,
                                   OTF2_RegionRole role, OTF2_Paradigm paradigm,
                                   OTF2_RegionFlag flags, OTF2_StringRef file, uint32_t begin,
                                   uint32_t end)
{
    struct defs *d = u;
    if (self >= MAX_DEFS)
        return OTF2_CALLBACK_SUCCESS;
    if (self >= d->nregions) {
        d->region_name = realloc(d->region_name, (self + 1) * sizeof *d->region_name);
        d->region_paradigm = realloc(d->region_paradigm, (self + 1) * sizeof *d->region_paradigm);
        d->nregions = self + 1;
    }
    d->region_name[self] = name;
    d->region_paradigm[self] = paradigm;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_group(void *u, OTF2_LocationGroupRef self, OTF2_StringRef name,
                                  OTF2_LocationGroupType type, OTF2_SystemTreeNodeRef parent,
                                  OTF2_LocationGroupRef creator)
{
    struct defs *d = u;
    if (self >= MAX_DEFS)
        return OTF2_CALLBACK_SUCCESS;
    if (self >= d->ngroups) {
        d->group_name = realloc(d->group_name, (self + 1) * sizeof *d->group_name);
        d->ngroups = self + 1;
    }
    d->group_name[self] = name;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_location(void *u, OTF2_LocationRef self, OTF2_StringRef name,
                                     OTF2_LocationType type, uint64_t events,
                                     OTF2_LocationGroupRef group)
{
    struct defs *d = u;
    if (d->nlocations >= sizeof d->locations / sizeof *d->locations)
        return OTF2_CALLBACK_INTERRUPT;
    d->locations[d->nlocations] = self;
    d->location_group = realloc(d->location_group, (d->nlocations + 1) * 2 * sizeof(uint64_t));
    d->location_group[2 * d->nlocations] = self;
    d->location_group[2 * d->nlocations + 1] = group;
    d->nlocations++;
    /* the track's names */
    fprintf(d->out, "%s\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %" PRIu64
            ", \"args\": {\"name\": ", d->first ? "" : ",", (uint64_t)group);
    json_string(d->out, group < d->ngroups ? string_of(d, d->group_name[group]) : "?");
    fprintf(d->out, "}},\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %" PRIu64
            ", \"tid\": %" PRIu64 ", \"args\": {\"name\": ", (uint64_t)group, (uint64_t)self);
    json_string(d->out, string_of(d, name));
    fprintf(d->out, "}}");
    d->first = 0;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_clock(void *u, uint64_t resolution, uint64_t offset, uint64_t length,
                                  uint64_t realtime)
{
    ((struct defs *)u)->resolution = resolution;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_attribute(void *u, OTF2_AttributeRef self, OTF2_StringRef name,
                                      OTF2_StringRef description, OTF2_Type type)
{
    struct defs *d = u;
    if (self < 16) {
        d->attr_name[self] = name;
        if (self >= d->nattrs)
            d->nattrs = self + 1;
    }
    return OTF2_CALLBACK_SUCCESS;
}

static uint64_t group_of(const struct defs *d, OTF2_LocationRef loc)
{
    for (uint64_t i = 0; i < d->nlocations; i++)
        if (d->location_group[2 * i] == loc)
            return d->location_group[2 * i + 1];
    return 0;
}

static void event(struct defs *d, OTF2_LocationRef loc, OTF2_TimeStamp t,
                  OTF2_AttributeList *attrs, OTF2_RegionRef region, char ph)
{
    FILE *f = d->out;
    double us = (double)t * 1e6 / (double)(d->resolution ? d->resolution : 1000000000);
    fprintf(f, ",\n{\"name\": ");
    json_string(f, region < d->nregions ? string_of(d, d->region_name[region]) : "?");
    fprintf(f, ", \"cat\": \"%s\", \"ph\": \"%c\", \"ts\": %.3f, \"pid\": %" PRIu64
            ", \"tid\": %" PRIu64, region < d->nregions && d->region_paradigm[region] == OTF2_PARADIGM_MPI
            ? "mpi" : "region", ph, us, group_of(d, loc), (uint64_t)loc);
    uint32_t n = attrs ? OTF2_AttributeList_GetNumberOfElements(attrs) : 0;
    if (n) {
        fprintf(f, ", \"args\": {");
        for (uint32_t i = 0; i < n; i++) {
            OTF2_AttributeRef ref;
            OTF2_Type type;
            OTF2_AttributeValue v;
            if (OTF2_AttributeList_GetAttributeByIndex(attrs, i, &ref, &type, &v) != OTF2_SUCCESS)
                continue;
            fprintf(f, "%s", i ? ", " : "");
            json_string(f, ref < d->nattrs ? string_of(d, d->attr_name[ref]) : "?");
            if (type == OTF2_TYPE_UINT64)
                fprintf(f, ": %" PRIu64, v.uint64);
            else if (type == OTF2_TYPE_INT32)
                fprintf(f, ": %" PRId32, v.int32);
            else
                fprintf(f, ": null");
        }
        fprintf(f, "}");
    }
    fprintf(f, "}");
    d->events++;
}

static OTF2_CallbackCode on_enter(OTF2_LocationRef loc, OTF2_TimeStamp t, void *u,
                                  OTF2_AttributeList *attrs, OTF2_RegionRef region)
{
    event(u, loc, t, attrs, region, 'B');
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_leave(OTF2_LocationRef loc, OTF2_TimeStamp t, void *u,
                                  OTF2_AttributeList *attrs, OTF2_RegionRef region)
{
    event(u, loc, t, NULL, region, 'E');
    return OTF2_CALLBACK_SUCCESS;
}

int main(int argc, char **argv)
{
    if (argc != 3 || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: %s ARCHIVE/traces.otf2 OUT.json\n"
                "  an OTF2 trace in Chrome's trace-event JSON (Perfetto, chrome://tracing)\n",
                argv[0]);
        return argc == 2 ? 0 : 2;
    }
    FILE *probe = fopen(argv[1], "r");
    if (!probe) {
        fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
        return 2;
    }
    fclose(probe);
    OTF2_Reader *r = OTF2_Reader_Open(argv[1]);
    if (!r || OTF2_Reader_SetSerialCollectiveCallbacks(r) != OTF2_SUCCESS) {
        fprintf(stderr, "%s: %s is not an OTF2 archive\n", argv[0], argv[1]);
        return 2;
    }
    /* written under a temporary name, renamed when complete */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
    static struct defs d;
    d.out = fopen(tmp, "w");
    if (!d.out) {
        fprintf(stderr, "%s: cannot write %s\n", argv[0], tmp);
        return 2;
    }
    d.first = 1;
    fprintf(d.out, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"source\": ");
    json_string(d.out, argv[1]);
    fprintf(d.out, "}, \"traceEvents\": [");

    OTF2_GlobalDefReader *gdr = OTF2_Reader_GetGlobalDefReader(r);
    OTF2_GlobalDefReaderCallbacks *gcb = OTF2_GlobalDefReaderCallbacks_New();
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(gcb, on_string);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(gcb, on_region);
    OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(gcb, on_group);
    OTF2_GlobalDefReaderCallbacks_SetLocationCallback(gcb, on_location);
    OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(gcb, on_clock);
    OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(gcb, on_attribute);
    uint64_t n = 0;
    if (!gdr || OTF2_Reader_RegisterGlobalDefCallbacks(r, gdr, gcb, &d) != OTF2_SUCCESS ||
        OTF2_Reader_ReadAllGlobalDefinitions(r, gdr, &n) != OTF2_SUCCESS) {
        fprintf(stderr, "%s: cannot read the definitions of %s\n", argv[0], argv[1]);
        fclose(d.out);
        remove(tmp);
        return 2;
    }
    OTF2_GlobalDefReaderCallbacks_Delete(gcb);
    OTF2_Reader_CloseGlobalDefReader(r, gdr);
    if (d.first) {  /* no location: the JSON array must not start with a comma */
        fprintf(d.out, "\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"name\": \"empty\"}}");
    }
    for (uint64_t i = 0; i < d.nlocations; i++)
        OTF2_Reader_SelectLocation(r, d.locations[i]);
    int defs_open = OTF2_Reader_OpenDefFiles(r) == OTF2_SUCCESS;
    OTF2_Reader_OpenEvtFiles(r);
    for (uint64_t i = 0; i < d.nlocations; i++) {
        if (defs_open) {
            OTF2_DefReader *dr = OTF2_Reader_GetDefReader(r, d.locations[i]);
            if (dr) {
                uint64_t k;
                OTF2_Reader_ReadAllLocalDefinitions(r, dr, &k);
                OTF2_Reader_CloseDefReader(r, dr);
            }
        }
        OTF2_Reader_GetEvtReader(r, d.locations[i]);
    }
    if (defs_open)
        OTF2_Reader_CloseDefFiles(r);
    OTF2_GlobalEvtReader *ger = OTF2_Reader_GetGlobalEvtReader(r);
    OTF2_GlobalEvtReaderCallbacks *ecb = OTF2_GlobalEvtReaderCallbacks_New();
    OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(ecb, on_enter);
    OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(ecb, on_leave);
    int ok = ger && OTF2_Reader_RegisterGlobalEvtCallbacks(r, ger, ecb, &d) == OTF2_SUCCESS &&
             OTF2_Reader_ReadAllGlobalEvents(r, ger, &n) == OTF2_SUCCESS;
    OTF2_GlobalEvtReaderCallbacks_Delete(ecb);
    if (ger)
        OTF2_Reader_CloseGlobalEvtReader(r, ger);
    OTF2_Reader_CloseEvtFiles(r);
    OTF2_Reader_Close(r);
    fprintf(d.out, "\n]}\n");
    ok &= !ferror(d.out);
    ok &= fclose(d.out) == 0;
    if (!ok || rename(tmp, argv[2]) != 0) {
        fprintf(stderr, "%s: cannot read the events of %s (or write %s)\n", argv[0], argv[1], argv[2]);
        remove(tmp);
        return 2;
    }
    printf("%" PRIu64 " events of %" PRIu64 " locations written to %s\n", d.events, d.nlocations,
           argv[2]);
    return 0;
}
