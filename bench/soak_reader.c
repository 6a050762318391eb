/*
 * soak_reader: one of bench/soak.py's reader processes. It calls libzcal
 * (zcal_lookup, zcal_should_zerocopy) in paced batches and checks every
 * answer against the table it read itself from the segment, independently
 * of libzcal (its own mapping and seqlock copy, from the layout in zcal.h).
 *
 * A batch is judged against the table(s) that can have answered it: the
 * reader copies the table before (A) and after (B) the batch. Same seqlock
 * counter: every answer must be A's. Exactly one write in between (seq
 * moved by 2): each answer must be A's or B's, and a zcal_lookup result
 * must match, field by field, the table of the generation it reports; a
 * copy mixing two tables (a torn read) matches neither. More writes than
 * one: the batch is not judged (counted as skipped), so that a correct
 * agent never produces a false "wrong read".
 *
 * usage: soak_reader SEGMENT   (runs until SIGTERM/SIGINT, then prints
 *        "lookups=N batches=N spanning=N skipped=N wrong=N errors=N" on
 *        stdout; spanning: batches judged across one write)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zcal/zcal.h>

#define MAX_ENTRIES 1024
#define MAX_KEYS 64

struct table {
  uint64_t seq, generation;
  uint32_t count, flags;
  struct zcal_shm_entry entries[MAX_ENTRIES];
};

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static unsigned long long lookups, batches, spanning, skipped, wrong, errors, busy;

/* Says what an error was, for the first few: a count alone cannot tell a
 * seqlock held through the retry bound (-EAGAIN) from a bad copy. */
static void report_error(const char *what, int rc) {
  if (++errors > 10) return;
  fprintf(stderr, "soak_reader %d: %s: %s (%d)\n", (int)getpid(), what,
          rc < 0 ? strerror(-rc) : "failed", rc);
}

/* The segment, mapped read-only by this reader; remapped when its size or
 * inode changes (the agent replaced it). */
static const char *segment;
static const uint64_t *map;
static size_t map_bytes;
static ino_t map_ino;

static int remap(void) {
  char path[300];
  snprintf(path, sizeof path, "/dev/shm%s", segment);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < ZCAL_HEADER_SIZE_V1) {
    close(fd);
    return -EPROTO;
  }
  if (map && st.st_ino == map_ino && (size_t)st.st_size == map_bytes) {
    close(fd);
    return 0;
  }
  if (map) munmap((void *)map, map_bytes);
  map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    map = NULL;
    return -ENOMEM;
  }
  map_bytes = (size_t)st.st_size;
  map_ino = st.st_ino;
  return 0;
}

/* The seqlock copy of zcal.h's header comment, word by word. 0 or -1.
 * This is the soak's oracle, not a hot path: it yields to a writer that
 * was preempted mid-publish and waits up to about a second for it. */
static int copy_table(struct table *t) {
  for (int attempt = 0; attempt < 1000000; ++attempt) {
    if (attempt % 64 == 63) sched_yield();
    uint64_t s1 = __atomic_load_n(&map[3], __ATOMIC_ACQUIRE);
    if (s1 & 1) continue;
    uint64_t hdr[ZCAL_HEADER_SIZE_V1 / 8];
    for (size_t i = 0; i < ZCAL_HEADER_SIZE_V1 / 8; ++i)
      hdr[i] = __atomic_load_n(&map[i], __ATOMIC_ACQUIRE);
    struct zcal_shm_header h;
    memcpy(&h, hdr, sizeof h);
    if (h.magic != ZCAL_MAGIC || h.entry_size != ZCAL_ENTRY_SIZE_V1 ||
        h.header_size < ZCAL_HEADER_SIZE_V1 || h.count > MAX_ENTRIES ||
        h.header_size + (uint64_t)h.count * h.entry_size > map_bytes) {
      if (__atomic_load_n(&map[3], __ATOMIC_RELAXED) != s1) continue;
      return -1;
    }
    const uint64_t *words = map + h.header_size / 8;
    uint64_t *out = (uint64_t *)t->entries;
    for (size_t i = 0; i < (size_t)h.count * (ZCAL_ENTRY_SIZE_V1 / 8); ++i)
      out[i] = __atomic_load_n(&words[i], __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&map[3], __ATOMIC_RELAXED) != s1) continue;
    t->seq = s1;
    t->generation = h.generation;
    t->count = h.count;
    t->flags = h.flags;
    return 0;
  }
  return -1;
}

static int prefix_matches(const uint8_t *a, const uint8_t *b, unsigned bits) {
  for (unsigned i = 0; i < bits; ++i) {
    const unsigned mask = 0x80u >> (i % 8);
    if ((a[i / 8] & mask) != (b[i / 8] & mask)) return 0;
  }
  return 1;
}

