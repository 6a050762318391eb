/* Keys, the index over the table copy, and lookups. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "handle.h"
#include "report.h"

static uint64_t load_be64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return be64toh(v);
}

static uint32_t load_be32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return be32toh(v);
}

static void split(const uint8_t address[16], uint64_t *hi, uint64_t *lo) {
  *hi = load_be64(address);
  *lo = load_be64(address + 8);
}

/* Keeps the first prefix_len bits of the 128-bit hi:lo. */
static inline void mask128(uint64_t *hi, uint64_t *lo, unsigned prefix_len) {
  if (prefix_len == 0) {
    *hi = 0;
    *lo = 0;
  } else if (prefix_len <= 64) {
    *hi &= ~UINT64_C(0) << (64 - prefix_len);
    *lo = 0;
  } else if (prefix_len < 128) {
    *lo &= ~UINT64_C(0) << (128 - prefix_len);
  }
}

/* Fibonacci hashing: the top bits of a product depend on every bit of its
 * input, so networks that differ only in their high bits (10.1.0.0/16,
 * 10.2.0.0/16: low bits zero) still spread over the slots. */
static inline uint32_t slot_of(const zcal_handle *h, uint64_t hi, uint64_t lo,
                               uint32_t tag) {
  uint64_t x = (hi ^ (lo * UINT64_C(0xc2b2ae3d27d4eb4f)) ^ tag) *
               UINT64_C(0x9e3779b97f4a7c15);
  return (uint32_t)(x >> h->slot_shift);
}

/* The filter's first-level key: IPv4 /16 and longer share their first 16
 * bits with every address they match, IPv6 /32 and longer their first 32. */
#define ZCAL_V4_FILTER_BITS 16u
#define ZCAL_V6_FILTER_BITS 32u

static inline uint32_t bucket_of(const zcal_handle *h, uint64_t lead,
                                 uint8_t method) {
  return (uint32_t)(((lead << 8 | method) * UINT64_C(0x9e3779b97f4a7c15)) >>
                    h->filter_shift);
}

/* The masked key of a peer entry, as the slots hold it. */
static void peer_key(const struct zcal_shm_entry *e, uint64_t *hi, uint64_t *lo) {
  split(e->address, hi, lo);
  /* IPv4 lives in the top 32 bits of hi; the rest must not take part. */
  if (e->family == ZCAL_FAMILY_IPV4) {
    *hi &= ~UINT64_C(0) << 32;
    *lo = 0;
  }
  mask128(hi, lo, e->prefix_len);
}

static void insert_peer(zcal_handle *h, uint32_t index,
                        const struct zcal_shm_entry *e) {
  uint64_t hi, lo;
  peer_key(e, &hi, &lo);
  const uint32_t tag = ZCAL_PEER_TAG(e->method, e->family, e->prefix_len);
  uint32_t s = slot_of(h, hi, lo, tag);
  for (;;) {
    struct zcal_peer_slot *slot = &h->slots[s];
    if (slot->tag == 0) break;
    if (slot->tag == tag && slot->hi == hi && slot->lo == lo)
      return; /* a duplicate: the first entry wins */
    s = (s + 1) & h->slot_mask;
  }
  struct zcal_peer_slot *slot = &h->slots[s];
  slot->hi = hi;
  slot->lo = lo;
  slot->tag = tag;
  slot->entry = index;
  const uint64_t bit = UINT64_C(1) << (e->prefix_len % 64);
  if (e->family == ZCAL_FAMILY_IPV4) {
    h->v4_prefixes[e->method] |= bit;
    if (e->prefix_len < ZCAL_V4_FILTER_BITS)
      h->v4_short[e->method] |= bit;
    else
      h->v4_filter[bucket_of(h, hi >> (64 - ZCAL_V4_FILTER_BITS), e->method)] |= bit;
  } else {
    h->v6_prefixes[e->method][e->prefix_len / 64] |= bit;
    if (e->prefix_len < ZCAL_V6_FILTER_BITS)
      h->v6_short[e->method] |= bit;
    else
      h->v6_filter[bucket_of(h, hi >> (64 - ZCAL_V6_FILTER_BITS), e->method)]
                  [e->prefix_len / 64] |= bit;
  }
}

static void reset_method(zcal_handle *h, uint8_t m) {
  h->default_entry[m] = -1;
  h->loopback_entry[m] = -1;
  h->v4_prefixes[m] = 0;
  h->v4_short[m] = 0;
  h->v6_short[m] = 0;
  memset(h->v6_prefixes[m], 0, sizeof h->v6_prefixes[m]);
  h->is_touched[m] = 0;
}

