/* Mapping, validating and copying the segment. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "handle.h"
#include "report.h"

#define LOAD_ACQ ZCAL_LOAD_ACQ
#define LOAD_RELAXED ZCAL_LOAD_RELAXED

/* Larger files are not zcal segments (ZCAL_MAX_CAPACITY x 4 KiB entries). */
#define ZCAL_MAX_SEGMENT_BYTES ((size_t)1 << 29)
#define ZCAL_MAX_ENTRY_SIZE 4096u
#define ZCAL_CORRUPT ": the segment is corrupt; restart the agent to recreate it"
#define ZCAL_RECHECK_INTERVAL_NS UINT64_C(1000000000)

static void cpu_relax(unsigned attempt) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
  /* The writer may be preempted mid-publish on a busy host: let it run. */
  if ((attempt & 255u) == 255u) sched_yield();
}

static const struct zcal_shm_header *header_of(const zcal_handle *h) {
  return (const struct zcal_shm_header *)(const void *)h->base;
}

static void point_generation_word(zcal_handle *h) {
  h->generation_word =
      h->broken ? &h->dead_generation : &header_of(h)->generation;
}

/* From here on the mapping is not touched again: only a reopen of the
 * name can replace it. */
static void mark_broken(zcal_handle *h, int error) {
  h->broken = 1;
  h->broken_error = error;
  point_generation_word(h);
}

/* Is the file still the size we mapped? Marks the handle broken when not.
 * The size is the one thing a reader can check without trusting the
 * mapping: a page beyond the end of the file raises SIGBUS when touched. */
static int size_unchanged(zcal_handle *h) {
  if (h->broken || h->fd < 0) return !h->broken;
  struct stat st;
  if (fstat(h->fd, &st) == 0 && st.st_size >= 0 &&
      (uint64_t)st.st_size == h->mapped_bytes)
    return 1;
  mark_broken(h, -ESTALE);
  zcal_internal_set_detail(
      "segment %s changed size under the reader (%zu bytes mapped, %lld now): "
      "it is no longer read; the name is reopened at most once a second",
      h->name, h->mapped_bytes, (long long)st.st_size);
  return 0;
}

void zcal_internal_check_size(zcal_handle *h, uint64_t now_ns) {
  h->size_checked_ns = now_ns;
  (void)size_unchanged(h);
}

/* The header fields validated at open must not change: the writer never
 * rewrites them, so a change means someone else wrote over the header. */
static int header_unchanged(zcal_handle *h) {
  const struct zcal_shm_header *hdr = header_of(h);
  uint64_t magic = LOAD_ACQ(&hdr->magic);
  uint16_t abi_major = LOAD_RELAXED(&hdr->abi_major);
  uint32_t header_size = LOAD_RELAXED(&hdr->header_size);
  uint32_t entry_size = LOAD_RELAXED(&hdr->entry_size);
  uint32_t capacity = LOAD_RELAXED(&hdr->capacity);
  if (magic == ZCAL_MAGIC && abi_major == h->abi_major &&
      header_size == h->header_size && entry_size == h->entry_size &&
      capacity == h->capacity)
    return 1;
  mark_broken(h, -EPROTO);
  zcal_internal_set_detail(
      "segment %s: its header changed under the reader (magic 0x%016" PRIx64
      ", ABI major %u, header size %" PRIu32 ", entry size %" PRIu32
      ", capacity %" PRIu32 ")" ZCAL_CORRUPT,
      h->name, magic, (unsigned)abi_major, header_size, entry_size, capacity);
  return 0;
}

static int check_name(const char *name) {
  size_t len = strlen(name);
  if (len < 2 || len > ZCAL_NAME_MAX - 1 || name[0] != '/' ||
      strchr(name + 1, '/') != NULL || strcmp(name, "/.") == 0 ||
      strcmp(name, "/..") == 0) {
    zcal_internal_set_detail(
        "segment name \"%s\" is invalid: it must be \"/NAME\" with one "
        "leading slash and 1 to 250 more bytes, none of them a slash",
        name);
    return -EINVAL;
  }
  return 0;
}

