/* libzcal 1.1's guard (guard.c beside this file: client/src/guard.c at
 * commit 1d27d83, unchanged), under other names, so that shm_lookup_bench
 * measures the guard before depth classes beside the current one in one
 * run. Compiled against the current header, whose struct zcal_guard keeps
 * 1.1's fields where they were. */
#define zcal_guard_init old_zcal_guard_init
#define zcal_guard_init_key old_zcal_guard_init_key
#define zcal_guard_should_zerocopy old_zcal_guard_should_zerocopy
#define zcal_guard_completed old_zcal_guard_completed
/* libzcal keeps its detail setter to itself; the bench needs no detail. */
#define zcal_internal_set_detail old_guard_set_detail

#include "guard.c"

void old_guard_set_detail(const char *format, ...) { (void)format; }
