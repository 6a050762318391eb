/* The per-connection guard: the threshold's answer, turned off for a
 * connection whose zerocopy sends the kernel reports as copied. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "handle.h"
#include "report.h"

/* Caches the answer for the current generation, as zcal.hpp's
 * CachedDecision does. A failed lookup (no entry, writer busy, segment
 * shrunk) is kept until the next publish or ZCAL_GUARD_LOOKUP_RETRY_SENDS
 * sends, so that sends do not repeat it one by one. */
static int usable(const struct zcal_guard *g, int rc, const struct zcal_result *r) {
  return rc == 0 && (g->max_age_ns == 0 || r->heartbeat_age_ns <= g->max_age_ns);
}

static int gives_answer(int have, const struct zcal_result *r) {
  return have && (r->verdict == ZCAL_VERDICT_THRESHOLD ||
                  r->verdict == ZCAL_VERDICT_ALWAYS || r->verdict == ZCAL_VERDICT_NEVER);
}

/* The size from which a class answers 1, so that a send compares once;
 * the class's bit in class_no_answer when the fallback answers instead. */
static uint64_t from_bytes(struct zcal_guard *g, int k, int have,
                           const struct zcal_result *r) {
  if (gives_answer(have, r)) {
    /* A contradicted entry answers 0 where it would answer 1, per send:
     * those are counted as the guard's own (ZCAL_REPORT_BY_GUARD_OFF). */
    if (!r->contradicted) return r->zerocopy_from_bytes;
    g->class_contradicted |= (uint8_t)(1u << k);
    return zcal_internal_verdict_from_bytes(r);
  }
  g->class_no_answer |= (uint8_t)(1u << k);
  return g->fallback ? 0 : UINT64_MAX;
}

static void look_up(struct zcal_guard *g) {
  struct zcal_result r;
  const int rc = zcal_lookup(g->handle, &g->key, g->method, &r);
  g->have_result = usable(g, rc, &r);
  g->class_no_answer = 0;
  g->class_contradicted = 0;
  g->class_from_bytes[ZCAL_CLASS_STREAM] =
      from_bytes(g, ZCAL_CLASS_STREAM, g->have_result, &r);
  g->class_fallbacks = 0;
  for (int k = 0; k < ZCAL_CLASS_STREAM; ++k) {
    struct zcal_result c;
    const int have = usable(
        g, zcal_lookup_depth(g->handle, &g->key, g->method,
                             zcal_internal_class_codes[k], &c),
        &c);
    g->class_from_bytes[k] = from_bytes(g, k, have, &c);
    if (have && c.depth_fallback) g->class_fallbacks |= (uint8_t)(1u << k);
  }
  g->report_cell = zcal_internal_report_cell(
      g->have_result ? zcal_internal_report_scope(&g->key, r.scope) : ZCAL_REPORT_SCOPE_NONE, g->method);
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
  zcal_internal_report_env();
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
  const uint64_t without = g->fallback ? 0 : UINT64_MAX;
  for (int k = 0; k < ZCAL_DEPTH_CLASSES; ++k) g->class_from_bytes[k] = without;
  g->class_no_answer = (uint8_t)((1u << ZCAL_DEPTH_CLASSES) - 1);
  g->report_cell = zcal_internal_report_cell(ZCAL_REPORT_SCOPE_NONE, method);
  g->depth_class = ZCAL_DEPTH_1;
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
  const int k = zcal_internal_class_of_depth(g->in_flight + g->unreported + 1);
  g->depth_class = zcal_internal_class_codes[k];
  int yes = size_bytes >= g->class_from_bytes[k];
  int held_off = 0;
  if (yes && (g->state == ZCAL_GUARD_OFF || (g->class_contradicted >> k & 1u))) {
    if (g->class_contradicted >> k & 1u) {
      /* Until the agent clears the flag: not a probe, no retry count. */
      yes = 0;
      held_off = 1;
    } else if (g->sends_until_retry > 0) {
      g->sends_until_retry--;
      yes = 0;
      held_off = 1;
    } else {
      g->state = ZCAL_GUARD_PROBING;
    }
  }
  g->in_flight += (uint64_t)yes;
  g->unreported += (uint32_t)(!yes && g->unreported < ZCAL_DEPTH_STREAM_FROM);
  const uint64_t epoch = zcal_internal_report_on();
  if (epoch) {
    _Static_assert(ZCAL_REPORT_BY_NO_ANSWER == 2 && ZCAL_REPORT_BY_THRESHOLD == 0,
                   "a class's bit, doubled, is its reason");
    const unsigned why = held_off ? ZCAL_REPORT_BY_GUARD_OFF
                                    : (g->class_no_answer >> k & 1u) << 1;
    zcal_internal_report_send(epoch, g->report_cell, yes, why, size_bytes, (unsigned)k);
  }
  return yes;
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
  const uint64_t epoch = zcal_internal_report_on();
  if (epoch) zcal_internal_report_completions(epoch, g->report_cell, completions, copied);
  /* Completions of sends made without asking (or before a re-init) must
   * not take the depth below zero. */
  g->in_flight = completions < g->in_flight ? g->in_flight - completions : 0;
  /* Only a connection that drained waited for its sends; one that keeps
   * sends in flight while completions come in is the stream it looked
   * like, and keeps its copied sends counted. */
  if (completions > 0 && g->in_flight == 0) g->unreported = 0;
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
