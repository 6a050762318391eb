/* A test-only LD_PRELOAD shim that steps the wall clock of the processes a
 * test starts with it, never the machine's (CI timers, other tests): it
 * adds to CLOCK_REALTIME (and its coarse variant, which libzcal reads) the
 * whole seconds written in the file $ZCAL_TEST_WALL_OFFSET_FILE names,
 * read on every call, so that a test steps a running process by rewriting
 * that file (atomically: write another file and rename it over). The
 * monotonic clocks are left alone, as a real step leaves them.
 *
 * Under ASan (static runtime in the executable) the runtime's interceptor
 * of clock_gettime comes first and calls the next definition, this one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static int raw_clock_gettime(clockid_t clock, struct timespec *ts) {
  return (int)syscall(SYS_clock_gettime, clock, ts);
}

static clock_gettime_fn next_clock_gettime(void) {
  static clock_gettime_fn next;
  clock_gettime_fn fn = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
  if (fn == NULL) {
    void *symbol = dlsym(RTLD_NEXT, "clock_gettime");
    memcpy(&fn, &symbol, sizeof fn);  /* POSIX: a function's address */
    if (fn == NULL) fn = raw_clock_gettime;
    __atomic_store_n(&next, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

static int64_t offset_seconds(void) {
  const char *path = getenv("ZCAL_TEST_WALL_OFFSET_FILE");
  if (path == NULL) return 0;
  const int saved = errno;
  int64_t seconds = 0;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char text[32];
    const ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n > 0) {
      text[n] = '\0';
      seconds = strtoll(text, NULL, 10);
    }
  }
  errno = saved;
  return seconds;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
  const int rc = next_clock_gettime()(clock, ts);
  if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE))
    ts->tv_sec += (time_t)offset_seconds();
  return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
  (void)tz;
  struct timespec ts;
  const int rc = clock_gettime(CLOCK_REALTIME, &ts);
  if (rc == 0) {
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = (suseconds_t)(ts.tv_nsec / 1000);
  }
  return rc;
}

time_t time(time_t *out) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
  if (out != NULL) *out = ts.tv_sec;
  return ts.tv_sec;
}
