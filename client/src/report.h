/* Private to the client library: the report's per-send path, inlined into
 * the guard and the lookups. */
#ifndef ZCAL_CLIENT_REPORT_H
#define ZCAL_CLIENT_REPORT_H

#include <stdint.h>

#include "zcal/zcal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The calling thread's slot in the open report: valid while `epoch` is
 * the current one. */
struct zcal_report_thread {
  uint64_t epoch;
  struct zcal_report_slot *slot;
  int shared;
};

/* 0 while no report is open; each zcal_report_open takes a new value, so
 * that a thread's slot of an earlier report is never written again. */
extern uint64_t zcal_internal_report_epoch;
/* initial-exec: one load from the thread pointer, instead of a call to
 * __tls_get_addr per send. */
extern __thread struct zcal_report_thread zcal_internal_report_tls
    __attribute__((tls_model("initial-exec")));

/* Takes a slot for the calling thread; NULL if the report of `epoch` was
 * closed meanwhile. */
const struct zcal_report_thread *zcal_internal_report_claim(uint64_t epoch);
/* Reads ZCAL_REPORT once per process. */
void zcal_internal_report_env(void);

/* NULL while reporting is off: one load and a branch per send. */
static inline const struct zcal_report_thread *zcal_internal_report_thread(void) {
  /* Acquire: the object was filled before the epoch was published. */
  const uint64_t epoch = __atomic_load_n(&zcal_internal_report_epoch, __ATOMIC_ACQUIRE);
  if (epoch == 0) return NULL;
  if (zcal_internal_report_tls.epoch != epoch) return zcal_internal_report_claim(epoch);
  return &zcal_internal_report_tls;
}

static inline void zcal_internal_report_add(const struct zcal_report_thread *t,
                                            uint64_t *word, uint64_t n) {
  if (t->shared)
    __atomic_fetch_add(word, n, __ATOMIC_RELAXED);
  else /* Release: after the seqlock's odd store (see zcal_report_slot). */
    __atomic_store_n(word, __atomic_load_n(word, __ATOMIC_RELAXED) + n, __ATOMIC_RELEASE);
}

static inline uint64_t zcal_internal_report_begin(const struct zcal_report_thread *t) {
  if (t->shared) return 0;
  const uint64_t seq = __atomic_load_n(&t->slot->seq, __ATOMIC_RELAXED);
  __atomic_store_n(&t->slot->seq, seq + 1, __ATOMIC_RELAXED);
  return seq;
}

static inline void zcal_internal_report_end(const struct zcal_report_thread *t,
                                            uint64_t seq) {
  if (!t->shared) __atomic_store_n(&t->slot->seq, seq + 2, __ATOMIC_RELEASE);
}

static inline unsigned zcal_internal_report_bucket(uint64_t size_bytes) {
  const unsigned b = size_bytes > 1 ? 63u - (unsigned)__builtin_clzll(size_bytes) : 0u;
  return b < ZCAL_REPORT_SIZE_BUCKETS ? b : ZCAL_REPORT_SIZE_BUCKETS - 1;
}

/* One answer: `scope` a ZCAL_REPORT scope index, `why` ZCAL_REPORT_BY_*,
 * `depth` a class index (0..ZCAL_DEPTH_CLASSES-1). */
static inline void zcal_internal_report_send(const struct zcal_report_thread *t,
                                             unsigned scope, uint8_t method, int yes,
                                             unsigned why, uint64_t size_bytes,
                                             unsigned depth) {
  if (scope >= ZCAL_REPORT_SCOPES || method >= ZCAL_REPORT_METHODS) return;
  struct zcal_report_cell *c = &t->slot->cells[scope][method];
  const uint64_t seq = zcal_internal_report_begin(t);
  zcal_internal_report_add(t, &c->answers[yes][why], 1);
  zcal_internal_report_add(t, &c->bytes[yes], size_bytes);
  zcal_internal_report_add(t, &c->depth[depth], 1);
  zcal_internal_report_add(t, &c->sizes[zcal_internal_report_bucket(size_bytes)], 1);
  zcal_internal_report_end(t, seq);
}

static inline void zcal_internal_report_completions(const struct zcal_report_thread *t,
                                                    unsigned scope, uint8_t method,
                                                    uint64_t completions,
                                                    uint64_t copied) {
  if (scope >= ZCAL_REPORT_SCOPES || method >= ZCAL_REPORT_METHODS) return;
  struct zcal_report_cell *c = &t->slot->cells[scope][method];
  const uint64_t seq = zcal_internal_report_begin(t);
  zcal_internal_report_add(t, &c->completions, completions);
  zcal_internal_report_add(t, &c->copied, copied);
  zcal_internal_report_end(t, seq);
}

/* The report's scope index of a lookup's answer. */
static inline unsigned zcal_internal_report_scope(uint8_t scope) {
  return scope < ZCAL_REPORT_SCOPE_NONE ? scope : ZCAL_REPORT_SCOPE_NONE;
}

#ifdef __cplusplus
}
#endif

#endif /* ZCAL_CLIENT_REPORT_H */
