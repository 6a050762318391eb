/* Private to the client library: the handle and what its files share.
 * Include after defining _GNU_SOURCE (CLOCK_REALTIME_COARSE). */
#ifndef ZCAL_CLIENT_HANDLE_H
#define ZCAL_CLIENT_HANDLE_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "zcal/zcal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZCAL_NAME_MAX 251 /* "/" + 250 bytes + NUL */
#define ZCAL_METHOD_CODES 256

#define ZCAL_LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ZCAL_LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)

/* What a lookup matching one entry returns, decoded once per copy of the
 * table: 48 bytes at a 64-byte stride, so that a lookup reads one cache line
 * (a struct zcal_result, 72 bytes, would span two; docs/client.md, "Speed").
 * lookup.c checks that it stays within one line. */
struct zcal_answer {
  uint64_t zerocopy_from_bytes;
  uint64_t threshold_bytes;
  uint64_t measured_at_ns;
  uint64_t fingerprint;
  uint32_t confidence_ppm;
  uint8_t verdict;
  uint8_t reason;
  uint8_t method;
  uint8_t scope;
  uint8_t prefix_len;
  uint8_t stale;
  uint8_t has_threshold;
  uint8_t estimated;
  uint16_t depth_class;
  uint8_t contradicted;
} __attribute__((aligned(64)));

/* Index of a depth class among the classes this reader knows, and back.
 * The stream is last: ZCAL_DEPTH_CLASSES - 1. */
#define ZCAL_CLASS_STREAM (ZCAL_DEPTH_CLASSES - 1)
/* -1 for a code this reader does not know. */
static inline int zcal_internal_class_index(uint16_t depth_class) {
  switch (depth_class) {
    case ZCAL_DEPTH_1: return 0;
    case ZCAL_DEPTH_4: return 1;
    case ZCAL_DEPTH_16: return 2;
    case ZCAL_DEPTH_STREAM: return ZCAL_CLASS_STREAM;
    default: return -1;
  }
}
/* The class a depth falls in (zcal_depth_class), as an index. Without
 * branches: on the guard's per-send path the depth moves with every send
 * and completion, and mispredicted branches cost more than the compares. */
static inline int zcal_internal_class_of_depth(uint64_t depth) {
  return (depth >= ZCAL_DEPTH_4) + (depth >= ZCAL_DEPTH_16) +
         (depth >= ZCAL_DEPTH_STREAM_FROM);
}
extern const uint16_t zcal_internal_class_codes[ZCAL_DEPTH_CLASSES];

/* The size from which the entry's verdict says zerocopy, whether or not
 * the applications contradict it (zerocopy_from_bytes is UINT64_MAX then):
 * the answers a contradiction turns into copies are counted as such. */
static inline uint64_t zcal_internal_verdict_from_bytes(const struct zcal_result *r) {
  switch (r->verdict) {
    case ZCAL_VERDICT_THRESHOLD: return r->threshold_bytes;
    case ZCAL_VERDICT_ALWAYS: return 0;
    default: return UINT64_MAX;
  }
}

/* A peer entry in the open-addressing table, keyed by masked address. */
struct zcal_peer_slot {
  uint64_t hi, lo; /* masked address, big-endian words; IPv4 in hi's top half */
  uint32_t tag;    /* ZCAL_PEER_TAG(method, family, prefix_len); 0 = empty */
  uint32_t entry;  /* index into entries */
};
/* Never 0 for a peer: its family is 4 or 6. */
#define ZCAL_PEER_TAG(method, family, prefix_len)                    \
  ((uint32_t)(method) << 16 | (uint32_t)(family) << 8 | (uint32_t)(prefix_len))

struct zcal_interface_ref {
  char name[ZCAL_IFNAME_SIZE];
  uint32_t entry;
  uint8_t method;
  uint8_t pad[3];
};

struct zcal_handle {
  /* Where the segment's generation word is read: in the mapping, or
   * dead_generation once the mapping can no longer be trusted. */
  const uint64_t *generation_word;
  uint64_t dead_generation;
  /* The mapping can no longer be trusted (the file changed size, or its
   * header changed): it is never touched again, lookups return
   * broken_error (-ESTALE, -EPROTO) until a reopen of the name succeeds. */
  int broken;
  int broken_error;
  /* When the file size was last compared with the mapping (fstat). */
  uint64_t size_checked_ns;

  /* The mapping. fd < 0: memory attached by zcal_internal_attach. */
  int fd;
  int owns_mapping;
  const unsigned char *base;
  size_t mapped_bytes;
  dev_t dev;
  ino_t ino;
  char name[ZCAL_NAME_MAX];

