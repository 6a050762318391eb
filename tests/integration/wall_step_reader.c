/* A libzcal reader for the wall-clock test: LOOKUPS lookups of the
 * loopback entry, one a millisecond, as a transport with max_age would do
 * (zcal_should_zerocopy falls back when the heartbeat is older than
 * max_age). Prints "lookups N failed F dropped D max_heartbeat_age_ms A":
 * failed lookups, and answers a reader with that max_age would have
 * dropped for its fallback. Run with the shim, it reads the stepped clock.
 * Usage: wall_step_reader SEGMENT LOOKUPS MAX_AGE_MS */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "zcal/zcal.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: wall_step_reader SEGMENT LOOKUPS MAX_AGE_MS\n");
    return 2;
  }
  const long lookups = strtol(argv[2], NULL, 10);
  const uint64_t max_age_ns = strtoull(argv[3], NULL, 10) * UINT64_C(1000000);
  zcal_handle *h = NULL;
  if (zcal_open(argv[1], &h) != 0) {
    fprintf(stderr, "zcal_open %s: %s\n", argv[1], zcal_error_detail());
    return 1;
  }
  struct zcal_key key;
  if (zcal_key_from_string("127.0.0.1", NULL, &key) != 0) return 1;
  long failed = 0, dropped = 0;
  uint64_t max_age = 0;
  const struct timespec pause = {0, 1000000};
  for (long i = 0; i < lookups; ++i) {
    struct zcal_result r;
    if (zcal_lookup(h, &key, ZCAL_METHOD_MSG_ZEROCOPY, &r) != 0) {
      ++failed;
    } else {
      if (r.heartbeat_age_ns > max_age_ns) ++dropped;
      if (r.heartbeat_age_ns > max_age) max_age = r.heartbeat_age_ns;
    }
    nanosleep(&pause, NULL);
  }
  printf("lookups %ld failed %ld dropped %ld max_heartbeat_age_ms %" PRIu64 "\n", lookups,
         failed, dropped, max_age / 1000000);
  zcal_close(h);
  return 0;
}
