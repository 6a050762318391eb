/*
 * zcal.h - the zcal shared-memory ABI and its reader.
 *
 * The zcal agent publishes, per host, from which message size zerocopy send
 * pays off, in one POSIX shared-memory segment (default "/zcal"). This header
 * is the whole contract: the segment layout (struct zcal_shm_header followed
 * by `capacity` struct zcal_shm_entry) and a reader that maps it read-only,
 * validates everything it uses, and answers "use zerocopy for this size?"
 * without system calls. See docs/shm-abi.md (layout and compatibility rule)
 * and docs/client.md (how a transport uses it).
 *
 * C11 and valid C++. Link with `pkg-config --libs zcal`.
 *
 * Thread safety: a zcal_handle is not thread-safe (it keeps a private copy
 * of the table and may remap). Use one handle per thread, or serialize
 * calls on a shared handle. Different handles are independent.
 *
 * Errors: functions return 0 or a negative errno value:
 *   -ENOENT   no segment of that name (no agent has published yet)
 *   -EPROTO   the segment is incompatible (magic, major version), corrupt
 *             (sizes, count above capacity, a field out of range, truncated,
 *             its header changed after open) or writable by every user
 *   -ESTALE   the segment file changed size under an open handle (someone
 *             truncated it): the handle no longer reads it, and reopens the
 *             name at most once a second (lookups) or on zcal_refresh
 *   -EAGAIN   the writer stayed busy beyond the retry bound (ZCAL_READ_RETRIES)
 *   -EACCES   not allowed to open the segment
 *   -EINVAL   a bad argument (NULL pointer, malformed name or address)
 *   -ENOMEM   out of memory
 *   -ENODATA  (lookups) no entry matches the key and method
 * After a failing zcal_open, zcal_refresh, zcal_lookup or zcal_lookup_fd
 * (other than -ENODATA, which is common and cheap), zcal_error_detail()
 * gives a sentence saying what was wrong, for people.
 */
#ifndef ZCAL_ZCAL_H
#define ZCAL_ZCAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "zcal/zcal_codes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* Segment layout                                                          */
/* ---------------------------------------------------------------------- */

/** "ZCALSHM\0" read as a little-endian uint64. Written last at creation. */
#define ZCAL_MAGIC UINT64_C(0x004d48534c41435a)
/** Readers accept any minor of their major (fields are only appended). */
#define ZCAL_ABI_MAJOR 1
/* Minor 1: ZCAL_SCOPE_DISCARD, ZCAL_ENTRY_ESTIMATED, host_default_source.
 * Minor 2: zcal_shm_entry.depth_class (ZCAL_DEPTH_*).
 * Minor 3: ZCAL_ENTRY_CONTRADICTED. */
#define ZCAL_ABI_MINOR 3

#define ZCAL_DEFAULT_SEGMENT "/zcal"
/** Environment variable naming the segment when zcal_open gets NULL. */
#define ZCAL_SEGMENT_ENV "ZCAL_SEGMENT"

/** Upper bound on `capacity` a reader accepts and a writer creates. */
#define ZCAL_MAX_CAPACITY 65536u
/** Longest interface name, NUL included (IFNAMSIZ). */
#define ZCAL_IFNAME_SIZE 16

/* zcal_shm_header.flags */
/** Republished from saved state at agent start, not yet confirmed. */
#define ZCAL_FLAG_STALE UINT32_C(0x1)
/** A newer segment replaced this one under the same name: reopen it. */
#define ZCAL_FLAG_RETIRED UINT32_C(0x2)
/** (minor 3) The agent reads report objects and may remove any user's
 *  (root, or CAP_FOWNER in a sticky /dev/shm): a process that closes its
 *  report leaves the object for it to fold and remove (docs/shm-abi.md,
 *  "Naming and lifetime"). */
#define ZCAL_FLAG_TAKES_REPORTS UINT32_C(0x4)

/* zcal_shm_entry.family, and zcal_key.family */
#define ZCAL_FAMILY_NONE 0
#define ZCAL_FAMILY_IPV4 4
#define ZCAL_FAMILY_IPV6 6

/* zcal_shm_entry.entry_flags */
/** threshold_bytes is meaningful (required with ZCAL_VERDICT_THRESHOLD). */
#define ZCAL_ENTRY_HAS_THRESHOLD 0x1
/** (minor 1) An estimate, not a measurement of this scope: a host default
 *  taken from the discard path (which sees neither NIC nor IOMMU), only
 *  where the egress NIC's IOMMU does not translate. Lower confidence. */
#define ZCAL_ENTRY_ESTIMATED 0x2
/** (minor 3) The applications' own sends contradict this entry: their
 *  reports (ZCAL_REPORT) show the kernel copying zerocopy sends of this
 *  scope and method although the entry says zerocopy pays. The verdict
 *  and threshold stay as measured; the guard answers copy for it, as it
 *  does for a connection whose own completions came back copied, and the
 *  agent recalibrates the scope. */
#define ZCAL_ENTRY_CONTRADICTED 0x4

/* zcal_shm_header.host_default_source (minor 1): where the host-default
 * entries come from, or why there are none. 0 from a minor-0 writer. */
#define ZCAL_HOST_DEFAULT_UNKNOWN 0          /**< not said (minor-0 writer) */
#define ZCAL_HOST_DEFAULT_PEERS 1            /**< peer paths through the NIC */
#define ZCAL_HOST_DEFAULT_ESTIMATED 2        /**< the discard path, estimated */
#define ZCAL_HOST_DEFAULT_NONE_NO_PATH 3     /**< none: no path crossing a NIC measured */
#define ZCAL_HOST_DEFAULT_NONE_IOMMU 4       /**< none: the NIC's IOMMU translates */
#define ZCAL_HOST_DEFAULT_NONE_IOMMU_UNKNOWN 5 /**< none: the NIC's IOMMU mode is unknown */
#define ZCAL_HOST_DEFAULT_NONE_DISABLED 6    /**< none: the configuration asks for none */