static int validate_entry(const zcal_handle *h, uint32_t index,
                          const struct zcal_shm_entry *e) {
  /* An entry of a depth class this reader does not know (a later minor's,
   * or garbage) is skipped, not checked: its fields may mean what that
   * minor says, and one such entry must not cost the reader the table. */
  if (zcal_internal_class_index(e->depth_class) < 0) return 0;
  if (e->confidence_ppm > 1000000u && e->confidence_ppm != ZCAL_CONFIDENCE_UNKNOWN) {
    zcal_internal_set_detail("segment %s: entry %" PRIu32
                             ": confidence %" PRIu32 " ppm exceeds 1000000" ZCAL_CORRUPT,
                             h->name, index, e->confidence_ppm);
    return -EPROTO;
  }
  if (e->verdict == ZCAL_VERDICT_THRESHOLD &&
      !(e->entry_flags & ZCAL_ENTRY_HAS_THRESHOLD)) {
    zcal_internal_set_detail("segment %s: entry %" PRIu32
                             ": verdict threshold without a threshold" ZCAL_CORRUPT,
                             h->name, index);
    return -EPROTO;
  }
  if (e->scope == ZCAL_SCOPE_PEER) {
    unsigned max = e->family == ZCAL_FAMILY_IPV4   ? 32u
                   : e->family == ZCAL_FAMILY_IPV6 ? 128u
                                                   : 0u;
    if (max == 0) {
      zcal_internal_set_detail("segment %s: entry %" PRIu32
                               ": peer address family %u is neither 4 nor 6" ZCAL_CORRUPT,
                               h->name, index, (unsigned)e->family);
      return -EPROTO;
    }
    if (e->prefix_len > max) {
      zcal_internal_set_detail("segment %s: entry %" PRIu32
                               ": prefix length %u exceeds %u" ZCAL_CORRUPT,
                               h->name, index, (unsigned)e->prefix_len, max);
      return -EPROTO;
    }
  } else if (e->scope == ZCAL_SCOPE_INTERFACE) {
    if (e->interface[0] == '\0' ||
        memchr(e->interface, '\0', sizeof e->interface) == NULL) {
      zcal_internal_set_detail("segment %s: entry %" PRIu32
                               ": interface name empty or not terminated" ZCAL_CORRUPT,
                               h->name, index);
      return -EPROTO;
    }
  }
  /* ZCAL_SCOPE_DISCARD and scopes a later minor version appends carry no
   * traffic this reader routes: the index skips them, and tools read them
   * with zcal_read_entry. */
  return 0;
}

/* The header's fields that change with each publish, as one seqlock read
 * saw them. */
struct published_header {
  uint64_t generation;
  uint64_t publish_time_ns;
  uint32_t count;
  uint32_t flags;
  uint32_t host_default_source;
};

static void load_published_header(const struct zcal_shm_header *hdr,
                                  struct published_header *out) {
  out->generation = LOAD_ACQ(&hdr->generation);
  out->publish_time_ns = LOAD_ACQ(&hdr->publish_time_ns);
  out->count = LOAD_ACQ(&hdr->count);
  out->flags = LOAD_ACQ(&hdr->flags);
  out->host_default_source = LOAD_ACQ(&hdr->host_default_source);
}

/* Copies `count` entries into h->scratch, word by word with acquire loads,
 * so that the seqlock's closing load stays after them. */
static void copy_entries(zcal_handle *h, uint32_t count) {
  const unsigned char *src = h->base + h->header_size;
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t *words = (const uint64_t *)(const void *)src;
    uint64_t copy[ZCAL_ENTRY_SIZE_V1 / 8];
    for (unsigned w = 0; w < ZCAL_ENTRY_SIZE_V1 / 8; ++w)
      copy[w] = LOAD_ACQ(&words[w]);
    memcpy(&h->scratch[i], copy, sizeof copy);
    src += h->entry_size;
  }
}

/* Validates the consistent copy in h->scratch and makes it the handle's
 * table. */
