/* Private to the client library: the report's per-send path, inlined into
 * the guard and the lookups. */
#ifndef ZCAL_CLIENT_REPORT_H
#define ZCAL_CLIENT_REPORT_H

#include <stdint.h>

#include "zcal/zcal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The calling thread's part of the open report: valid while `epoch` is
 * the current one. A thread that has a slot of its own counts into
 * `counts`, private memory of the same layout as its slot's cells, and
 * copies the cells it changed into the slot under one seqlock write every
 * ZCAL_REPORT_PUBLISH_CALLS counted calls, and at zcal_report_flush, its
 * exit, zcal_report_close and process exit (report.c). A counted call then
 * costs three additions in memory only this thread touches, instead of
 * three loads and stores between two seqlock stores in shared memory.
 * `counts` is NULL for a thread that shares slot 0. */
struct zcal_report_thread {
  uint64_t epoch;
  struct zcal_report_slot *slot;
  struct zcal_report_cell *counts;
  uint64_t dirty;        /* bit c: cell c changed since the last publish */
  uint32_t until_publish; /* counted calls left before the next publish */
  uint16_t last_cell;    /* the cell last marked in dirty; UINT16_MAX: none */
  uint16_t pad;
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
struct zcal_report_thread *zcal_internal_report_claim(uint64_t epoch);
/* Reads ZCAL_REPORT once per process. */
void zcal_internal_report_env(void);

/* NULL while reporting is off: one load and a branch per send. */
static inline struct zcal_report_thread *zcal_internal_report_thread(void) {
  /* Acquire: the object was filled before the epoch was published. */
  const uint64_t epoch = __atomic_load_n(&zcal_internal_report_epoch, __ATOMIC_ACQUIRE);
  if (epoch == 0) return NULL;
  if (zcal_internal_report_tls.epoch != epoch) return zcal_internal_report_claim(epoch);
  return &zcal_internal_report_tls;
}

static inline unsigned zcal_internal_report_bucket(uint64_t size_bytes) {
  const unsigned b = 63u - (unsigned)__builtin_clzll(size_bytes | 1);
  return b < ZCAL_REPORT_SIZE_BUCKETS ? b : ZCAL_REPORT_SIZE_BUCKETS - 1;
}

#define ZCAL_REPORT_CELLS (ZCAL_REPORT_SCOPES * ZCAL_REPORT_METHODS)

/* Slot 0, which several threads share: atomic additions, no seqlock. */
void zcal_internal_report_send_shared(struct zcal_report_thread *t, uint16_t cell, int yes,
                                      unsigned why, uint64_t size_bytes, unsigned depth);
void zcal_internal_report_completions_shared(struct zcal_report_thread *t, uint16_t cell,
                                             uint64_t completions, uint64_t copied);
/* Marks `cell` changed (t->dirty), out of line: a thread changes cell
 * rarely. */
void zcal_internal_report_mark(struct zcal_report_thread *t, uint16_t cell);
/* Copies the changed cells of t->counts into t->slot under one seqlock
 * write, if t's report is still the open one; restarts the countdown. */
void zcal_internal_report_publish(struct zcal_report_thread *t);

/* The cell of a scope index and a method; UINT16_MAX for none. */
static inline uint16_t zcal_internal_report_cell(unsigned scope, uint8_t method) {
  return scope < ZCAL_REPORT_SCOPES && method < ZCAL_REPORT_METHODS
             ? (uint16_t)(scope * ZCAL_REPORT_METHODS + method)
             : UINT16_MAX;
}

static inline void zcal_internal_report_counted(struct zcal_report_thread *t, uint16_t cell) {
  if (t->last_cell != cell) zcal_internal_report_mark(t, cell);
  if (--t->until_publish == 0) zcal_internal_report_publish(t);
}

/* One answer counted in `cell` (zcal_internal_report_cell): `why`
 * ZCAL_REPORT_BY_*, `depth` a class index (0..ZCAL_DEPTH_CLASSES-1). */
static inline void zcal_internal_report_send(struct zcal_report_thread *t, uint16_t cell,
                                             int yes, unsigned why, uint64_t size_bytes,
                                             unsigned depth) {
  if (cell >= ZCAL_REPORT_CELLS) return;
  struct zcal_report_cell *c = t->counts;
  if (__builtin_expect(c == NULL, 0)) {
    zcal_internal_report_send_shared(t, cell, yes, why, size_bytes, depth);
    return;
  }
  c += cell;
  c->answers[depth][yes][why]++;
  c->bytes[yes] += size_bytes;
  c->sizes[zcal_internal_report_bucket(size_bytes)]++;
  zcal_internal_report_counted(t, cell);
}

static inline void zcal_internal_report_completions(struct zcal_report_thread *t,
                                                    uint16_t cell, uint64_t completions,
                                                    uint64_t copied) {
  if (cell >= ZCAL_REPORT_CELLS) return;
  struct zcal_report_cell *c = t->counts;
  if (__builtin_expect(c == NULL, 0)) {
    zcal_internal_report_completions_shared(t, cell, completions, copied);
    return;
  }
  c += cell;
  c->completions += completions;
  c->copied += copied;
  zcal_internal_report_counted(t, cell);
}

/* The report's scope index of a lookup's answer. */
static inline unsigned zcal_internal_report_scope(uint8_t scope) {
  return scope < ZCAL_REPORT_SCOPE_NONE ? scope : ZCAL_REPORT_SCOPE_NONE;
}

#ifdef __cplusplus
}
#endif

#endif /* ZCAL_CLIENT_REPORT_H */