/** confidence_ppm when the agent does not know its confidence. */
#define ZCAL_CONFIDENCE_UNKNOWN UINT32_C(0xffffffff)

/**
 * The segment header, at offset 0. All multi-byte fields in host byte order.
 *
 * Seqlock: `seq` is odd while the writer changes count, flags, generation,
 * publish_time_ns or any entry. A reader copies what it needs like this,
 * and gives up with -EAGAIN after ZCAL_READ_RETRIES attempts:
 *
 *     do {
 *         s1 = load_acquire(&h->seq);
 *         if (s1 & 1) continue;               // writer busy
 *         copy each 8-byte word with load_acquire;
 *         s2 = load_relaxed(&h->seq);         // ordered by the acquires
 *     } while (s1 != s2);
 *
 * The writer stores seq+1 (odd), every changed word with a release store,
 * then seq+2 (even) with a release store. heartbeat_ns is outside the
 * seqlock: a single word the writer stores (release) at any time.
 */
struct zcal_shm_header {
  uint64_t magic;           /**< ZCAL_MAGIC */
  uint16_t abi_major;       /**< ZCAL_ABI_MAJOR */
  uint16_t abi_minor;       /**< ZCAL_ABI_MINOR of the writer */
  uint32_t header_size;     /**< bytes; entries start here; multiple of 8 */
  uint32_t entry_size;      /**< bytes between entries; multiple of 8 */
  uint32_t capacity;        /**< entries the segment has room for */
  uint64_t seq;             /**< seqlock counter, odd while writing */
  uint64_t generation;      /**< changes on every publish (see below) */
  uint64_t publish_time_ns; /**< CLOCK_REALTIME of the last publish, 0 none */
  uint64_t heartbeat_ns;    /**< CLOCK_REALTIME, refreshed while alive */
  uint32_t count;           /**< entries in use, <= capacity */
  uint32_t flags;           /**< ZCAL_FLAG_* */
  uint32_t agent_pid;       /**< process id of the writer */
  uint32_t host_default_source; /**< (minor 1) ZCAL_HOST_DEFAULT_*, seqlock */
  uint64_t created_ns;      /**< CLOCK_REALTIME when the segment was made */
  uint8_t reserved[48];     /**< zero; future fields are carved from here */
};

/**
 * One published decision: for traffic matching the scope, sent with
 * `method`, the verdict. 96 bytes, 8-byte aligned.
 */
struct zcal_shm_entry {
  uint8_t scope;          /**< ZCAL_SCOPE_* */
  uint8_t method;         /**< ZCAL_METHOD_* */
  uint8_t verdict;        /**< ZCAL_VERDICT_* */
  uint8_t reason;         /**< ZCAL_REASON_* */
  uint8_t family;         /**< ZCAL_FAMILY_* (peer scope), else NONE */
  uint8_t prefix_len;     /**< peer: bits of address that match, <=32/128 */
  uint16_t entry_flags;   /**< ZCAL_ENTRY_* */
  uint8_t address[16];    /**< peer: network order; IPv4 in bytes 0..3 */
  char interface[ZCAL_IFNAME_SIZE]; /**< interface scope: NUL-terminated */
  uint64_t threshold_bytes;   /**< with ZCAL_ENTRY_HAS_THRESHOLD */
  uint64_t measured_at_ns;    /**< CLOCK_REALTIME of the measurement */
  uint64_t fingerprint;       /**< host facts (kernel, NIC, IOMMU) hash */
  uint32_t confidence_ppm;    /**< 0..1000000, or ZCAL_CONFIDENCE_UNKNOWN */
  uint16_t depth_class;       /**< (minor 2) ZCAL_DEPTH_*; 0 before */
  uint16_t reserved0;
  uint8_t reserved[24];       /**< zero; future fields are carved from here */
};

#define ZCAL_HEADER_SIZE_V1 128
#define ZCAL_ENTRY_SIZE_V1 96

#ifdef __cplusplus
#define ZCAL_STATIC_ASSERT static_assert
#else
#define ZCAL_STATIC_ASSERT _Static_assert
#endif
ZCAL_STATIC_ASSERT(sizeof(struct zcal_shm_header) == ZCAL_HEADER_SIZE_V1,
                   "zcal_shm_header is 128 bytes");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_header, seq) == 24, "seq at 24");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_header, generation) == 32,
                   "generation at 32");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_header, heartbeat_ns) == 48,
                   "heartbeat_ns at 48");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_header, count) == 56,
                   "count at 56");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_header, created_ns) == 72,
                   "created_ns at 72");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_header, reserved) == 80,
                   "reserved at 80");
ZCAL_STATIC_ASSERT(sizeof(struct zcal_shm_entry) == ZCAL_ENTRY_SIZE_V1,
                   "zcal_shm_entry is 96 bytes");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_entry, address) == 8,
                   "address at 8");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_entry, interface) == 24,
                   "interface at 24");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_entry, threshold_bytes) == 40,
                   "threshold_bytes at 40");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_entry, confidence_ppm) == 64,
                   "confidence_ppm at 64");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_entry, depth_class) == 68,
                   "depth_class at 68");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_shm_entry, reserved) == 72,
                   "reserved at 72");

/* ---------------------------------------------------------------------- */
/* Reader                                                                  */
/* ---------------------------------------------------------------------- */

/** Seqlock attempts before a read gives up with -EAGAIN. */
#define ZCAL_READ_RETRIES 4096
/** A lookup re-checks the segment's name when the heartbeat is older. */
#define ZCAL_RECHECK_AFTER_NS UINT64_C(5000000000)

typedef struct zcal_handle zcal_handle;