static int adopt_copy(zcal_handle *h, const struct published_header *seen) {
  for (uint32_t i = 0; i < seen->count; ++i) {
    int rc = validate_entry(h, i, &h->scratch[i]);
    if (rc != 0) return rc;
  }
  struct zcal_shm_entry *old = h->entries;
  h->entries = h->scratch;
  h->scratch = old;
  h->generation = seen->generation;
  h->publish_time_ns = seen->publish_time_ns;
  h->count = seen->count;
  h->flags = seen->flags;
  h->host_default_source = seen->host_default_source;
  h->busy = 0;
  zcal_internal_build_index(h);
  return 0;
}

/* The writer held the seqlock (odd, or moving) through every attempt: the
 * handle remembers `seq`, so that the next call fails fast while it stays. */
static int writer_busy(zcal_handle *h, uint64_t seq) {
  h->busy = 1;
  h->busy_seq = seq;
  zcal_internal_set_detail(
      "segment %s: the writer held the seqlock through %d attempts "
      "(seq %" PRIu64 "); it may have died mid-publish: try again, or "
      "restart the agent",
      h->name, ZCAL_READ_RETRIES, seq);
  return -EAGAIN;
}

/* One seqlock read of the whole table into h->scratch; on success the
 * scratch copy becomes the handle's table. */
static int take_copy(zcal_handle *h) {
  const struct zcal_shm_header *hdr = header_of(h);
  const uint64_t *seq_word = &hdr->seq;
  if (h->busy && LOAD_ACQ(seq_word) == h->busy_seq) return -EAGAIN;

  uint64_t s1 = 0;
  for (unsigned attempt = 0; attempt < ZCAL_READ_RETRIES; ++attempt) {
    s1 = LOAD_ACQ(seq_word);
    if (s1 & 1u) {
      cpu_relax(attempt);
      continue;
    }
    struct published_header seen;
    load_published_header(hdr, &seen);
    if (seen.count > h->capacity) {
      if (LOAD_RELAXED(seq_word) != s1) continue;
      zcal_internal_set_detail("segment %s: entry count %" PRIu32
                               " exceeds its capacity %" PRIu32
                               ZCAL_CORRUPT,
                               h->name, seen.count, h->capacity);
      return -EPROTO;
    }
    copy_entries(h, seen.count);
    /* The acquire loads above keep this load after them. */
    if (LOAD_RELAXED(seq_word) != s1) continue;
    return adopt_copy(h, &seen);
  }
  return writer_busy(h, s1);
}

/* Checks the fixed part of the header (magic, ABI major, geometry) against
 * the mapping, and copies it into `fixed`. */
static int check_header(const zcal_handle *h, struct zcal_shm_header *fixed) {
  if (h->mapped_bytes < sizeof(struct zcal_shm_header)) {
    zcal_internal_set_detail(
        "segment %s is %zu bytes, smaller than a zcal header (%d bytes): "
        "it is truncated or not a zcal segment; restart the agent to "
        "recreate it",
        h->name, h->mapped_bytes, ZCAL_HEADER_SIZE_V1);
    return -EPROTO;
  }
  const struct zcal_shm_header *hdr = header_of(h);
  /* Pairs with the writer's release store of the magic, which it stores
   * after every other field of a new segment. */
  uint64_t magic = LOAD_ACQ(&hdr->magic);
  if (magic != ZCAL_MAGIC) {
    zcal_internal_set_detail(
        "segment %s: magic 0x%016" PRIx64 " is not zcal's (0x%016" PRIx64
        "): it is not a zcal segment; remove it or name the agent's segment",
        h->name, magic, ZCAL_MAGIC);
    return -EPROTO;
  }
  memcpy(fixed, hdr, sizeof *fixed);
  if (fixed->abi_major != ZCAL_ABI_MAJOR) {
    zcal_internal_set_detail(
        "segment %s: ABI major version %u, this reader understands %d: "
        "use a client library and agent of the same major version",
        h->name, (unsigned)fixed->abi_major, ZCAL_ABI_MAJOR);
    return -EPROTO;
  }
  if (fixed->header_size < ZCAL_HEADER_SIZE_V1 || fixed->header_size % 8 != 0 ||
      fixed->header_size > h->mapped_bytes ||
      fixed->entry_size < ZCAL_ENTRY_SIZE_V1 || fixed->entry_size % 8 != 0 ||
      fixed->entry_size > ZCAL_MAX_ENTRY_SIZE ||
      fixed->capacity > ZCAL_MAX_CAPACITY) {
    zcal_internal_set_detail(
        "segment %s: header size %" PRIu32 ", entry size %" PRIu32
        " or capacity %" PRIu32 " out of range" ZCAL_CORRUPT,
        h->name, fixed->header_size, fixed->entry_size, fixed->capacity);
    return -EPROTO;
  }
  uint64_t needed = (uint64_t)fixed->header_size +
                    (uint64_t)fixed->capacity * fixed->entry_size;
  if (needed > h->mapped_bytes) {
    zcal_internal_set_detail(
        "segment %s is %zu bytes, its header says %" PRIu64
        " (capacity %" PRIu32 "): it is truncated; restart the agent to "
        "recreate it",
        h->name, h->mapped_bytes, needed, fixed->capacity);
    return -EPROTO;
  }
  return 0;
}