static int is_loopback(const struct zcal_key *k) {
  static const uint8_t lo6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  if (k->family == ZCAL_FAMILY_IPV4) return k->address[0] == 127;
  if (k->family == ZCAL_FAMILY_IPV6) return memcmp(k->address, lo6, 16) == 0;
  return strcmp(k->interface, "lo") == 0;
}

/* The entry that answers (key, method) in t, by zcal_lookup's rule as
 * documented in zcal.h (the first entry wins a tie); NULL for none. */
static const struct zcal_shm_entry *expected(const struct table *t,
                                             const struct zcal_key *k, uint8_t m) {
  const struct zcal_shm_entry *peer = NULL, *loop = NULL, *ifc = NULL, *def = NULL;
  for (uint32_t i = 0; i < t->count; ++i) {
    const struct zcal_shm_entry *e = &t->entries[i];
    if (e->method != m) continue;
    if (e->scope == ZCAL_SCOPE_PEER && e->family == k->family && k->family != 0 &&
        prefix_matches(e->address, k->address, e->prefix_len) &&
        (!peer || e->prefix_len > peer->prefix_len))
      peer = e;
    if (e->scope == ZCAL_SCOPE_LOOPBACK && !loop) loop = e;
    if (e->scope == ZCAL_SCOPE_INTERFACE && !ifc && k->interface[0] &&
        strncmp(e->interface, k->interface, ZCAL_IFNAME_SIZE) == 0)
      ifc = e;
    if (e->scope == ZCAL_SCOPE_HOST_DEFAULT && !def) def = e;
  }
  if (peer) return peer;
  if (loop && is_loopback(k)) return loop;
  if (ifc) return ifc;
  return def;
}

static uint64_t zerocopy_from(const struct zcal_shm_entry *e) {
  if (e->verdict == ZCAL_VERDICT_THRESHOLD) return e->threshold_bytes;
  if (e->verdict == ZCAL_VERDICT_ALWAYS) return 0;
  return UINT64_MAX;
}

static int expected_answer(const struct table *t, const struct zcal_key *k, uint8_t m,
                           uint64_t size, int fallback) {
  const struct zcal_shm_entry *e = expected(t, k, m);
  if (!e || e->verdict > ZCAL_VERDICT_NEVER) return fallback;
  return size >= zerocopy_from(e);
}

static int result_matches(const struct table *t, const struct zcal_key *k, uint8_t m,
                          int rc, const struct zcal_result *r) {
  const struct zcal_shm_entry *e = expected(t, k, m);
  if (rc == -ENODATA) return e == NULL;
  if (rc != 0 || !e || r->generation != t->generation) return 0;
  const int has = (e->entry_flags & ZCAL_ENTRY_HAS_THRESHOLD) != 0;
  return r->verdict == e->verdict && r->reason == e->reason && r->scope == e->scope &&
         r->method == e->method && r->has_threshold == has &&
         r->threshold_bytes == (has ? e->threshold_bytes : 0) &&
         r->zerocopy_from_bytes == zerocopy_from(e) &&
         r->measured_at_ns == e->measured_at_ns && r->fingerprint == e->fingerprint &&
         r->confidence_ppm == e->confidence_ppm &&
         r->stale == ((t->flags & ZCAL_FLAG_STALE) != 0);
}

static void report_wrong(const char *what, const struct zcal_key *k, uint8_t m,
                         const struct table *a, const struct table *b) {
  if (++wrong > 10) return;
  char text[64] = "";
  if (k->family == ZCAL_FAMILY_IPV4) inet_ntop(AF_INET, k->address, text, sizeof text);
  if (k->family == ZCAL_FAMILY_IPV6) inet_ntop(AF_INET6, k->address, text, sizeof text);
  fprintf(stderr, "soak_reader %d: wrong %s for key %s%s%s method %u (generations %llu, %llu)\n",
          (int)getpid(), what, text, k->interface[0] ? " if " : "", k->interface, m,
          (unsigned long long)a->generation, (unsigned long long)b->generation);
}

/* Keys covering every scope of table t: loopback, each peer entry's
 * address, each interface, an address of no peer (the host default). */