/** What a lookup is about: a peer address and/or an interface. */
struct zcal_key {
  uint8_t family;      /**< ZCAL_FAMILY_*; NONE: no address */
  uint8_t reserved[7];
  uint8_t address[16]; /**< network order; IPv4 in bytes 0..3 */
  char interface[ZCAL_IFNAME_SIZE]; /**< "" for none */
};

/** The answer for one key and method. */
struct zcal_result {
  /** Sizes >= this are sent with zerocopy: threshold_bytes for THRESHOLD,
   *  0 for ALWAYS, UINT64_MAX for NEVER and INCONCLUSIVE, and for an
   *  entry the applications contradict (`contradicted`). */
  uint64_t zerocopy_from_bytes;
  uint64_t threshold_bytes;  /**< as published; 0 without a threshold */
  uint64_t generation;       /**< segment generation read; see zcal_generation */
  uint64_t measured_at_ns;   /**< CLOCK_REALTIME of the measurement */
  uint64_t age_ns;           /**< now - measured_at_ns (0 if in the future) */
  uint64_t heartbeat_age_ns; /**< now - last heartbeat: is the agent alive */
                             /* (ages use CLOCK_REALTIME_COARSE: +-4 ms) */
  uint64_t fingerprint;
  uint32_t confidence_ppm;   /**< or ZCAL_CONFIDENCE_UNKNOWN */
  uint8_t verdict;           /**< ZCAL_VERDICT_* */
  uint8_t reason;            /**< ZCAL_REASON_* */
  uint8_t method;
  uint8_t scope;             /**< which scope matched: ZCAL_SCOPE_* */
  uint8_t prefix_len;        /**< of the matching peer entry */
  uint8_t stale;             /**< 1: republished state, not yet confirmed */
  uint8_t has_threshold;
  uint8_t estimated;         /**< 1: ZCAL_ENTRY_ESTIMATED (see there) */
  /** (libzcal 1.2) ZCAL_DEPTH_* of the entry that answered: the class the
   *  asked depth falls in, or ZCAL_DEPTH_STREAM (zcal_lookup, and every
   *  fallback). 0 from an older library. */
  uint16_t depth_class;
  /** (libzcal 1.2) 1: a depth lookup found no entry of its class for the
   *  matching scope (an agent of ABI minor 1, a class not calibrated) and
   *  answered with that scope's stream entry instead. */
  uint8_t depth_fallback;
  /** (libzcal 1.3) 1: ZCAL_ENTRY_CONTRADICTED (see there). The answer is
   *  copy: zerocopy_from_bytes is UINT64_MAX, while verdict and
   *  threshold_bytes stay as published. 0 from an older library. */
  uint8_t contradicted;
};
ZCAL_STATIC_ASSERT(sizeof(struct zcal_result) == 72, "zcal_result is 72 bytes");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_result, estimated) == 67, "estimated at 67");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_result, depth_class) == 68, "depth_class at 68");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_result, contradicted) == 71, "contradicted at 71");

/** Header fields and segment facts, for tools such as `zcal show`. */
struct zcal_info {
  uint64_t segment_bytes;  /**< size of the mapped file */
  uint64_t generation;
  uint64_t publish_time_ns;
  uint64_t heartbeat_ns;
  uint64_t created_ns;
  uint32_t capacity;
  uint32_t count;
  uint32_t flags;          /**< ZCAL_FLAG_* */
  uint32_t agent_pid;
  uint32_t header_size;
  uint32_t entry_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  uint32_t host_default_source; /**< ZCAL_HOST_DEFAULT_* (0 from minor 0) */
};

/**
 * Opens and maps the segment `name` read-only, validates it and takes a
 * first consistent copy of its table.
 *
 * name: "/NAME" (one leading slash, no other, at most 250 bytes); NULL
 *       means $ZCAL_SEGMENT, or ZCAL_DEFAULT_SEGMENT when that is unset.
 * Returns 0 and sets *out, or -ENOENT, -EPROTO, -EAGAIN, -EACCES, -EINVAL,
 * -ENOMEM (*out is then NULL). Never crashes on what it finds, and never
 * maps or reads beyond the file size it checked (fstat).
 */
int zcal_open(const char *name, zcal_handle **out);

/** Unmaps and frees. NULL is a no-op. */
void zcal_close(zcal_handle *handle);

/**
 * The segment's current generation: one load from the mapping's first
 * page, no system call, about a nanosecond. It changes on every publish and whenever the segment was
 * replaced (a restarted agent retires the old one), and never repeats
 * across segments (it starts at the creation time in ns). A transport
 * caches a zcal_result per connection and looks up again only when
 * zcal_generation() != result.generation. Returns 0 for NULL.
 */
uint64_t zcal_generation(const zcal_handle *handle);

/**
 * Re-checks the segment's name: when it now refers to another segment
 * (agent restarted) or the file size changed, maps that one instead. A
 * lookup does this by itself when the segment is retired or its heartbeat
 * is older than ZCAL_RECHECK_AFTER_NS (at most once a second).
 * It first compares the file size with the mapping: a file that shrank is
 * no longer read (lookups then return -ESTALE until a reopen succeeds).
 * Returns 0 (also when nothing changed), or -ENOENT (the name is gone: the
 * handle keeps serving the last table it read), -EPROTO, -EAGAIN, -EACCES,
 * -ENOMEM (the handle keeps its current mapping, unless that shrank).
 */
int zcal_refresh(zcal_handle *handle);

/**
 * Fills a key from a socket address (AF_INET, AF_INET6; IPv4-mapped IPv6
 * addresses become IPv4). The interface is left empty.
 * Returns 0, -EINVAL (NULL or short), -EAFNOSUPPORT (other families).
 */
int zcal_key_from_sockaddr(const struct sockaddr *addr, socklen_t len,
                           struct zcal_key *key);