/* The private copies and the lookup index for `capacity` entries: the
 * table, its scratch twin, the answers, and the hash slots and filters
 * sized to the next power of two of ZCAL_SLOTS_PER_ENTRY per entry. */
static int allocate_tables(zcal_handle *h, uint32_t capacity) {
  size_t n = capacity ? capacity : 1;
  uint32_t slots = 2;
  unsigned slot_bits = 1;
  while (slots < ZCAL_SLOTS_PER_ENTRY * n) {
    slots <<= 1;
    ++slot_bits;
  }
  h->entries = calloc(n, sizeof *h->entries);
  h->scratch = calloc(n, sizeof *h->scratch);
  /* Aligned so that each answer sits in one cache line (handle.h). */
  h->answers = aligned_alloc(_Alignof(struct zcal_answer), n * sizeof *h->answers);
  h->interfaces = calloc(n, sizeof *h->interfaces);
  h->depth_entry = calloc(n, sizeof *h->depth_entry);
  h->slots = calloc(slots, sizeof *h->slots);
  uint32_t buckets = slots / (ZCAL_SLOTS_PER_ENTRY / ZCAL_FILTER_PER_ENTRY);
  h->v4_filter = calloc(buckets, sizeof *h->v4_filter);
  h->v6_filter = calloc(buckets, sizeof *h->v6_filter);
  if (!h->entries || !h->scratch || !h->answers || !h->interfaces ||
      !h->depth_entry || !h->slots || !h->v4_filter || !h->v6_filter) {
    zcal_internal_set_detail("segment %s: out of memory for %zu entries",
                             h->name, n);
    return -ENOMEM;
  }
  h->slot_mask = slots - 1;
  h->slot_shift = 64u - slot_bits;
  h->filter_mask = buckets - 1;
  h->filter_shift = h->slot_shift + 1u;
  return 0;
}

/* Validates the geometry of h->base/h->mapped_bytes, allocates the private
 * buffers and takes the first copy. */
static int attach_mapping(zcal_handle *h) {
  struct zcal_shm_header fixed;
  int rc = check_header(h, &fixed);
  if (rc != 0) return rc;
  h->header_size = fixed.header_size;
  h->entry_size = fixed.entry_size;
  h->capacity = fixed.capacity;
  h->abi_major = fixed.abi_major;
  h->abi_minor = fixed.abi_minor;
  h->agent_pid = fixed.agent_pid;
  h->created_ns = fixed.created_ns;
  rc = allocate_tables(h, fixed.capacity);
  if (rc != 0) return rc;
  h->generation = 0;
  h->size_checked_ns = zcal_internal_now_ns();
  point_generation_word(h);
  rc = take_copy(h);
  /* A fresh handle that could not copy must not look up to date. */
  if (rc != 0) h->generation = 0;
  return rc;
}

static void release(zcal_handle *h) {
  if (h->owns_mapping && h->base) munmap((void *)(uintptr_t)h->base, h->mapped_bytes);
  if (h->fd >= 0) close(h->fd);
  free(h->entries);
  free(h->scratch);
  free(h->answers);
  free(h->interfaces);
  free(h->depth_entry);
  free(h->slots);
  free(h->v4_filter);
  free(h->v6_filter);
}

void zcal_close(zcal_handle *h) {
  if (!h) return;
  release(h);
  free(h);
}