_Static_assert(sizeof(struct zcal_answer) == 64,
               "an answer fills exactly one cache line (handle.h)");

/* What a lookup that matches `e` returns, but for the ages and the
 * generation: computed once per copy, so that a lookup copies it instead of
 * decoding the entry. */
static void make_answer(const zcal_handle *h, const struct zcal_shm_entry *e,
                        struct zcal_answer *out) {
  memset(out, 0, sizeof *out);
  out->has_threshold = (e->entry_flags & ZCAL_ENTRY_HAS_THRESHOLD) != 0;
  out->threshold_bytes = out->has_threshold ? e->threshold_bytes : 0;
  switch (e->verdict) {
    case ZCAL_VERDICT_THRESHOLD:
      out->zerocopy_from_bytes = e->threshold_bytes;
      break;
    case ZCAL_VERDICT_ALWAYS:
      out->zerocopy_from_bytes = 0;
      break;
    default:
      out->zerocopy_from_bytes = UINT64_MAX;
      break;
  }
  out->measured_at_ns = e->measured_at_ns;
  out->fingerprint = e->fingerprint;
  out->confidence_ppm = e->confidence_ppm;
  out->verdict = e->verdict;
  out->reason = e->reason;
  out->method = e->method;
  /* Each scope answers only through its own kind of match. */
  out->scope = e->scope;
  out->prefix_len = e->scope == ZCAL_SCOPE_PEER ? e->prefix_len : 0;
  out->stale = (h->flags & ZCAL_FLAG_STALE) != 0;
  out->estimated = (e->entry_flags & ZCAL_ENTRY_ESTIMATED) != 0;
  /* Every reader of zerocopy_from_bytes (zcal_result_should_zerocopy, the
   * guard, the C++ and Rust wrappers) then answers copy. */
  out->contradicted = (e->entry_flags & ZCAL_ENTRY_CONTRADICTED) != 0;
  if (out->contradicted) out->zerocopy_from_bytes = UINT64_MAX;
  out->depth_class = e->depth_class;
}

static void index_depth_classes(zcal_handle *h);

void zcal_internal_build_index(zcal_handle *h) {
  if (!h->index_ready) {
    for (int m = 0; m < ZCAL_METHOD_CODES; ++m) reset_method(h, (uint8_t)m);
    h->index_ready = 1;
  } else {
    for (uint32_t i = 0; i < h->touched_count; ++i) reset_method(h, h->touched[i]);
  }
  h->touched_count = 0;
  memset(h->slots, 0, ((size_t)h->slot_mask + 1) * sizeof *h->slots);
  memset(h->v4_filter, 0, ((size_t)h->filter_mask + 1) * sizeof *h->v4_filter);
  memset(h->v6_filter, 0, ((size_t)h->filter_mask + 1) * sizeof *h->v6_filter);
  h->interface_count = 0;
  int classes = 0;
  for (uint32_t i = 0; i < h->count; ++i) {
    const struct zcal_shm_entry *e = &h->entries[i];
    make_answer(h, e, &h->answers[i]);
    for (int k = 0; k < ZCAL_CLASS_STREAM; ++k) h->depth_entry[i][k] = -1;
    /* Stream entries are routed; the others hang off their stream entry
     * (index_depth_classes), and unknown classes are skipped. */
    if (e->depth_class != ZCAL_DEPTH_STREAM) {
      classes = 1;
      continue;
    }
    if (!h->is_touched[e->method]) {
      h->is_touched[e->method] = 1;
      h->touched[h->touched_count++] = e->method;
    }
    switch (e->scope) {
      case ZCAL_SCOPE_HOST_DEFAULT:
        if (h->default_entry[e->method] < 0) h->default_entry[e->method] = (int32_t)i;
        break;
      case ZCAL_SCOPE_LOOPBACK:
        if (h->loopback_entry[e->method] < 0) h->loopback_entry[e->method] = (int32_t)i;
        break;
      case ZCAL_SCOPE_PEER:
        insert_peer(h, i, e);
        break;
      case ZCAL_SCOPE_INTERFACE: {
        struct zcal_interface_ref *ref = &h->interfaces[h->interface_count++];
        memcpy(ref->name, e->interface, sizeof ref->name);
        ref->method = e->method;
        ref->entry = i;
        break;
      }
      default:
        break;
    }
  }
  if (classes) index_depth_classes(h);
}

