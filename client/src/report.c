/* The report: counters of what this process sent, in a shared-memory
 * object of its own (zcal.h, "What the application sent"). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "handle.h"
#include "report.h"

uint64_t zcal_internal_report_epoch;
__thread struct zcal_report_thread zcal_internal_report_tls
    __attribute__((tls_model("initial-exec")));

/* What the process knows of its open report; under `lock`. */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  struct zcal_report_header *header; /* NULL: none open */
  size_t bytes;
  pid_t owner;
  uint64_t epoch;
  uint64_t last_epoch;
  uint64_t last_generation;
  uint64_t free_slots; /* bit i: slot i (1..) is free */
  char name[sizeof ZCAL_REPORT_PREFIX + 12];
} open_report;

static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static int have_thread_key;

#define REPORT_SLOT_BYTES sizeof(struct zcal_report_slot)
#define REPORT_OBJECT_BYTES (sizeof(struct zcal_report_header) + ZCAL_REPORT_SLOTS * REPORT_SLOT_BYTES)
_Static_assert(ZCAL_REPORT_SLOTS == 64, "free_slots is one word, slot 0 aside");
_Static_assert(sizeof(struct zcal_report_header) % 64 == 0 && REPORT_SLOT_BYTES % 64 == 0,
               "slots start on cache lines: threads do not share a line");

static struct zcal_report_slot *report_slot_at(struct zcal_report_header *h, unsigned i) {
  return (struct zcal_report_slot *)(void *)((unsigned char *)h + sizeof *h +
                                             (size_t)i * REPORT_SLOT_BYTES);
}

static uint64_t report_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* A slot goes back to the pool when its thread exits; its counts stay. */
static void release_thread_slot(void *unused) {
  (void)unused;
  struct zcal_report_thread *t = &zcal_internal_report_tls;
  pthread_mutex_lock(&report_lock);
  /* A thread that shares slot 0 has the epoch with the shared bit. */
  if (open_report.header && t->epoch == open_report.epoch) {
    const size_t i = (size_t)((unsigned char *)t->slot - (unsigned char *)report_slot_at(open_report.header, 0)) /
                     REPORT_SLOT_BYTES;
    open_report.free_slots |= UINT64_C(1) << i;
  }
  pthread_mutex_unlock(&report_lock);
  t->epoch = 0;
}

/* Held across fork(), so that the child's copy of `report` is whole. */
static void lock_report_for_fork(void) { pthread_mutex_lock(&report_lock); }
static void unlock_report_after_fork(void) { pthread_mutex_unlock(&report_lock); }

/* A child of fork() has the parent's mapping, shared: it must not count
 * into it, nor remove it at exit. Only the forking thread lives on. */
static void forget_report_in_child(void) {
  if (open_report.header) munmap(open_report.header, open_report.bytes);
  open_report.header = NULL;
  open_report.epoch = 0;
  __atomic_store_n(&zcal_internal_report_epoch, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&report_lock);
}

static void make_thread_key(void) {
  have_thread_key = pthread_key_create(&thread_key, release_thread_slot) == 0;
  pthread_atfork(lock_report_for_fork, unlock_report_after_fork, forget_report_in_child);
}

/* Takes a slot of the report of `epoch` for the calling thread; NULL if
 * that report was closed meanwhile. */
static const struct zcal_report_thread *claim_slot(uint64_t epoch) {
  struct zcal_report_thread *t = &zcal_internal_report_tls;
  pthread_mutex_lock(&report_lock);
  if (!open_report.header || open_report.epoch != epoch) {
    pthread_mutex_unlock(&report_lock);
    return NULL;
  }
  struct zcal_report_header *h = open_report.header;
  unsigned i = 0;
  /* Without a thread key a slot could never go back: share slot 0. */
  if (have_thread_key && open_report.free_slots != 0 &&
      pthread_setspecific(thread_key, t) == 0) {
    i = (unsigned)__builtin_ctzll(open_report.free_slots);
    open_report.free_slots &= open_report.free_slots - 1;
  }
  struct zcal_report_slot *slot = report_slot_at(h, i);
  __atomic_fetch_add(&slot->threads, 1, __ATOMIC_RELAXED);
  if (i + 1 > h->slots_used) __atomic_store_n(&h->slots_used, i + 1, __ATOMIC_RELEASE);
  t->slot = slot;
  t->epoch = i == 0 ? epoch | ZCAL_REPORT_EPOCH_SHARED : epoch;
  pthread_mutex_unlock(&report_lock);
  return t;
}

/* The thread's slot of the report of `epoch`, taken if it has none yet;
 * NULL if that report was closed meanwhile. */