/**
 * Fills a key from numeric address text ("192.0.2.7", "2001:db8::1") and
 * an interface name; either may be NULL (not both).
 * Returns 0 or -EINVAL (unparseable address, name too long).
 */
int zcal_key_from_string(const char *address, const char *interface,
                         struct zcal_key *key);

/**
 * Finds the entry for `key` and `method`: the longest matching peer prefix,
 * else the loopback entry for a loopback address, else the interface entry,
 * else the host default. Takes a new copy of the table first when the
 * generation changed. About 20 ns with 256 entries on a current x86 core
 * (bench/shm_lookup_bench), no system call unless the generation changed.
 * Compares the file size with the mapping (fstat) before touching it when
 * the last comparison is 100 ms old or more.
 * Returns 0 and fills *out, -ENODATA (no entry for this method matches),
 * -EAGAIN, -EPROTO (the segment became corrupt), -ESTALE (the file shrank),
 * -EINVAL.
 */
int zcal_lookup(zcal_handle *handle, const struct zcal_key *key,
                uint8_t method, struct zcal_result *out);

/**
 * zcal_lookup keyed by a connected socket's peer address (getpeername).
 * Returns as zcal_lookup, and -ENOTCONN, -EBADF, -ENOTSOCK, -EAFNOSUPPORT
 * (not an IP socket).
 */
int zcal_lookup_fd(zcal_handle *handle, int fd, uint8_t method,
                   struct zcal_result *out);

/**
 * The decision for one cached result: 1 to send `size_bytes` with
 * zerocopy, 0 to copy. An INCONCLUSIVE verdict or an unknown verdict code
 * gives `fallback`.
 */
static inline int zcal_result_should_zerocopy(const struct zcal_result *r,
                                              uint64_t size_bytes,
                                              int fallback) {
  if (r->verdict != ZCAL_VERDICT_THRESHOLD && r->verdict != ZCAL_VERDICT_ALWAYS &&
      r->verdict != ZCAL_VERDICT_NEVER)
    return fallback != 0;
  return size_bytes >= r->zerocopy_from_bytes;
}

/**
 * Hot-path decision: 1 to send `size_bytes` with zerocopy, 0 to copy.
 * Returns `fallback` (as 0/1) when handle is NULL (no agent), no entry
 * matches, the segment cannot be read, the verdict is inconclusive, or the
 * agent's heartbeat is older than max_age_ns (0: no bound). Stale data
 * (republished at agent start) is used: it is the last good calibration.
 */
int zcal_should_zerocopy(zcal_handle *handle, const struct zcal_key *key,
                         uint8_t method, uint64_t size_bytes,
                         uint64_t max_age_ns, int fallback);

/**
 * Header fields of the table copy the handle holds (taken anew if the
 * generation changed); compares the file size first (fstat).
 * Returns 0, -EAGAIN, -EPROTO, -ESTALE, -EINVAL.
 */
int zcal_read_info(zcal_handle *handle, struct zcal_info *out);

/**
 * Entry `index` (0 <= index < info.count) of the same table copy as the
 * last zcal_read_info, as stored. Returns 0 or -EINVAL (index out of range).
 */
int zcal_read_entry(const zcal_handle *handle, uint32_t index,
                    struct zcal_shm_entry *out);

/**
 * (libzcal 1.2) The depth class a connection with `depth` zerocopy sends
 * in flight falls in, counting the send being decided (0 is taken as 1):
 * the largest class at or below the depth, ZCAL_DEPTH_STREAM from
 * ZCAL_DEPTH_STREAM_FROM on. 1..3 -> 1, 4..15 -> 4, 16..31 -> 16, 32.. ->
 * ZCAL_DEPTH_STREAM. A class below the depth, not above: it was measured
 * with fewer sends in flight, so with a cost per completion at least the
 * connection's, and its threshold errs towards copying (docs/shm-abi.md).
 */
uint16_t zcal_depth_class(uint32_t depth);

/**
 * (libzcal 1.2) zcal_lookup for a connection with `depth` zerocopy sends in
 * flight (counting this one; see zcal_depth_class): the entry of the
 * matching scope (found as zcal_lookup finds it) for the depth's class;
 * when that scope has none for the class, its stream entry, with
 * out->depth_fallback set. A class is never taken from a less specific
 * scope: the path measured matters more than the depth. Entries of a class
 * this reader does not know are skipped. Costs as zcal_lookup, plus one
 * array read. Returns as zcal_lookup.
 */
int zcal_lookup_depth(zcal_handle *handle, const struct zcal_key *key,
                      uint8_t method, uint32_t depth, struct zcal_result *out);

/**
 * (libzcal 1.2) zcal_should_zerocopy for a connection with `depth`
 * zerocopy sends in flight (see zcal_lookup_depth). zcal_should_zerocopy
 * answers for a stream, as it always did.
 */
int zcal_should_zerocopy_depth(zcal_handle *handle, const struct zcal_key *key,
                               uint8_t method, uint32_t depth,
                               uint64_t size_bytes, uint64_t max_age_ns,
                               int fallback);

/**
 * A sentence about the last failure of zcal_open, zcal_refresh, zcal_lookup
 * or zcal_lookup_fd in the calling thread ("segment /zcal: ABI major 2,
 * this reader reads 1: ..."); "" when there is none.
 */
const char *zcal_error_detail(void);

/* ---------------------------------------------------------------------- */
/* Per-connection guard (symbol version ZCAL_1.1)                         */
/* ---------------------------------------------------------------------- */