static zcal_handle *new_handle(const char *name) {
  zcal_handle *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->fd = -1;
  snprintf(h->name, sizeof h->name, "%s", name);
  h->generation_word = &h->dead_generation;
  return h;
}

/* shm_open of the name, read-only and never through a symbolic link. */
static int open_segment_fd(zcal_handle *h, const char *name) {
  h->fd = shm_open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
  if (h->fd >= 0) return 0;
  int err = errno;
  if (err == ENOENT)
    zcal_internal_set_detail("no segment %s (/dev/shm%s): no zcal agent has "
                             "published on this host yet",
                             name, name);
  else if (err == ELOOP)
    zcal_internal_set_detail("segment %s is a symbolic link: refusing it; "
                             "remove it and restart the agent",
                             name);
  else
    zcal_internal_set_detail("cannot open segment %s: %s", name,
                             strerror(err));
  return err == ELOOP ? -EPROTO : -err;
}

/* The file must be a regular file of a segment's size that not every user
 * can write; records its identity and size in h. */
static int check_segment_file(zcal_handle *h, const char *name) {
  struct stat st;
  if (fstat(h->fd, &st) != 0) {
    int err = errno;
    zcal_internal_set_detail("cannot stat segment %s: %s", name, strerror(err));
    return -err;
  }
  if (!S_ISREG(st.st_mode) || st.st_size < 0 ||
      (uint64_t)st.st_size > ZCAL_MAX_SEGMENT_BYTES) {
    zcal_internal_set_detail("segment %s is not a regular file of at most "
                             "%zu bytes: not a zcal segment; remove it",
                             name, ZCAL_MAX_SEGMENT_BYTES);
    return -EPROTO;
  }
  if (st.st_mode & S_IWOTH) {
    /* Any local user could rewrite, truncate or replace its contents: the
     * agent never makes one (its writer refuses world-writable modes). */
    zcal_internal_set_detail(
        "segment %s is writable by every user (mode 0%03o): refusing it; "
        "remove it and let the agent recreate it (mode 0644 or 0640)",
        name, (unsigned)(st.st_mode & 07777));
    return -EPROTO;
  }
  h->dev = st.st_dev;
  h->ino = st.st_ino;
  h->mapped_bytes = (size_t)st.st_size;
  return 0;
}

/* Maps the file read-only; one smaller than a header is left unmapped
 * (attach_mapping says what is wrong with it). */
static int map_segment(zcal_handle *h, const char *name) {
  if (h->mapped_bytes < sizeof(struct zcal_shm_header)) return 0;
  void *base = mmap(NULL, h->mapped_bytes, PROT_READ, MAP_SHARED, h->fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    zcal_internal_set_detail("cannot map segment %s: %s", name,
                             strerror(err));
    h->mapped_bytes = 0;
    return -err;
  }
  h->base = base;
  h->owns_mapping = 1;
  return 0;
}

static int open_by_name(const char *name, zcal_handle **out) {
  zcal_handle *h = new_handle(name);
  if (!h) return -ENOMEM;
  int rc = open_segment_fd(h, name);
  if (rc == 0) rc = check_segment_file(h, name);
  if (rc == 0) rc = map_segment(h, name);
  if (rc == 0) rc = attach_mapping(h);
  if (rc != 0) {
    zcal_close(h);
    return rc;
  }
  *out = h;
  return 0;
}

int zcal_open(const char *name, zcal_handle **out) {
  zcal_internal_report_env();
  if (!out) return -EINVAL;
  *out = NULL;
  if (!name) {
    name = getenv(ZCAL_SEGMENT_ENV);
    if (!name || !*name) name = ZCAL_DEFAULT_SEGMENT;
  }
  int rc = check_name(name);
  if (rc == 0) rc = open_by_name(name, out);
  if (rc == 0) zcal_internal_report_segment(name);
  return rc;
}

int zcal_internal_attach(const void *base, size_t bytes, zcal_handle **out) {
  if (!out || (!base && bytes) || ((uintptr_t)base & 7u)) return -EINVAL;
  *out = NULL;
  zcal_handle *h = new_handle("(memory)");
  if (!h) return -ENOMEM;
  h->base = base;
  h->mapped_bytes = bytes;
  int rc = attach_mapping(h);
  if (rc != 0) {
    zcal_close(h);
    return rc;
  }
  *out = h;
  return 0;
}

