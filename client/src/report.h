/* Private to the client library: the report's per-send path, inlined into
 * the guard and the lookups. */
#ifndef ZCAL_CLIENT_REPORT_H
#define ZCAL_CLIENT_REPORT_H

#include <stdint.h>
#include <string.h>

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

static inline unsigned zcal_internal_report_bucket(uint64_t size_bytes) {
  const unsigned b = 63u - (unsigned)__builtin_clzll(size_bytes | 1);
  return b < ZCAL_REPORT_SIZE_BUCKETS ? b : ZCAL_REPORT_SIZE_BUCKETS - 1;
}

/* Slot 0, which several threads share: atomic additions, no seqlock. */
void zcal_internal_report_send_shared(struct zcal_report_cell *c, int yes, unsigned why,
                                      uint64_t size_bytes, unsigned depth);
void zcal_internal_report_completions_shared(struct zcal_report_cell *c, uint64_t completions,
                                             uint64_t copied);

/* The thread's own slot: it alone writes it, so plain loads and stores,
 * no locked instruction. Release stores: each after the seqlock's odd
 * store (zcal.h, struct zcal_report_slot). The loads come first so that
 * they overlap. */
#define ZCAL_REPORT_STORE(word, value) __atomic_store_n((word), (value), __ATOMIC_RELEASE)
#define ZCAL_REPORT_LOAD(word) __atomic_load_n((word), __ATOMIC_RELAXED)

/* The cell of a scope index and a method; UINT16_MAX for none. */
static inline uint16_t zcal_internal_report_cell(unsigned scope, uint8_t method) {
  return scope < ZCAL_REPORT_SCOPES && method < ZCAL_REPORT_METHODS
             ? (uint16_t)(scope * ZCAL_REPORT_METHODS + method)
             : UINT16_MAX;
}

/* One answer counted in `cell` (zcal_internal_report_cell): `why`
 * ZCAL_REPORT_BY_*, `depth` a class index (0..ZCAL_DEPTH_CLASSES-1). */
static inline void zcal_internal_report_send(const struct zcal_report_thread *t,
                                             uint16_t cell, int yes, unsigned why,
                                             uint64_t size_bytes, unsigned depth) {
  if (cell >= ZCAL_REPORT_SCOPES * ZCAL_REPORT_METHODS) return;
  struct zcal_report_slot *s = t->slot;
  struct zcal_report_cell *c = &s->cells[0][0] + cell;
  if (t->shared) {
    zcal_internal_report_send_shared(c, yes, why, size_bytes, depth);
    return;
  }
  uint64_t *answer = &c->answers[depth][yes][why], *bytes = &c->bytes[yes];
  uint64_t *size = &c->sizes[zcal_internal_report_bucket(size_bytes)];
  const uint64_t seq = ZCAL_REPORT_LOAD(&s->seq);
  const uint64_t n_answer = ZCAL_REPORT_LOAD(answer), n_bytes = ZCAL_REPORT_LOAD(bytes);
  const uint64_t n_size = ZCAL_REPORT_LOAD(size);
  __atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELAXED);
  ZCAL_REPORT_STORE(answer, n_answer + 1);
  ZCAL_REPORT_STORE(bytes, n_bytes + size_bytes);
  ZCAL_REPORT_STORE(size, n_size + 1);
  ZCAL_REPORT_STORE(&s->seq, seq + 2);
}

static inline void zcal_internal_report_completions(const struct zcal_report_thread *t,
                                                    uint16_t cell, uint64_t completions,
                                                    uint64_t copied) {
  if (cell >= ZCAL_REPORT_SCOPES * ZCAL_REPORT_METHODS) return;
  struct zcal_report_slot *s = t->slot;
  struct zcal_report_cell *c = &s->cells[0][0] + cell;
  if (t->shared) {
    zcal_internal_report_completions_shared(c, completions, copied);
    return;
  }
  const uint64_t seq = ZCAL_REPORT_LOAD(&s->seq);
  const uint64_t n = ZCAL_REPORT_LOAD(&c->completions), n_copied = ZCAL_REPORT_LOAD(&c->copied);
  __atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELAXED);
  ZCAL_REPORT_STORE(&c->completions, n + completions);
  ZCAL_REPORT_STORE(&c->copied, n_copied + copied);
  ZCAL_REPORT_STORE(&s->seq, seq + 2);
}

/* Whether a key names a loopback destination (127.0.0.0/8, ::1, or the
 * interface lo): the lookup's rule for the loopback entry. */
static inline int zcal_internal_is_loopback(const struct zcal_key *key) {
  if (key->family == ZCAL_FAMILY_IPV4) return key->address[0] == 127;
  if (key->family == ZCAL_FAMILY_IPV6) {
    static const uint8_t kLoopback6[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                           0, 0, 0, 0, 0, 0, 0, 1};
    return memcmp(key->address, kLoopback6, 16) == 0;
  }
  return strcmp(key->interface, "lo") == 0;
}

/* The report's scope index of a lookup's answer for `key`. A loopback
 * destination counts as loopback whichever entry answered it (without a
 * loopback entry the host default does): its sends never cross a NIC, so
 * the kernel's copies there say nothing of the scope that answered, and
 * must not make the agent doubt it (docs/shm-abi.md, "Cell"). */
static inline unsigned zcal_internal_report_scope(const struct zcal_key *key, uint8_t scope) {
  if (zcal_internal_is_loopback(key)) return ZCAL_SCOPE_LOOPBACK;
  return scope < ZCAL_REPORT_SCOPE_NONE ? scope : ZCAL_REPORT_SCOPE_NONE;
}

#ifdef __cplusplus
}
#endif

#endif /* ZCAL_CLIENT_REPORT_H */