/*
 * The kernel may copy a zerocopy send after all (a route through a device
 * without scatter-gather, a local peer, loopback) and says so in each
 * completion: SO_EE_CODE_ZEROCOPY_COPIED in ee_code of a MSG_ZEROCOPY
 * notification, IORING_NOTIF_USAGE_ZC_COPIED in the res of an io_uring
 * notification CQE (with IORING_SEND_ZC_REPORT_USAGE). A connection whose
 * zerocopy sends are copied pays zerocopy's costs (pinning, completions)
 * and copies as well. A guard turns zerocopy off for such a connection, as
 * folly's and libfabric's sockets do for theirs:
 *
 *   ON       answers as the published threshold does (zcal_lookup for the
 *            socket's peer, re-done when the generation changes);
 *   OFF      after a completion reported as copied: answers 0 to the next
 *            retry_sends sends it would have answered 1 to, then
 *   PROBING  answers as ON: a completion reported as copied turns it OFF
 *            again, with retry_sends doubled (up to
 *            ZCAL_GUARD_RETRY_SENDS_MAX); a completion that was not copied
 *            turns it ON, with retry_sends back at ZCAL_GUARD_RETRY_SENDS.
 *
 * (libzcal 1.2) The answer is that of the connection's depth class
 * (zcal_depth_class): its depth is the send being decided, plus the sends
 * answered 1 that zcal_guard_completed has not yet reported complete
 * (in_flight), plus the sends answered 0 since a report of completions
 * last left nothing in flight (unreported, up to ZCAL_DEPTH_STREAM_FROM).
 * The last term is there because a copied send has no completion: a
 * connection that copies because its class says so would otherwise never
 * show the depth at which it would send with zerocopy, and a bulk stream
 * between the thresholds of depth 1 and of the stream would copy for good.
 * A connection whose sends wait for each other (request, reply) then
 * answers at a deeper class once in ZCAL_DEPTH_STREAM_FROM copied sends at
 * most, and the completion of that send takes it back; a stream keeps
 * sends in flight, and its class. An application that never reports
 * completions gets the stream's answer, as before 1.2.
 *
 * So a transient fallback (a route change) costs at most retry_sends
 * copied sends, and a lasting one an ever smaller share of probes. Any
 * copied completion counts, also from sends made before the guard turned
 * off. The per-send call, zcal_guard_should_zerocopy, makes no system call
 * and never allocates: one load of the segment's generation, a comparison
 * with the cached answer, and the state.
 *
 * The struct is the caller's (on the stack, in its connection object): one
 * per connection, not thread-safe, as its handle. Its fields are for
 * reading (counters, state); only the zcal_guard_* functions write them.
 * It has its size and reserved space, so that a later libzcal can add
 * fields without changing its size for callers built against this header.
 */

/** Answers no after a copied completion to this many sends, at first. */
#define ZCAL_GUARD_RETRY_SENDS UINT64_C(1024)
/** retry_sends doubles with each failed probe, up to this. */
#define ZCAL_GUARD_RETRY_SENDS_MAX (UINT64_C(1) << 20)
/** A guard without an answer (the lookup failed) looks up again after
 *  this many sends, or at the next generation: a handle whose segment
 *  shrank (-ESTALE) or whose writer is stuck (-EAGAIN) shows no new
 *  generation, and only a lookup can reopen it. */
#define ZCAL_GUARD_LOOKUP_RETRY_SENDS UINT64_C(1024)

/* zcal_guard.state */
#define ZCAL_GUARD_ON 0      /**< zerocopy as the threshold says */
#define ZCAL_GUARD_OFF 1     /**< copied completions seen: copy */
#define ZCAL_GUARD_PROBING 2 /**< trying zerocopy again */

struct zcal_guard {
  uint32_t size;      /**< bytes of this struct the library knows, set at init */
  uint8_t method;     /**< ZCAL_METHOD_* the connection sends with */
  uint8_t fallback;   /**< answer without an entry: 0 copy, 1 zerocopy */
  uint8_t state;      /**< ZCAL_GUARD_* */
  uint8_t have_result; /**< 1: `result` holds the answer in use */
  uint64_t generation; /**< segment generation `result` was read at */
  uint64_t max_age_ns; /**< heartbeat age beyond which `result` is not used */
  uint64_t sends_until_retry; /**< OFF: sends still answered 0 */
  uint64_t retry_sends;       /**< OFF lasts this many sends (1024..2^20) */
  uint64_t completions;       /**< reported with zcal_guard_completed */
  uint64_t copied;            /**< of them reported as copied */
  uint64_t turned_off;        /**< times the guard went OFF */
  uint64_t sends_until_lookup; /**< no answer: sends until it looks up again */
  union {
    zcal_handle *handle; /**< the segment (NULL: no agent) */
    uint64_t handle_word; /**< keeps the layout of 32-bit builds */
  };
  struct zcal_key key;       /**< the socket's peer */
  struct zcal_result result; /**< the cached answer of the stream class */
  /* (libzcal 1.2; zero from an older library) */
  uint64_t in_flight;   /**< sends answered 1, not yet reported complete */
  /** Per class (1, 4, 16, stream): sizes from this on are answered 1, the
   *  verdict and the fallback folded in; UINT64_MAX: never. */
  uint64_t class_from_bytes[ZCAL_DEPTH_CLASSES];
  uint32_t unreported;  /**< sends answered 0 since completions were reported */
  uint16_t depth_class; /**< ZCAL_DEPTH_* of the last answer */
  /** Bit k: class k (1, 4, 16, stream) has no entry of its own and
   *  answers with the scope's stream entry (zcal_result.depth_fallback). */
  uint8_t class_fallbacks;
  /** (libzcal 1.3) Bit k: class k has no usable entry and answers with
   *  the fallback (for the report's ZCAL_REPORT_BY_NO_ANSWER). */
  uint8_t class_no_answer;
  /** (libzcal 1.3) The report's counters this guard's answers go to:
   *  scope index * ZCAL_REPORT_METHODS + method, or UINT16_MAX (none). */
  uint16_t report_cell;
  /** (libzcal 1.3) Bit k: class k's entry is contradicted by the
   *  applications' reports (ZCAL_ENTRY_CONTRADICTED): the guard answers 0
   *  where that entry says 1, counted in the report as
   *  ZCAL_REPORT_BY_GUARD_OFF, until a lookup finds the flag cleared. */
  uint8_t class_contradicted;
  uint8_t reserved[13];      /**< zero; future fields come from here */
};
ZCAL_STATIC_ASSERT(sizeof(struct zcal_guard) == 256, "zcal_guard is 256 bytes");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_guard, handle) == 72, "handle at 72");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_guard, key) == 80, "key at 80");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_guard, result) == 120, "result at 120");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_guard, in_flight) == 192, "in_flight at 192");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_guard, unreported) == 232, "unreported at 232");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_guard, report_cell) == 240, "report_cell at 240");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_guard, class_contradicted) == 242,
                   "class_contradicted at 242");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_guard, reserved) == 243, "reserved at 243");