uint64_t zcal_generation(const zcal_handle *h) {
  if (!h) return 0;
  return LOAD_ACQ(h->generation_word);
}

/* Does the name still refer to the file we map, at the size we map? */
static int name_unchanged(const zcal_handle *h, int *err) {
  int fd = shm_open(h->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
  if (fd < 0) {
    *err = errno;
    return 0;
  }
  struct stat st;
  int same = fstat(fd, &st) == 0 && st.st_dev == h->dev &&
             st.st_ino == h->ino && (uint64_t)st.st_size == h->mapped_bytes;
  close(fd);
  *err = 0;
  return same;
}

int zcal_refresh(zcal_handle *h) {
  if (!h) return -EINVAL;
  if (h->fd < 0) return h->broken ? h->broken_error : 0;
  h->size_checked_ns = zcal_internal_now_ns();
  if (size_unchanged(h)) {
    int err = 0;
    if (name_unchanged(h, &err)) return 0;
    if (err == ENOENT) {
      zcal_internal_set_detail("segment %s was removed; still serving the "
                               "table read at generation %" PRIu64,
                               h->name, h->generation);
      return -ENOENT;
    }
  }
  zcal_handle *fresh = NULL;
  int rc = open_by_name(h->name, &fresh);
  if (rc != 0) return rc;
  struct zcal_handle tmp = *h;
  *h = *fresh;
  *fresh = tmp;
  point_generation_word(h);
  h->last_recheck_ns = fresh->last_recheck_ns;
  zcal_close(fresh);
  return 0;
}

static int recheck_due(zcal_handle *h, uint64_t now_ns) {
  if (h->last_recheck_ns != 0 && now_ns >= h->last_recheck_ns &&
      now_ns - h->last_recheck_ns < ZCAL_RECHECK_INTERVAL_NS)
    return 0;
  h->last_recheck_ns = now_ns;
  return 1;
}

void zcal_internal_maybe_recheck(zcal_handle *h, uint64_t now_ns,
                                 uint64_t heartbeat_ns) {
  if (h->fd < 0) return;
  int due = (h->flags & ZCAL_FLAG_RETIRED) ||
            (now_ns > heartbeat_ns && now_ns - heartbeat_ns > ZCAL_RECHECK_AFTER_NS);
  if (due && recheck_due(h, now_ns)) (void)zcal_refresh(h);
}

/* A broken handle answers with its error until the name can be reopened,
 * tried at most once a second. */
static int reopen_broken(zcal_handle *h) {
  if (h->fd >= 0 && recheck_due(h, zcal_internal_now_ns())) {
    const int error = h->broken_error;
    /* Each sentence cut to 319 bytes, on purpose: both go into one detail. */
    char why[320];
    snprintf(why, sizeof why, "%.319s", zcal_error_detail());
    const int rc = zcal_refresh(h);
    if (rc == 0) return 0;
    char reopen[320];
    snprintf(reopen, sizeof reopen, "%.319s", zcal_error_detail());
    zcal_internal_set_detail("%s; reopening the name failed: %s", why, reopen);
    return error;
  }
  zcal_internal_set_detail(
      "segment %s: %s; it is no longer read, and the name is reopened at "
      "most once a second",
      h->name,
      h->broken_error == -ESTALE ? "the file changed size under the reader"
                                 : "its header changed under the reader");
  return h->broken_error;
}

int zcal_internal_sync(zcal_handle *h) {
  if (!h->broken && h->busy &&
      LOAD_ACQ(&header_of(h)->seq) == h->busy_seq)
    return -EAGAIN;
  /* A publish is rare; checking the size once per publish, before the copy
   * reads the table's pages, keeps a segment shrunk in place from faulting
   * this reader (SIGBUS). */
  h->size_checked_ns = zcal_internal_now_ns();
  if (size_unchanged(h)) (void)header_unchanged(h);
  if (h->broken) return reopen_broken(h);
  return take_copy(h);
}