static int keys_of(const struct table *t, struct zcal_key *keys) {
  int n = 0;
  zcal_key_from_string("127.0.0.1", NULL, &keys[n++]);
  zcal_key_from_string("::1", NULL, &keys[n++]);
  zcal_key_from_string("198.19.255.254", NULL, &keys[n++]);
  zcal_key_from_string("2001:db8::7", NULL, &keys[n++]);
  for (uint32_t i = 0; i < t->count && n < MAX_KEYS; ++i) {
    const struct zcal_shm_entry *e = &t->entries[i];
    if (e->scope == ZCAL_SCOPE_PEER && e->method == ZCAL_METHOD_COPY) {
      memset(&keys[n], 0, sizeof keys[n]);
      keys[n].family = e->family;
      memcpy(keys[n].address, e->address, 16);
      ++n;
    } else if (e->scope == ZCAL_SCOPE_INTERFACE && e->method == ZCAL_METHOD_COPY) {
      char name[ZCAL_IFNAME_SIZE + 1] = "";
      memcpy(name, e->interface, ZCAL_IFNAME_SIZE);
      if (zcal_key_from_string(NULL, name, &keys[n]) == 0) ++n;
    }
  }
  return n;
}

static const uint64_t kSizes[] = {0, 1, 1023, 4096, 16384, 65535, 65536, 262144, 1 << 24};

static void batch(zcal_handle *h, struct table *a, struct table *b) {
  struct zcal_key keys[MAX_KEYS];
  int rcs[MAX_KEYS][5];
  struct zcal_result results[MAX_KEYS][5];
  unsigned char answers[MAX_KEYS][5][sizeof kSizes / sizeof kSizes[0]][2];
  const int n = keys_of(a, keys);
  for (int k = 0; k < n; ++k) {
    for (uint8_t m = 0; m < 5; ++m) {
      rcs[k][m] = zcal_lookup(h, &keys[k], m, &results[k][m]);
      /* -EAGAIN: the writer held the seqlock through the retry bound,
       * which a writer preempted mid-publish on a loaded host does; the
       * documented answer is the caller's fallback. Counted apart. */
      if (rcs[k][m] == -EAGAIN) ++busy;
      else if (rcs[k][m] != 0 && rcs[k][m] != -ENODATA) {
        report_error("zcal_lookup", rcs[k][m]);
        if (errors <= 10) fprintf(stderr, "  detail: %s\n", zcal_error_detail());
      }
      for (size_t s = 0; s < sizeof kSizes / sizeof kSizes[0]; ++s)
        for (int f = 0; f < 2; ++f)
          answers[k][m][s][f] = (unsigned char)zcal_should_zerocopy(h, &keys[k], m, kSizes[s], 0, f);
      lookups += 1 + 2 * (sizeof kSizes / sizeof kSizes[0]);
    }
  }
  if (copy_table(b) != 0) {
    report_error("seqlock copy after the batch", 0);
    return;
  }
  if (b->seq != a->seq && b->seq != a->seq + 2) {
    ++skipped;
    return;
  }
  ++batches;
  if (b->seq != a->seq) ++spanning;
  for (int k = 0; k < n; ++k) {
    for (uint8_t m = 0; m < 5; ++m) {
      if (rcs[k][m] != 0 && rcs[k][m] != -ENODATA) continue;  /* counted above */
      if (!result_matches(a, &keys[k], m, rcs[k][m], &results[k][m]) &&
          !result_matches(b, &keys[k], m, rcs[k][m], &results[k][m]))
        report_wrong("zcal_lookup result", &keys[k], m, a, b);
      for (size_t s = 0; s < sizeof kSizes / sizeof kSizes[0]; ++s)
        for (int f = 0; f < 2; ++f) {
          const int got = answers[k][m][s][f];
          if (got != expected_answer(a, &keys[k], m, kSizes[s], f) &&
              got != expected_answer(b, &keys[k], m, kSizes[s], f))
            report_wrong("zcal_should_zerocopy answer", &keys[k], m, a, b);
        }
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: soak_reader SEGMENT\n");
    return 2;
  }
  segment = argv[1];
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  static struct table tables[2];
  zcal_handle *h = NULL;
  const struct timespec pause = {0, 2000000}; /* 2 ms between batches */
  while (!stop) {
    nanosleep(&pause, NULL);
    if (!h && zcal_open(segment, &h) != 0) continue;
    const int mapped = remap();
    if (mapped != 0) {
      report_error("remapping the segment", mapped);
      continue;
    }
    if (copy_table(&tables[0]) != 0) {
      report_error("seqlock copy before the batch", 0);
      continue;
    }
    batch(h, &tables[0], &tables[1]);
  }
  printf("lookups=%llu batches=%llu spanning=%llu skipped=%llu wrong=%llu errors=%llu busy=%llu\n",
         lookups, batches, spanning, skipped, wrong, errors, busy);
  zcal_close(h);
  return 0;
}