static inline int probe(const zcal_handle *h, uint64_t hi, uint64_t lo,
                        uint32_t tag) {
  for (uint32_t s = slot_of(h, hi, lo, tag);; s = (s + 1) & h->slot_mask) {
    const struct zcal_peer_slot *slot = &h->slots[s];
    if (slot->tag == tag && slot->hi == hi && slot->lo == lo)
      return (int)slot->entry;
    if (slot->tag == 0) return -1;
  }
}

/* The first `bits` (1..63) bits of a word; 0 for 0. */
static inline uint64_t leading(unsigned bits) {
  return bits == 0 ? 0 : ~UINT64_C(0) << (64 - bits);
}

static inline unsigned pop_highest(uint64_t *bits) {
  const unsigned bit = 63u - (unsigned)__builtin_clzll(*bits);
  *bits &= ~(UINT64_C(1) << bit);
  return bit;
}

/* Longest prefix first: bit L of the candidates says a /L entry may exist. */
static int find_v4(const zcal_handle *h, uint32_t address, uint8_t method) {
  uint64_t lengths =
      h->v4_short[method] |
      h->v4_filter[bucket_of(h, address >> (32 - ZCAL_V4_FILTER_BITS), method)];
  const uint64_t key = (uint64_t)address << 32;
  while (lengths) {
    const unsigned len = pop_highest(&lengths);
    const int found = probe(h, key & leading(len), 0,
                            ZCAL_PEER_TAG(method, ZCAL_FAMILY_IPV4, len));
    if (found >= 0) return found;
  }
  return -1;
}

static int find_v6(const zcal_handle *h, const uint8_t address[16],
                   uint8_t method) {
  const uint64_t hi = load_be64(address), lo = load_be64(address + 8);
  const uint64_t *bucket =
      h->v6_filter[bucket_of(h, hi >> (64 - ZCAL_V6_FILTER_BITS), method)];
  int found = -1;
  if (bucket[2] & 1u) { /* /128 */
    found = probe(h, hi, lo, ZCAL_PEER_TAG(method, ZCAL_FAMILY_IPV6, 128));
    if (found >= 0) return found;
  }
  for (uint64_t lengths = bucket[1]; lengths;) { /* /64../127 */
    const unsigned bit = pop_highest(&lengths);
    found = probe(h, hi, lo & leading(bit),
                  ZCAL_PEER_TAG(method, ZCAL_FAMILY_IPV6, 64 + bit));
    if (found >= 0) return found;
  }
  for (uint64_t lengths = bucket[0] | h->v6_short[method]; lengths;) {
    const unsigned len = pop_highest(&lengths);
    found = probe(h, hi & leading(len), 0,
                  ZCAL_PEER_TAG(method, ZCAL_FAMILY_IPV6, len));
    if (found >= 0) return found;
  }
  return -1;
}


/* Interface entries are rare in keys: out of line, so that the common
 * path keeps its registers. */
static __attribute__((noinline)) int find_interface(const zcal_handle *h,
                                                    const struct zcal_key *key,
                                                    uint8_t method) {
  for (uint32_t i = 0; i < h->interface_count; ++i) {
    const struct zcal_interface_ref *ref = &h->interfaces[i];
    if (ref->method == method &&
        strncmp(ref->name, key->interface, ZCAL_IFNAME_SIZE) == 0)
      return (int)ref->entry;
  }
  return -1;
}

/* The stream entry of the scope and method that `e` (of another class) is
 * for, or -1: the index holds stream entries only. */
static int stream_sibling(const zcal_handle *h, const struct zcal_shm_entry *e) {
  switch (e->scope) {
    case ZCAL_SCOPE_HOST_DEFAULT:
      return h->default_entry[e->method];
    case ZCAL_SCOPE_LOOPBACK:
      return h->loopback_entry[e->method];
    case ZCAL_SCOPE_PEER: {
      uint64_t hi, lo;
      peer_key(e, &hi, &lo);
      return probe(h, hi, lo, ZCAL_PEER_TAG(e->method, e->family, e->prefix_len));
    }
    case ZCAL_SCOPE_INTERFACE: {
      struct zcal_key key;
      memset(&key, 0, sizeof key);
      memcpy(key.interface, e->interface, sizeof key.interface);
      return find_interface(h, &key, e->method);
    }
    default:
      return -1;
  }
}