/**
 * Initialises `guard` (all of its `guard_size` bytes; pass sizeof *guard)
 * for the connected socket `fd`, keyed by its peer address (getpeername),
 * and looks up its threshold in `handle` (NULL: no agent; the guard then
 * answers `fallback`, guarded the same way). max_age_ns: a looked-up answer
 * whose agent heartbeat is older than this is not used (0: no bound), as
 * in zcal_should_zerocopy. The handle must outlive the guard.
 * Returns 0, -EINVAL (NULL guard, guard_size below sizeof(struct
 * zcal_guard)), -ENOTCONN, -EBADF, -ENOTSOCK (getpeername), -EAFNOSUPPORT
 * (not an IP socket). No failure of the lookup fails the init: without an
 * answer the guard uses `fallback`.
 */
int zcal_guard_init(struct zcal_guard *guard, size_t guard_size,
                    zcal_handle *handle, int fd, uint8_t method, int fallback,
                    uint64_t max_age_ns);

/**
 * zcal_guard_init for a key instead of a socket (a peer the transport
 * knows, or a socket not connected yet). Returns 0 or -EINVAL (NULL guard
 * or key, guard_size too small).
 */
int zcal_guard_init_key(struct zcal_guard *guard, size_t guard_size,
                        zcal_handle *handle, const struct zcal_key *key,
                        uint8_t method, int fallback, uint64_t max_age_ns);

/**
 * Per send: 1 to send `size_bytes` with zerocopy, 0 to copy; the caller
 * sends as answered (each 1 counts as a send in flight until reported
 * complete). The threshold of the connection's depth class (above; or the
 * fallback), turned to 0 while the guard is
 * OFF; each 0 given for that reason counts towards the retry. Looks up
 * again when the generation changed, and without an answer every
 * ZCAL_GUARD_LOOKUP_RETRY_SENDS sends. No system call (but in that lookup),
 * no allocation. Returns 0 for a NULL guard.
 */
int zcal_guard_should_zerocopy(struct zcal_guard *guard, uint64_t size_bytes);

/**
 * Reports zerocopy completions of this connection: `completions` of them,
 * `copied` of those reported as copied (a MSG_ZEROCOPY notification covers
 * ee_data - ee_info + 1 sends, all copied or not by its ee_code; an
 * io_uring notification CQE one). Moves the state as described above,
 * takes the completions off in_flight (not below 0) and, when that leaves
 * none in flight, sets unreported to 0.
 * Returns 0, or -EINVAL (NULL guard, copied > completions).
 */
int zcal_guard_completed(struct zcal_guard *guard, uint64_t completions,
                         uint64_t copied);

/* ---------------------------------------------------------------------- */
/* What the application sent: the report (symbol version ZCAL_1.3)        */
/* ---------------------------------------------------------------------- */

/*
 * A process that opts in (zcal_report_open, or ZCAL_REPORT=NAME in its
 * environment) counts what libzcal answered and what the kernel then did
 * in a POSIX shared-memory object of its own, "/zcal-report-<pid>"
 * (/dev/shm/zcal-report-<pid>), for the agent to read. Nothing is counted
 * in a process that did not opt in.
 *
 * Counted, by scope of the entry that answered (ZCAL_SCOPE_*, or
 * ZCAL_REPORT_SCOPE_NONE) and send method: answers 1 and 0 by reason
 * (ZCAL_REPORT_BY_*), bytes answered each way, completions and how many
 * were copied, message sizes in power-of-two buckets, and the depth class
 * of each answer. zcal_guard_should_zerocopy, zcal_should_zerocopy and
 * zcal_should_zerocopy_depth count their answers; zcal_guard_completed
 * counts completions, and zcal_report_completed does for callers of
 * zcal_should_zerocopy. zcal_lookup and zcal_result_should_zerocopy count
 * nothing (a transport that decides from a cached result is not seen).
 *
 * Cost: no system call and no allocation per send. With reporting off, a
 * send pays one load and a branch; with it on, a handful of stores into
 * the calling thread's own slot of the object (bench/shm_lookup_bench
 * prints both side by side; docs/client.md quotes them).
 *
 * Threads: every thread that sends takes a slot of its own at its first
 * counted call (one lock, once per thread) and writes it with plain
 * atomic stores, no locked instruction; its slot goes back to the pool
 * when the thread exits, counts kept. Threads beyond
 * ZCAL_REPORT_SLOTS - 1 share slot 0, written with atomic additions. So
 * the counting calls are as thread-safe as before (a guard still belongs
 * to one thread at a time), and zcal_report_open and zcal_report_close
 * may be called while other threads send: a send that races them is
 * counted or not.
 *
 * fork(): the child stops counting (its counts would mix with the
 * parent's); a program started by exec reads ZCAL_REPORT anew.
 * Lifetime: at zcal_report_close and at exit (including a dlclose of
 * libzcal) the object is marked closed, with its final counts. It stays
 * for the agent to read once more, fold into its name's totals and
 * remove when an agent is there to do so: the segment zcal_open last
 * opened by name, or ZCAL_SEGMENT's, or ZCAL_DEFAULT_SEGMENT, is another
 * process's, with a heartbeat at most 10 s old, not retired, and its owner
 * may unlink this process's object (root, the same user, or a /dev/shm
 * that is not sticky). Otherwise it is removed then, as nobody else would
 * remove it.
 * One left behind by a killed process is the agent's to remove
 * (docs/shm-abi.md, "Report objects").
 */