static const struct zcal_report_thread *slot_of_thread(uint64_t epoch) {
  const struct zcal_report_thread *t = &zcal_internal_report_tls;
  if (t->epoch == epoch || t->epoch == (epoch | ZCAL_REPORT_EPOCH_SHARED)) return t;
  return claim_slot(epoch);
}

void zcal_internal_report_send_slow(uint64_t epoch, uint16_t cell, int yes, unsigned why,
                                    uint64_t size_bytes, unsigned depth) {
  const struct zcal_report_thread *t = slot_of_thread(epoch);
  if (!t) return;
  if (t->epoch == epoch) {
    zcal_internal_report_send_own(t->slot, cell, yes, why, size_bytes, depth);
    return;
  }
  /* Slot 0, which several threads share: atomic additions. */
  struct zcal_report_cell *c = zcal_internal_report_cell_of(t->slot, cell);
  __atomic_fetch_add(&c->answers[depth][yes][why], 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&c->bytes[yes], size_bytes, __ATOMIC_RELAXED);
  __atomic_fetch_add(&c->sizes[zcal_internal_report_bucket(size_bytes)], 1, __ATOMIC_RELAXED);
}

void zcal_internal_report_completions_slow(uint64_t epoch, uint16_t cell,
                                           uint64_t completions, uint64_t copied) {
  const struct zcal_report_thread *t = slot_of_thread(epoch);
  if (!t) return;
  if (t->epoch == epoch) {
    zcal_internal_report_completions_own(t->slot, cell, completions, copied);
    return;
  }
  struct zcal_report_cell *c = zcal_internal_report_cell_of(t->slot, cell);
  __atomic_fetch_add(&c->completions, completions, __ATOMIC_RELAXED);
  __atomic_fetch_add(&c->copied, copied, __ATOMIC_RELAXED);
}

static int check_app_name(const char *name) {
  if (!name) {
    zcal_internal_set_detail("report: the application name is NULL");
    return -EINVAL;
  }
  const size_t len = strnlen(name, ZCAL_REPORT_NAME_SIZE);
  if (len == 0 || len >= ZCAL_REPORT_NAME_SIZE) {
    zcal_internal_set_detail("report: the application name must have 1 to %d bytes",
                             ZCAL_REPORT_NAME_SIZE - 1);
    return -EINVAL;
  }
  for (size_t i = 0; i < len; ++i) {
    const unsigned char c = (unsigned char)name[i];
    if (c == '/' || c < 0x20 || c == 0x7f) {
      zcal_internal_set_detail("report: the application name has %s at byte %zu: "
                               "use no '/' and no control characters",
                               c == '/' ? "'/'" : "a control character", i);
      return -EINVAL;
    }
  }
  return 0;
}

static void fill_header(struct zcal_report_header *h, const char *name) {
  h->abi_major = ZCAL_REPORT_ABI_MAJOR;
  h->abi_minor = ZCAL_REPORT_ABI_MINOR;
  h->header_size = (uint32_t)sizeof *h;
  h->slot_size = (uint32_t)REPORT_SLOT_BYTES;
  h->slot_header_size = (uint32_t)offsetof(struct zcal_report_slot, cells);
  h->cell_size = (uint32_t)sizeof(struct zcal_report_cell);
  h->scopes = ZCAL_REPORT_SCOPES;
  h->methods = ZCAL_REPORT_METHODS;
  h->size_buckets = ZCAL_REPORT_SIZE_BUCKETS;
  h->depth_classes = ZCAL_DEPTH_CLASSES;
  h->slots = ZCAL_REPORT_SLOTS;
  h->slots_used = 1;
  h->owner_pid = (uint32_t)getpid();
  h->owner_uid = (uint32_t)getuid();
  h->total_size = REPORT_OBJECT_BYTES;
  h->created_ns = report_now_ns();
  /* Unique with owner_pid: a reused pid comes later in time, and a second
   * report of this process after its first. */
  h->generation = h->created_ns > open_report.last_generation ? h->created_ns
                                                         : open_report.last_generation + 1;
  open_report.last_generation = h->generation;
  strncpy(h->name, name, sizeof h->name - 1);
  report_slot_at(h, 0)->flags = ZCAL_REPORT_SLOT_SHARED;
  __atomic_store_n(&h->magic, ZCAL_REPORT_MAGIC, __ATOMIC_RELEASE);
}

/* Reads the first `size` bytes of the regular file at `shm_name` into
 * `out` and its status into `st`; 0 when it is not there, not a regular
 * file or shorter. O_NONBLOCK: a FIFO planted at the name is refused, not
 * waited on; pread, not a mapping: a file cut meanwhile gives a short
 * read, not a SIGBUS (this runs in exit handlers). */