static void index_depth_classes(zcal_handle *h) {
  for (uint32_t i = 0; i < h->count; ++i) {
    const struct zcal_shm_entry *e = &h->entries[i];
    const int k = zcal_internal_class_index(e->depth_class);
    if (k < 0 || k == ZCAL_CLASS_STREAM) continue;
    const int stream = stream_sibling(h, e);
    /* A class entry without a stream entry is not reachable: a writer
     * never makes one (readers of minor 1 would take it for the stream). */
    if (stream >= 0 && h->depth_entry[stream][k] < 0)
      h->depth_entry[stream][k] = (int32_t)i; /* the first wins */
  }
}

/* Returns the index of the entry that answers, or -1. */
static inline int find_entry(const zcal_handle *h, const struct zcal_key *key,
                             uint8_t method) {
  int found = -1;
  if (key->family == ZCAL_FAMILY_IPV4) {
    if (h->v4_prefixes[method]) found = find_v4(h, load_be32(key->address), method);
  } else if (key->family == ZCAL_FAMILY_IPV6) {
    const uint64_t *bits = h->v6_prefixes[method];
    if (bits[0] | bits[1] | bits[2]) found = find_v6(h, key->address, method);
  }
  if (found >= 0) return found;
  if (h->loopback_entry[method] >= 0 && zcal_internal_is_loopback(key))
    return h->loopback_entry[method];
  if (key->interface[0] != '\0' && h->interface_count != 0) {
    found = find_interface(h, key, method);
    if (found >= 0) return found;
  }
  return h->default_entry[method];
}

static inline uint64_t age(uint64_t now_ns, uint64_t then_ns) {
  return now_ns > then_ns ? now_ns - then_ns : 0;
}

static inline int answer(const zcal_handle *h, const struct zcal_key *key,
                         uint8_t method, int depth_class, uint64_t now_ns,
                         uint64_t heartbeat_ns, struct zcal_result *out) {
  int index = find_entry(h, key, method);
  if (index < 0) return -ENODATA;
  uint8_t fallback = 0;
  if (depth_class != ZCAL_CLASS_STREAM) {
    const int32_t other = h->depth_entry[index][depth_class];
    if (other >= 0)
      index = other;
    else
      fallback = 1;
  }
  const struct zcal_answer *a = &h->answers[index];
  out->zerocopy_from_bytes = a->zerocopy_from_bytes;
  out->threshold_bytes = a->threshold_bytes;
  out->generation = h->generation;
  out->measured_at_ns = a->measured_at_ns;
  out->age_ns = age(now_ns, a->measured_at_ns);
  out->heartbeat_age_ns = age(now_ns, heartbeat_ns);
  out->fingerprint = a->fingerprint;
  out->confidence_ppm = a->confidence_ppm;
  out->verdict = a->verdict;
  out->reason = a->reason;
  out->method = a->method;
  out->scope = a->scope;
  out->prefix_len = a->prefix_len;
  out->stale = a->stale;
  out->has_threshold = a->has_threshold;
  out->estimated = a->estimated;
  out->depth_class = a->depth_class;
  out->depth_fallback = fallback;
  out->contradicted = a->contradicted;
  return 0;
}

static inline int heartbeat_old(uint64_t now_ns, uint64_t heartbeat_ns) {
  return now_ns > heartbeat_ns && now_ns - heartbeat_ns > ZCAL_RECHECK_AFTER_NS;
}

static inline int size_check_due(const zcal_handle *h, uint64_t now_ns) {
  /* Also when the clock went back: the difference wraps. */
  return now_ns - h->size_checked_ns >= ZCAL_SIZE_CHECK_INTERVAL_NS;
}

/* Everything a lookup may have to do before it answers: a check of the
 * file size, a new copy of the table, a re-check of a segment that looks
 * gone. The size check comes first: it decides whether the mapping may be
 * touched at all. */
static __attribute__((noinline)) int lookup_slow(zcal_handle *h,
                                                 const struct zcal_key *key,
                                                 uint8_t method, int depth_class,
                                                 uint64_t now_ns,
                                                 struct zcal_result *out) {
  if (size_check_due(h, now_ns)) zcal_internal_check_size(h, now_ns);
  if (ZCAL_LOAD_ACQ(h->generation_word) != h->generation || h->broken) {
    int rc = zcal_internal_sync(h);
    if (rc != 0) return rc;
  }
  uint64_t heartbeat_ns = zcal_internal_heartbeat(h);
  if ((h->flags & ZCAL_FLAG_RETIRED) || heartbeat_old(now_ns, heartbeat_ns)) {
    zcal_internal_maybe_recheck(h, now_ns, heartbeat_ns);
    heartbeat_ns = zcal_internal_heartbeat(h);
  }
  return answer(h, key, method, depth_class, now_ns, heartbeat_ns, out);
}

