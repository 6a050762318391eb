/* The per-connection guard: the threshold's answer, turned off for a
 * connection whose zerocopy sends the kernel reports as copied. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "handle.h"

/* Caches the answer for the current generation, as zcal.hpp's
 * CachedDecision does. A failed lookup (no entry, writer busy, segment
 * shrunk) is kept until the next publish or ZCAL_GUARD_LOOKUP_RETRY_SENDS
 * sends, so that sends do not repeat it one by one. */
static void look_up(struct zcal_guard *g) {
  struct zcal_result r;
  const int rc = zcal_lookup(g->handle, &g->key, g->method, &r);
  g->have_result =
      rc == 0 && (g->max_age_ns == 0 || r.heartbeat_age_ns <= g->max_age_ns);
  if (g->have_result) {
    g->result = r;
    g->generation = r.generation;
    g->sends_until_lookup = 0;
  } else {
    g->generation = zcal_generation(g->handle);
    g->sends_until_lookup = ZCAL_GUARD_LOOKUP_RETRY_SENDS;
  }
}

int zcal_guard_init_key(struct zcal_guard *g, size_t guard_size,
                        zcal_handle *handle, const struct zcal_key *key,
                        uint8_t method, int fallback, uint64_t max_age_ns) {
  if (!g || !key || guard_size < sizeof *g) return -EINVAL;
  /* All of the caller's struct: a newer header's fields start at zero. */
  memset(g, 0, guard_size);
  g->size = (uint32_t)sizeof *g;
  g->method = method;
  g->fallback = fallback != 0;
  g->state = ZCAL_GUARD_ON;
  g->max_age_ns = max_age_ns;
  g->retry_sends = ZCAL_GUARD_RETRY_SENDS;
  g->handle = handle;
  g->key = *key;
  if (handle) look_up(g);
  return 0;
}

int zcal_guard_init(struct zcal_guard *g, size_t guard_size,
                    zcal_handle *handle, int fd, uint8_t method, int fallback,
                    uint64_t max_age_ns) {
  if (!g || guard_size < sizeof *g) return -EINVAL;
  struct sockaddr_storage peer;
  socklen_t len = sizeof peer;
  if (getpeername(fd, (struct sockaddr *)&peer, &len) != 0) {
    const int err = errno;
    zcal_internal_set_detail("guard: getpeername(%d) failed: %s", fd,
                             strerror(err));
    return -err;
  }
  struct zcal_key key;
  const int rc = zcal_key_from_sockaddr((const struct sockaddr *)&peer, len, &key);
  if (rc != 0) {
    zcal_internal_set_detail("guard: socket %d is not an IPv4 or IPv6 socket",
                             fd);
    return rc;
  }
  return zcal_guard_init_key(g, guard_size, handle, &key, method, fallback,
                             max_age_ns);
}

int zcal_guard_should_zerocopy(struct zcal_guard *g, uint64_t size_bytes) {
  if (!g) return 0;
  if (g->handle) {
    if (ZCAL_LOAD_ACQ(g->handle->generation_word) != g->generation)
      look_up(g);
    else if (!g->have_result && --g->sends_until_lookup == 0)
      look_up(g);
  }
  const int yes = g->have_result
                      ? zcal_result_should_zerocopy(&g->result, size_bytes,
                                                    g->fallback)
                      : g->fallback;
  if (!yes || g->state != ZCAL_GUARD_OFF) return yes;
  if (g->sends_until_retry > 0) {
    g->sends_until_retry--;
    return 0;
  }
  g->state = ZCAL_GUARD_PROBING;
  return 1;
}

static void turn_off(struct zcal_guard *g) {
  g->state = ZCAL_GUARD_OFF;
  g->sends_until_retry = g->retry_sends;
  g->turned_off++;
}

int zcal_guard_completed(struct zcal_guard *g, uint64_t completions,
                         uint64_t copied) {
  if (!g || copied > completions) return -EINVAL;
  g->completions += completions;
  g->copied += copied;
  if (copied > 0) {
    if (g->state == ZCAL_GUARD_PROBING) {
      g->retry_sends = g->retry_sends >= ZCAL_GUARD_RETRY_SENDS_MAX / 2
                           ? ZCAL_GUARD_RETRY_SENDS_MAX
                           : 2 * g->retry_sends;
      turn_off(g);
    } else if (g->state == ZCAL_GUARD_ON) {
      turn_off(g);
    }
  } else if (completions > 0 && g->state == ZCAL_GUARD_PROBING) {
    g->state = ZCAL_GUARD_ON;
    g->retry_sends = ZCAL_GUARD_RETRY_SENDS;
  }
  return 0;
}
