/* The counting build's point-to-point half (CMake -DMPIOPT_COUNT_LINES=ON; src/coll/node/
 * line_count.h says what is counted and why, and includes this header, so MPIOPT_COUNT_MESSAGE
 * is one of its macros). It lives here, not in line_count.h, because p2p.c, which receives every
 * message of the algorithms, is in src/coll/engine, a layer below src/coll/node that must not
 * include its headers (tests/python/test_layers.py): the counters stay in line_count.c, which
 * registers its function here while a counted call runs (the layers' callback rule), and the
 * engine only calls it. In the normal build the macro is nothing. Internal to src/coll. */
#ifndef MPIOPT_COLL_ENGINE_MESSAGE_COUNT_H
#define MPIOPT_COLL_ENGINE_MESSAGE_COUNT_H

#include <stddef.h>

#ifdef MPIOPT_COUNT_LINES
/* Set by line_count.c from a counted call's begin to its end, NULL otherwise: a receive outside
 * a counted call (a gather, a nonblocking call's schedule) costs one test. Defined in p2p.c. */
extern void (*mpiopt_count_message_hook)(int peer, size_t bytes);
/* This rank receives a message of `bytes` from `peer`, a rank of the call's communicator */
#define MPIOPT_COUNT_MESSAGE(peer, bytes) \
    (mpiopt_count_message_hook ? mpiopt_count_message_hook((peer), (bytes)) : (void)0)
#else
#define MPIOPT_COUNT_MESSAGE(peer, bytes) ((void)0)
#endif

#endif