static int read_start_of(const char *shm_name, void *out, size_t size, struct stat *st) {
  const int fd = shm_open(shm_name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0);
  if (fd < 0) return 0;
  const int ok = fstat(fd, st) == 0 && S_ISREG(st->st_mode) &&
                 pread(fd, out, size, 0) == (ssize_t)size;
  close(fd);
  return ok;
}

/* Whether the object at `shm_name` is a report its owner closed: one this
 * process left for the agent at an earlier zcal_report_close, or one a
 * process of the same pid left at exit, that the agent has not removed
 * yet. */
static int closed_report_at(const char *shm_name) {
  struct zcal_report_header h;
  struct stat st;
  return read_start_of(shm_name, &h, sizeof h, &st) && h.magic == ZCAL_REPORT_MAGIC &&
         (h.flags & ZCAL_REPORT_FLAG_CLOSED);
}

static int create_object(const char *name) {
  snprintf(open_report.name, sizeof open_report.name, "%s%ld", ZCAL_REPORT_PREFIX, (long)getpid());
  int fd = shm_open(open_report.name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  /* A closed object still waiting for the agent's read gives way: its
   * counts since the agent's last read are lost, as they were before
   * closed objects were left, but this process reports. */
  if (fd < 0 && errno == EEXIST) {
    if (closed_report_at(open_report.name) && shm_unlink(open_report.name) == 0)
      fd = shm_open(open_report.name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    else
      errno = EEXIST; /* what the look at the object set is not the error */
  }
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST)
      zcal_internal_set_detail("report %s exists already: left over from a process of "
                               "the same pid; remove it if no such process runs",
                               open_report.name);
    else
      zcal_internal_set_detail("report %s: shm_open failed: %s", open_report.name, strerror(err));
    return -err;
  }
  void *base = MAP_FAILED;
  const char *what = "fchmod";
  /* The agent runs as a user of its own: readable whatever the umask. */
  int ok = fchmod(fd, 0644) == 0;
  if (ok) {
    what = "ftruncate";
    ok = ftruncate(fd, (off_t)REPORT_OBJECT_BYTES) == 0;
  }
  if (ok) {
    what = "mmap";
    base = mmap(NULL, REPORT_OBJECT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ok = base != MAP_FAILED;
  }
  const int err = errno;
  close(fd);
  if (!ok) {
    shm_unlink(open_report.name);
    zcal_internal_set_detail("report %s: %s failed: %s", open_report.name, what, strerror(err));
    return -err;
  }
  fill_header(base, name);
  open_report.header = base;
  open_report.bytes = REPORT_OBJECT_BYTES;
  open_report.owner = getpid();
  open_report.free_slots = ~UINT64_C(0) << 1;
  open_report.epoch = ++open_report.last_epoch;
  __atomic_store_n(&zcal_internal_report_epoch, open_report.epoch, __ATOMIC_RELEASE);
  return 0;
}

int zcal_report_open(const char *name) {
  int rc = check_app_name(name);
  if (rc != 0) return rc;
  pthread_once(&thread_key_once, make_thread_key);
  pthread_mutex_lock(&report_lock);
  if (open_report.header) {
    zcal_internal_set_detail("report %s is open already: zcal_report_close it first",
                             open_report.name);
    rc = -EBUSY;
  } else {
    rc = create_object(name);
  }
  pthread_mutex_unlock(&report_lock);
  return rc;
}

/* The segment zcal_open last opened by name in this process: its agent
 * would read this process's report. Under `lock`. */
static char report_segment[ZCAL_NAME_MAX];

void zcal_internal_report_segment(const char *name) {
  if (!name || strlen(name) >= sizeof report_segment) return;
  /* The fork handlers first: a child must not inherit the lock held. */
  pthread_once(&thread_key_once, make_thread_key);
  pthread_mutex_lock(&report_lock);
  strcpy(report_segment, name);
  pthread_mutex_unlock(&report_lock);
}

/* Whether an agent will read a closed object left in /dev/shm, fold its
 * counts and remove it (docs/shm-abi.md, "Naming and lifetime"): the
 * segment is a live agent's (its heartbeat at most this old, not retired),
 * and that agent's user may unlink this process's object. Otherwise the
 * object is removed at close, as nobody else would. Five of the agent's
 * default heartbeats (2 s): an agent stopped longer ago, or one whose
 * heartbeat is slower, counts as absent. */
#define REPORT_AGENT_FRESH_NS UINT64_C(10000000000)
#define REPORT_SHM_DIRECTORY "/dev/shm"

/* Whether a process of `uid` without CAP_FOWNER may unlink a file of this
 * process's effective uid from the shm directory. */
static int agent_may_unlink(uid_t agent_uid) {
  if (agent_uid == geteuid()) return 1;
  struct stat dir;
  if (stat(REPORT_SHM_DIRECTORY, &dir) != 0) return 0;
  if (dir.st_uid == agent_uid) return 1;
  return !(dir.st_mode & S_ISVTX) && (dir.st_mode & S_IWOTH);
}

/* A few system calls, at close and exit only; none blocks (a FIFO planted
 * at the segment's name is opened O_NONBLOCK and refused). */
static int agent_at_segment(const char *name) {
  struct zcal_shm_header h;
  struct stat st;
  const int read_ok = read_start_of(name, &h, sizeof h, &st);
  /* A segment this process writes (a benchmark, a test) has no agent
   * that reads reports. */
  if (!read_ok || h.magic != ZCAL_MAGIC || h.abi_major != ZCAL_ABI_MAJOR ||
      (h.flags & ZCAL_FLAG_RETIRED) || h.heartbeat_ns == 0 ||
      h.agent_pid == (uint32_t)getpid())
    return 0;
  /* A heartbeat ahead of the clock (a step back) counts as fresh, as a
   * lookup's age 0 does. */
  const uint64_t now = report_now_ns();
  if (now > h.heartbeat_ns && now - h.heartbeat_ns > REPORT_AGENT_FRESH_NS) return 0;
  /* The agent says it can remove any user's object (it checked its own
   * capabilities); otherwise its user must be able to. */
  return (h.flags & ZCAL_FLAG_TAKES_REPORTS) || agent_may_unlink(st.st_uid);
}

/* The segment zcal_open last opened by name, then ZCAL_SEGMENT's or the
 * default (zcal_open(NULL)'s): one of them has a live agent. Under `lock`. */
static int agent_takes_report(void) {
  const char *name = getenv(ZCAL_SEGMENT_ENV);
  if (!name || !*name) name = ZCAL_DEFAULT_SEGMENT;
  if (*report_segment && agent_at_segment(report_segment)) return 1;
  return strcmp(name, report_segment) != 0 && agent_at_segment(name);
}

/* Under `lock`. Threads of a process that exits may still count: only
 * zcal_report_close, which they must not race, unmaps. The CLOSED flag
 * goes last (release): a reader that sees it reads the final counts. */
static void mark_report_closed(void) {
  struct zcal_report_header *h = open_report.header;
  const int leave = agent_takes_report();
  __atomic_store_n(&h->closed_ns, report_now_ns(), __ATOMIC_RELAXED);
  __atomic_fetch_or(&h->flags, ZCAL_REPORT_FLAG_CLOSED, __ATOMIC_RELEASE);
  if (!leave) shm_unlink(open_report.name);
}

/* The mapping stays: a thread that read the epoch just before may still
 * count into it, and must find memory there. What it writes after the
 * CLOSED flag may reach the agent or not (a send that races the close is
 * counted or not). */
void zcal_report_close(void) {
  pthread_mutex_lock(&report_lock);
  if (open_report.header) {
    __atomic_store_n(&zcal_internal_report_epoch, 0, __ATOMIC_RELEASE);
    mark_report_closed();
    open_report.header = NULL;
    open_report.epoch = 0;
  }
  pthread_mutex_unlock(&report_lock);
}

__attribute__((destructor)) static void close_report_at_exit(void) {
  pthread_mutex_lock(&report_lock);
  if (open_report.header && open_report.owner == getpid()) {
    mark_report_closed();
    open_report.owner = 0;
  }
  pthread_mutex_unlock(&report_lock);
}

static pthread_once_t report_env_once = PTHREAD_ONCE_INIT;

static void read_report_env(void) {
  const char *name = getenv(ZCAL_REPORT_ENV);
  if (!name || !*name) return;
  const int rc = zcal_report_open(name);
  if (rc != 0 && rc != -EBUSY)
    fprintf(stderr, "libzcal: %s: %s; reporting is off\n", ZCAL_REPORT_ENV,
            zcal_error_detail());
}

void zcal_internal_report_env(void) { pthread_once(&report_env_once, read_report_env); }

int zcal_report_completed(zcal_handle *handle, const struct zcal_key *key,
                          uint8_t method, uint64_t max_age_ns, uint64_t completions,
                          uint64_t copied) {
  if (!key || copied > completions) return -EINVAL;
  const uint64_t epoch = zcal_internal_report_on();
  if (!epoch) return 0;
  unsigned scope = ZCAL_REPORT_SCOPE_NONE;
  struct zcal_result r;
  if (handle && zcal_lookup(handle, key, method, &r) == 0 &&
      (max_age_ns == 0 || r.heartbeat_age_ns <= max_age_ns))
    scope = zcal_internal_report_scope(key, r.scope);
  zcal_internal_report_completions(epoch, zcal_internal_report_cell(scope, method), completions,
                                   copied);
  return 0;
}