  /* Geometry, validated once when mapped; never re-read. */
  uint32_t header_size;
  uint32_t entry_size;
  uint32_t capacity;
  uint16_t abi_major;
  uint16_t abi_minor;
  uint32_t agent_pid;
  uint64_t created_ns;

  /* The private, consistent copy of the table and its header fields. */
  uint64_t generation;
  uint64_t publish_time_ns;
  uint32_t count;
  uint32_t flags;
  uint32_t host_default_source;
  struct zcal_shm_entry *entries;
  struct zcal_shm_entry *scratch;

  /* Where the last copy attempt gave up: retried only once seq moves. */
  uint64_t busy_seq;
  int busy;

  uint64_t last_recheck_ns;

  /* Index over `entries`, rebuilt with every copy. Only the methods the
   * last table used are reset, so that a rebuild costs O(count).
   * answers[i] is what a lookup matching entry i returns, but the ages and
   * the generation. */
  struct zcal_answer *answers;
  /* For a stream entry i, depth_entry[i][k] is the entry of the same scope
   * and method for class index k (< ZCAL_CLASS_STREAM), or -1. */
  int32_t (*depth_entry)[ZCAL_CLASS_STREAM];
  int index_ready;
  uint32_t touched_count;
  uint8_t touched[ZCAL_METHOD_CODES];
  uint8_t is_touched[ZCAL_METHOD_CODES];
  int32_t default_entry[ZCAL_METHOD_CODES];
  int32_t loopback_entry[ZCAL_METHOD_CODES];
  uint64_t v4_prefixes[ZCAL_METHOD_CODES];    /* bit L: a /L peer entry */
  uint64_t v6_prefixes[ZCAL_METHOD_CODES][3]; /* bits 0..128 */
  /* Prefix lengths a lookup must probe, narrowed by the key's leading
   * bits: short lengths (IPv4 < 16, IPv6 < 32) are always probed; longer
   * ones only where a bucket of the filter, hashed from the method and the
   * key's first 16 (IPv4) or 32 (IPv6) bits, says an entry may exist. */
  uint64_t v4_short[ZCAL_METHOD_CODES];
  uint64_t v6_short[ZCAL_METHOD_CODES];
  uint64_t *v4_filter;    /* filter_mask + 1 words, bit L */
  uint64_t (*v6_filter)[3]; /* filter_mask + 1 buckets, bits 0..128 */
  uint32_t filter_mask;
  unsigned filter_shift;
  struct zcal_peer_slot *slots;
  uint32_t slot_mask;
  unsigned slot_shift; /* 64 - log2(slots): the hash's top bits index */
  struct zcal_interface_ref *interfaces;
  uint32_t interface_count;
};

/* A lookup compares the file size with its mapping (one fstat) before it
 * touches the mapping when the last comparison is older than this: a reader
 * that looks up less often never reads a file that shrank meanwhile. */
#define ZCAL_SIZE_CHECK_INTERVAL_NS UINT64_C(100000000)

/* Slots per capacity entry: a load factor of at most 1/4 keeps probe
 * chains near one slot, also for keys that miss. */
#define ZCAL_SLOTS_PER_ENTRY 4u
/* Filter buckets per capacity entry (a power of two). */
#define ZCAL_FILTER_PER_ENTRY 2u

/* Inline: both sit on every lookup. */
static inline uint64_t zcal_internal_now_ns(void) {
  struct timespec ts;
  /* Ages are judged in seconds; the coarse clock (a tick, 1-4 ms) costs a
   * fraction of CLOCK_REALTIME on the lookup path (measured 20 vs 90 ns in
   * a KVM guest). */
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static inline uint64_t zcal_internal_heartbeat(const zcal_handle *h) {
  if (h->broken) return 0;
  return ZCAL_LOAD_ACQ(
      &((const struct zcal_shm_header *)(const void *)h->base)->heartbeat_ns);
}

/* segment.c */
int zcal_internal_sync(zcal_handle *h);
void zcal_internal_check_size(zcal_handle *h, uint64_t now_ns);
void zcal_internal_maybe_recheck(zcal_handle *h, uint64_t now_ns,
                                 uint64_t heartbeat_ns);

/* Attaches a handle to a segment image already in memory (tests, fuzzing):
 * validated like a mapped file, never unmapped or re-checked by name.
 * `base` must be 8-byte aligned and stay valid until zcal_close. */
int zcal_internal_attach(const void *base, size_t bytes, zcal_handle **out);

/* lookup.c */
void zcal_internal_build_index(zcal_handle *h);

/* report.c: the segment zcal_open just opened by `name`, whose agent
 * would read this process's report. */
void zcal_internal_report_segment(const char *name);

/* names.c */
void zcal_internal_set_detail(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif

#endif /* ZCAL_CLIENT_HANDLE_H */