static inline int lookup_class(zcal_handle *h, const struct zcal_key *key,
                               uint8_t method, int depth_class,
                               struct zcal_result *out) {
  if (!h || !key || !out) return -EINVAL;
  const uint64_t now_ns = zcal_internal_now_ns();
  if (size_check_due(h, now_ns) || h->broken ||
      ZCAL_LOAD_ACQ(h->generation_word) != h->generation)
    return lookup_slow(h, key, method, depth_class, now_ns, out);
  const uint64_t heartbeat_ns = zcal_internal_heartbeat(h);
  if ((h->flags & ZCAL_FLAG_RETIRED) || heartbeat_old(now_ns, heartbeat_ns))
    return lookup_slow(h, key, method, depth_class, now_ns, out);
  return answer(h, key, method, depth_class, now_ns, heartbeat_ns, out);
}

int zcal_lookup(zcal_handle *h, const struct zcal_key *key, uint8_t method,
                struct zcal_result *out) {
  return lookup_class(h, key, method, ZCAL_CLASS_STREAM, out);
}

int zcal_lookup_depth(zcal_handle *h, const struct zcal_key *key,
                      uint8_t method, uint32_t depth, struct zcal_result *out) {
  return lookup_class(h, key, method, zcal_internal_class_of_depth(depth), out);
}

const uint16_t zcal_internal_class_codes[ZCAL_DEPTH_CLASSES] = {
    ZCAL_DEPTH_1, ZCAL_DEPTH_4, ZCAL_DEPTH_16, ZCAL_DEPTH_STREAM};

uint16_t zcal_depth_class(uint32_t depth) {
  return zcal_internal_class_codes[zcal_internal_class_of_depth(depth)];
}

int zcal_key_from_sockaddr(const struct sockaddr *addr, socklen_t len,
                           struct zcal_key *key) {
  if (!addr || !key || len < (socklen_t)sizeof(sa_family_t)) return -EINVAL;
  memset(key, 0, sizeof *key);
  if (addr->sa_family == AF_INET) {
    if (len < (socklen_t)sizeof(struct sockaddr_in)) return -EINVAL;
    struct sockaddr_in in;
    memcpy(&in, addr, sizeof in);
    key->family = ZCAL_FAMILY_IPV4;
    memcpy(key->address, &in.sin_addr, 4);
    return 0;
  }
  if (addr->sa_family == AF_INET6) {
    if (len < (socklen_t)sizeof(struct sockaddr_in6)) return -EINVAL;
    struct sockaddr_in6 in6;
    memcpy(&in6, addr, sizeof in6);
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      key->family = ZCAL_FAMILY_IPV4;
      memcpy(key->address, &in6.sin6_addr.s6_addr[12], 4);
    } else {
      key->family = ZCAL_FAMILY_IPV6;
      memcpy(key->address, &in6.sin6_addr, 16);
    }
    return 0;
  }
  return -EAFNOSUPPORT;
}

int zcal_key_from_string(const char *address, const char *interface,
                         struct zcal_key *key) {
  if (!key || (!address && !interface)) return -EINVAL;
  memset(key, 0, sizeof *key);
  if (interface) {
    size_t len = strlen(interface);
    if (len == 0 || len >= ZCAL_IFNAME_SIZE) return -EINVAL;
    memcpy(key->interface, interface, len);
  }
  if (address) {
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
    memset(&in, 0, sizeof in);
    memset(&in6, 0, sizeof in6);
    if (inet_pton(AF_INET, address, &in.sin_addr) == 1) {
      in.sin_family = AF_INET;
      struct zcal_key parsed;
      zcal_key_from_sockaddr((const struct sockaddr *)&in, sizeof in, &parsed);
      key->family = parsed.family;
      memcpy(key->address, parsed.address, 16);
    } else if (inet_pton(AF_INET6, address, &in6.sin6_addr) == 1) {
      in6.sin6_family = AF_INET6;
      struct zcal_key parsed;
      zcal_key_from_sockaddr((const struct sockaddr *)&in6, sizeof in6, &parsed);
      key->family = parsed.family;
      memcpy(key->address, parsed.address, 16);
    } else {
      return -EINVAL;
    }
  }
  return 0;
}