/** The environment variable that turns reporting on under that name. It
 *  is read once, at the first zcal_open, zcal_guard_init or
 *  zcal_guard_init_key of the process, and ignored when a report is
 *  already open; a name zcal_report_open would refuse turns reporting off
 *  with one line on stderr. */
#define ZCAL_REPORT_ENV "ZCAL_REPORT"
/** The object's name: this prefix, then the process id in decimal. */
#define ZCAL_REPORT_PREFIX "/zcal-report-"

/** "ZCALREP\0" read as a little-endian uint64. Written last at creation. */
#define ZCAL_REPORT_MAGIC UINT64_C(0x005045524c41435a)
/** Readers accept any minor of their major (fields are only appended). */
#define ZCAL_REPORT_ABI_MAJOR 1
#define ZCAL_REPORT_ABI_MINOR 1

/** Application names: 1..ZCAL_REPORT_NAME_SIZE-1 bytes, none of them '/'
 *  or a control character (below 0x20, 0x7f); other bytes (UTF-8) pass. */
#define ZCAL_REPORT_NAME_SIZE 64

/** Slots of the object: slot 0 is shared, the others one thread's each. */
#define ZCAL_REPORT_SLOTS 64
/** Scope index of answers that no entry gave (no agent, no entry, the
 *  agent's heartbeat too old, an inconclusive verdict): the fallback. It
 *  takes ZCAL_SCOPE_DISCARD's place, which never answers a lookup. */
#define ZCAL_REPORT_SCOPE_NONE 4
/** Scope indexes: ZCAL_SCOPE_HOST_DEFAULT..ZCAL_SCOPE_INTERFACE, NONE. */
#define ZCAL_REPORT_SCOPES 5
/** Method codes counted (0..7); answers for other codes are not. */
#define ZCAL_REPORT_METHODS 8
/** sizes[b] counts messages of 2^b..2^(b+1)-1 bytes (b = 0: 0 and 1);
 *  the last bucket everything from 2^(ZCAL_REPORT_SIZE_BUCKETS-1) on. */
#define ZCAL_REPORT_SIZE_BUCKETS 32

/* Why an answer was what it was: the second index of answers[][]. */
/** As the entry said (threshold, always, never) for the depth's class. */
#define ZCAL_REPORT_BY_THRESHOLD 0
/** The guard was OFF (copied completions) and turned a 1 into 0. */
#define ZCAL_REPORT_BY_GUARD_OFF 1
/** No usable entry: the caller's fallback (scope ZCAL_REPORT_SCOPE_NONE,
 *  or an inconclusive verdict of the scope that matched). */
#define ZCAL_REPORT_BY_NO_ANSWER 2
#define ZCAL_REPORT_REASONS 4 /**< the last one is reserved */

/* zcal_report_header.flags */
/** The owner closed the object (zcal_report_close, exit): the counts are
 *  final. Left for the agent to fold and remove, or being removed by its
 *  owner when no agent was there. */
#define ZCAL_REPORT_FLAG_CLOSED UINT32_C(0x1)

/* zcal_report_slot.flags */
/** Written by several threads with atomic additions; seq stays 0. */
#define ZCAL_REPORT_SLOT_SHARED UINT32_C(0x1)

/**
 * The object's header, at offset 0; ZCAL_REPORT_SLOTS slots follow from
 * header_size on, slot_size bytes apart. Host byte order. Everything but
 * flags, closed_ns and slots_used is written once, before the magic.
 */
struct zcal_report_header {
  uint64_t magic;            /**< ZCAL_REPORT_MAGIC, written last */
  uint16_t abi_major;        /**< ZCAL_REPORT_ABI_MAJOR */
  uint16_t abi_minor;        /**< ZCAL_REPORT_ABI_MINOR of the writer */
  uint32_t header_size;      /**< bytes; slot 0 starts here; multiple of 64 */
  uint32_t slot_size;        /**< bytes between slots; multiple of 64 */
  uint32_t slot_header_size; /**< bytes; a slot's cells start here */
  uint32_t cell_size;        /**< bytes between cells; multiple of 8 */
  uint16_t scopes;           /**< ZCAL_REPORT_SCOPES of the writer */
  uint16_t methods;          /**< ZCAL_REPORT_METHODS of the writer */
  uint16_t size_buckets;     /**< ZCAL_REPORT_SIZE_BUCKETS of the writer */
  uint16_t depth_classes;    /**< ZCAL_DEPTH_CLASSES of the writer */
  uint32_t slots;            /**< slots the object has room for */
  uint32_t slots_used;       /**< slots 0..slots_used-1 were ever written */
  uint32_t owner_pid;        /**< the writer, in its pid namespace */
  uint64_t total_size;       /**< bytes of the object (the file size) */
  uint64_t generation;       /**< this object's identity: never 0, never
                                  the same for two objects of one host */
  uint64_t created_ns;       /**< CLOCK_REALTIME at creation */
  uint64_t closed_ns;        /**< CLOCK_REALTIME at close, 0 while open */
  uint32_t owner_uid;        /**< as the writer says; trust fstat instead */
  uint32_t flags;            /**< ZCAL_REPORT_FLAG_* */
  char name[ZCAL_REPORT_NAME_SIZE]; /**< the application, NUL-padded */
  uint8_t reserved[104];      /**< zero; future fields come from here */
};

