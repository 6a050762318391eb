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

/* The calling thread's slot in the open report. `epoch` is the report's
 * epoch while `slot` is the thread's own, that epoch with
 * ZCAL_REPORT_EPOCH_SHARED while the thread shares slot 0 (beyond 63
 * threads at once), anything else when it has none in this report: the
 * per-send test is one compare, and a thread that shares slot 0 takes
 * the out-of-line path, whose additions are atomic. */
struct zcal_report_thread {
  uint64_t epoch;
  struct zcal_report_slot *slot;
};
#define ZCAL_REPORT_EPOCH_SHARED (UINT64_C(1) << 63)

/* 0 while no report is open; each zcal_report_open takes a new value
 * (never with ZCAL_REPORT_EPOCH_SHARED), so that a thread's slot of an
 * earlier report is never written again. */
extern uint64_t zcal_internal_report_epoch;
/* initial-exec: one load from the thread pointer, instead of a call to
 * __tls_get_addr per send. */
extern __thread struct zcal_report_thread zcal_internal_report_tls
    __attribute__((tls_model("initial-exec")));

/* Reads ZCAL_REPORT once per process. */
void zcal_internal_report_env(void);

/* The open report's epoch, 0 while reporting is off: one load and a
 * branch per send when off. Acquire: the object was filled before the
 * epoch was published. */
static inline uint64_t zcal_internal_report_on(void) {
  return __atomic_load_n(&zcal_internal_report_epoch, __ATOMIC_ACQUIRE);
}

static inline unsigned zcal_internal_report_bucket(uint64_t size_bytes) {
  const unsigned b = 63u - (unsigned)__builtin_clzll(size_bytes | 1);
  return b < ZCAL_REPORT_SIZE_BUCKETS ? b : ZCAL_REPORT_SIZE_BUCKETS - 1;
}

/* Out of line: a thread without a slot of this report takes one; one
 * that shares slot 0 counts there with atomic additions. */
void zcal_internal_report_send_slow(uint64_t epoch, uint16_t cell, int yes, unsigned why,
                                    uint64_t size_bytes, unsigned depth);
void zcal_internal_report_completions_slow(uint64_t epoch, uint16_t cell,
                                           uint64_t completions, uint64_t copied);

/* The thread's own slot: it alone writes it, so no locked instruction,
 * and no seqlock (report ABI 1.1): each counter is a word that only grows,
 * right on its own, and a reader's copy may hold part of a send, which
 * costs a metric nothing and saved about 0.3 ns per send (docs/client.md,
 * "Speed"). On x86-64 each count is one add to memory: the CPU loads, adds
 * and stores, and the aligned 8-byte store is what a reader sees, never
 * half of it. Elsewhere (and under ThreadSanitizer, which does not see
 * asm) a relaxed load and a release store do the same in three
 * instructions. */
#if defined(__SANITIZE_THREAD__)
#define ZCAL_REPORT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ZCAL_REPORT_TSAN 1
#endif
#endif
#if defined(__x86_64__) && !defined(ZCAL_REPORT_TSAN)
static inline void zcal_internal_report_add(uint64_t *word, uint64_t n) {
  __asm__ volatile("addq %1, %0" : "+m"(*word) : "er"(n));
}
#else
static inline void zcal_internal_report_add(uint64_t *word, uint64_t n) {
  __atomic_store_n(word, __atomic_load_n(word, __ATOMIC_RELAXED) + n, __ATOMIC_RELEASE);
}
#endif

/* The cell of a scope index and a method; UINT16_MAX for none. */
static inline uint16_t zcal_internal_report_cell(unsigned scope, uint8_t method) {
  return scope < ZCAL_REPORT_SCOPES && method < ZCAL_REPORT_METHODS
             ? (uint16_t)(scope * ZCAL_REPORT_METHODS + method)
             : UINT16_MAX;
}

static inline struct zcal_report_cell *zcal_internal_report_cell_of(struct zcal_report_slot *s,
                                                                   uint16_t cell) {
  return &s->cells[0][0] + cell;
}

/* Counts one answer in the thread's own slot `s`. */
static inline void zcal_internal_report_send_own(struct zcal_report_slot *s, uint16_t cell,
                                                 int yes, unsigned why, uint64_t size_bytes,
                                                 unsigned depth) {
  struct zcal_report_cell *c = zcal_internal_report_cell_of(s, cell);
  zcal_internal_report_add(&c->answers[depth][yes][why], 1);
  zcal_internal_report_add(&c->bytes[yes], size_bytes);
  zcal_internal_report_add(&c->sizes[zcal_internal_report_bucket(size_bytes)], 1);
}

static inline void zcal_internal_report_completions_own(struct zcal_report_slot *s,
                                                        uint16_t cell, uint64_t completions,
                                                        uint64_t copied) {
  struct zcal_report_cell *c = zcal_internal_report_cell_of(s, cell);
  zcal_internal_report_add(&c->completions, completions);
  zcal_internal_report_add(&c->copied, copied);
}

/* One answer counted in `cell` (zcal_internal_report_cell) of the report
 * of `epoch` (zcal_internal_report_on, not 0): `why` ZCAL_REPORT_BY_*,
 * `depth` a class index (0..ZCAL_DEPTH_CLASSES-1). */
static inline void zcal_internal_report_send(uint64_t epoch, uint16_t cell, int yes,
                                             unsigned why, uint64_t size_bytes,
                                             unsigned depth) {
  if (cell >= ZCAL_REPORT_SCOPES * ZCAL_REPORT_METHODS) return;
  if (zcal_internal_report_tls.epoch != epoch) {
    zcal_internal_report_send_slow(epoch, cell, yes, why, size_bytes, depth);
    return;
  }
  zcal_internal_report_send_own(zcal_internal_report_tls.slot, cell, yes, why, size_bytes,
                                depth);
}

static inline void zcal_internal_report_completions(uint64_t epoch, uint16_t cell,
                                                    uint64_t completions, uint64_t copied) {
  if (cell >= ZCAL_REPORT_SCOPES * ZCAL_REPORT_METHODS) return;
  if (zcal_internal_report_tls.epoch != epoch) {
    zcal_internal_report_completions_slow(epoch, cell, completions, copied);
    return;
  }
  zcal_internal_report_completions_own(zcal_internal_report_tls.slot, cell, completions,
                                       copied);
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