int zcal_lookup_fd(zcal_handle *h, int fd, uint8_t method,
                   struct zcal_result *out) {
  if (!h || !out) return -EINVAL;
  struct sockaddr_storage peer;
  socklen_t len = sizeof peer;
  if (getpeername(fd, (struct sockaddr *)&peer, &len) != 0) {
    int err = errno;
    zcal_internal_set_detail("getpeername(%d) failed: %s", fd, strerror(err));
    return -err;
  }
  struct zcal_key key;
  int rc = zcal_key_from_sockaddr((const struct sockaddr *)&peer, len, &key);
  if (rc != 0) {
    zcal_internal_set_detail("socket %d is not an IPv4 or IPv6 socket", fd);
    return rc;
  }
  return zcal_lookup(h, &key, method, out);
}

static inline int should_zerocopy(zcal_handle *h, const struct zcal_key *key,
                                  uint8_t method, int depth_class,
                                  uint64_t size_bytes, uint64_t max_age_ns,
                                  int fallback) {
  struct zcal_result r;
  if (!h || !key || lookup_class(h, key, method, depth_class, &r) != 0 ||
      (max_age_ns != 0 && r.heartbeat_age_ns > max_age_ns)) {
    /* The fallback answers, and the report counts it under no scope. */
    r.scope = ZCAL_REPORT_SCOPE_NONE;
    r.verdict = ZCAL_VERDICT_INCONCLUSIVE;
    r.contradicted = 0;
  }
  const int yes = zcal_result_should_zerocopy(&r, size_bytes, fallback);
  const uint64_t epoch = zcal_internal_report_on();
  if (epoch) {
    unsigned why = r.verdict <= ZCAL_VERDICT_NEVER ? ZCAL_REPORT_BY_THRESHOLD
                                                   : ZCAL_REPORT_BY_NO_ANSWER;
    /* As the guard counts it: a 1 the contradiction turned into 0. */
    if (r.contradicted && size_bytes >= zcal_internal_verdict_from_bytes(&r))
      why = ZCAL_REPORT_BY_GUARD_OFF;
    zcal_internal_report_send(epoch, zcal_internal_report_cell(zcal_internal_report_scope(key, r.scope), method),
                              yes, why, size_bytes, (unsigned)depth_class);
  }
  return yes;
}

int zcal_should_zerocopy(zcal_handle *h, const struct zcal_key *key,
                         uint8_t method, uint64_t size_bytes,
                         uint64_t max_age_ns, int fallback) {
  return should_zerocopy(h, key, method, ZCAL_CLASS_STREAM, size_bytes,
                         max_age_ns, fallback);
}

int zcal_should_zerocopy_depth(zcal_handle *h, const struct zcal_key *key,
                               uint8_t method, uint32_t depth,
                               uint64_t size_bytes, uint64_t max_age_ns,
                               int fallback) {
  return should_zerocopy(h, key, method, zcal_internal_class_of_depth(depth),
                         size_bytes, max_age_ns, fallback);
}

int zcal_read_info(zcal_handle *h, struct zcal_info *out) {
  if (!h || !out) return -EINVAL;
  zcal_internal_check_size(h, zcal_internal_now_ns());
  if (h->broken || zcal_generation(h) != h->generation) {
    int rc = zcal_internal_sync(h);
    if (rc != 0) return rc;
  }
  memset(out, 0, sizeof *out);
  out->segment_bytes = h->mapped_bytes;
  out->generation = h->generation;
  out->publish_time_ns = h->publish_time_ns;
  out->heartbeat_ns = zcal_internal_heartbeat(h);
  out->created_ns = h->created_ns;
  out->capacity = h->capacity;
  out->count = h->count;
  out->flags = h->flags;
  out->agent_pid = h->agent_pid;
  out->header_size = h->header_size;
  out->entry_size = h->entry_size;
  out->abi_major = h->abi_major;
  out->abi_minor = h->abi_minor;
  out->host_default_source = h->host_default_source;
  return 0;
}

int zcal_read_entry(const zcal_handle *h, uint32_t index,
                    struct zcal_shm_entry *out) {
  if (!h || !out || index >= h->count) return -EINVAL;
  *out = h->entries[index];
  return 0;
}