/**
 * Counters of one scope and method in one slot: cells[scope][method].
 * Every field only grows (modulo 2^64). A send adds to one answers
 * counter, to bytes and to one size bucket.
 */
struct zcal_report_cell {
  /** Answers by the depth class they were given at (1, 4, 16, stream:
   *  zcal_depth_class), answer (0 copy, 1 zerocopy) and ZCAL_REPORT_BY_*:
   *  one counter per send carries all three. */
  uint64_t answers[ZCAL_DEPTH_CLASSES][2][ZCAL_REPORT_REASONS];
  uint64_t bytes[2];       /**< bytes of the sends answered 0, 1 */
  uint64_t completions;    /**< zerocopy completions reported */
  uint64_t copied;         /**< of them, the kernel copied */
  uint64_t sizes[ZCAL_REPORT_SIZE_BUCKETS]; /**< answers by size bucket */
};

/**
 * One slot: its header, then ZCAL_REPORT_SCOPES x ZCAL_REPORT_METHODS
 * cells. One thread writes a slot at a time (but slot 0, see flags), each
 * changed word with one store (load + n), in no promised order. A reader
 * copies each 8-byte word with an atomic load: each is right on its own,
 * and only grows; a copy may hold part of a send (its answer and not yet
 * its size bucket), which the next copy completes.
 *
 * Report ABI 1.0 writers also kept a seqlock in `seq`
 * (odd while counting); 1.1 writers leave it 0. A reader that copies a
 * slot through the seqlock (retry while `seq` is odd or moved) reads both.
 */
struct zcal_report_slot {
  uint64_t seq;       /**< 0 (1.0 writers: a seqlock counter) */
  uint32_t flags;     /**< ZCAL_REPORT_SLOT_*, written before slots_used */
  uint32_t threads;   /**< threads that took this slot so far */
  uint8_t reserved[48];
  struct zcal_report_cell cells[ZCAL_REPORT_SCOPES][ZCAL_REPORT_METHODS];
};

#define ZCAL_REPORT_HEADER_SIZE_V1 256
#define ZCAL_REPORT_SLOT_HEADER_SIZE_V1 64
#define ZCAL_REPORT_CELL_SIZE_V1 544
ZCAL_STATIC_ASSERT(sizeof(struct zcal_report_header) == ZCAL_REPORT_HEADER_SIZE_V1,
                   "zcal_report_header is 256 bytes");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_header, slots) == 36, "slots at 36");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_header, owner_pid) == 44,
                   "owner_pid at 44");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_header, total_size) == 48,
                   "total_size at 48");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_header, generation) == 56,
                   "generation at 56");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_header, flags) == 84,
                   "flags at 84");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_header, name) == 88, "name at 88");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_header, reserved) == 152,
                   "reserved at 152");
ZCAL_STATIC_ASSERT(sizeof(struct zcal_report_cell) == ZCAL_REPORT_CELL_SIZE_V1,
                   "zcal_report_cell is 544 bytes");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_cell, bytes) == 256, "bytes at 256");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_cell, completions) == 272,
                   "completions at 272");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_cell, sizes) == 288, "sizes at 288");
ZCAL_STATIC_ASSERT(offsetof(struct zcal_report_slot, cells) ==
                       ZCAL_REPORT_SLOT_HEADER_SIZE_V1,
                   "cells at 64");
ZCAL_STATIC_ASSERT(sizeof(struct zcal_report_slot) == 21824,
                   "zcal_report_slot is 21824 bytes");

/**
 * Turns reporting on for this process under the application name `name`
 * (see ZCAL_REPORT_NAME_SIZE): creates ZCAL_REPORT_PREFIX<pid> (O_EXCL,
 * mode 0644 whatever the umask, so that the agent's user can read it),
 * 1.4 MB of which only the pages threads write are allocated.
 * Returns 0, or -EINVAL (NULL, empty, too long, '/' or a control
 * character), -EBUSY (a report is already open in this process),
 * -EEXIST (an object of this pid, not closed, is left over from a process
 * of the same pid, here or in another pid namespace sharing /dev/shm:
 * remove it if no such process runs), -EACCES, -ENOMEM, -ENOSPC
 * (shm_open, ftruncate, mmap). zcal_error_detail() then says what failed.
 * A closed object of this pid still waiting for the agent (this
 * process's previous report, or an exited process's) is removed and
 * replaced: what it counted since the agent's last read is not counted.
 */
int zcal_report_open(const char *name);

/**
 * Marks the object closed, its counts final, and leaves it for a live
 * agent to fold and remove, or removes its name when none is there (see
 * "Lifetime" above: a few system calls, here and at exit, none per send,
 * none that blocks). Reporting is off until the next zcal_report_open.
 * The mapping stays until exit (the pages written, a few KiB per sending
 * thread), so that a thread counting at that moment never touches
 * unmapped memory. No-op when none is open.
 */
void zcal_report_close(void);

/**
 * Counts completions of zerocopy sends decided by zcal_should_zerocopy or
 * zcal_should_zerocopy_depth, against the scope those decided by: pass the
 * same handle, key, method and max_age_ns (the lookup is repeated, about
 * 20 ns; report a batch of completions at once). `copied` as in
 * zcal_guard_completed. Guards count their own (zcal_guard_completed).
 * Returns 0 (also when reporting is off), or -EINVAL (NULL key, copied >
 * completions).
 */
int zcal_report_completed(zcal_handle *handle, const struct zcal_key *key,
                          uint8_t method, uint64_t max_age_ns,
                          uint64_t completions, uint64_t copied);

#ifdef __cplusplus
}
#endif

#endif /* ZCAL_ZCAL_H */
