/*
 * zc_sender - a small TCP sender that decides per send, as a storage target
 * would, whether to use MSG_ZEROCOPY, from the threshold zcal publishes for
 * its connection, through libzcal's per-connection guard.
 *
 *   zc_sender [--segment NAME] [--count N] [--sizes S1,S2,...]
 *             [--fallback copy|zerocopy] [--max-age-s S] [--guard on|off]
 *             [--report APP] ADDRESS PORT
 *
 * Sends N messages cycling through the sizes, from a pool of buffers; a
 * buffer sent with MSG_ZEROCOPY is reused only after the kernel reported
 * its completion. Without an agent (no segment), or when the agent's
 * heartbeat is older than --max-age-s, it uses the fallback. Every
 * completion goes to the guard with its copied flag, so that a connection
 * whose zerocopy sends the kernel copies (loopback, a local peer, a device
 * without scatter-gather) is sent with copies; --guard off keeps them from
 * the guard, which then follows the threshold alone. --report APP (or
 * ZCAL_REPORT=APP in the environment) has libzcal count the answers and
 * completions for the zcal agent under that name (docs/client.md,
 * "Reporting what was sent"); with --guard off the completions are
 * reported with zcal_report_completed. Prints one summary line; exit
 * status 0, or 1 on a failure (connect, send, --report).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zcal/zcal.h>

#define POOL 8
#define MAX_SIZES 16
#define ID_RING 4096u

struct buffer {
  unsigned char *data;
  uint32_t first_id, end_id; /* zerocopy completion ids [first, end) */
};

struct sender {
  int fd;
  struct zcal_guard guard;
  int report_to_guard;
  zcal_handle *zcal;
  uint64_t max_age_ns;
  uint32_t next_id;                /* id of the next MSG_ZEROCOPY send */
  unsigned char done[ID_RING];     /* completion seen, by id % ID_RING */
  uint32_t outstanding;
  unsigned long long completions, copied;
};

static int reap(struct sender *s, int block) {
  for (;;) {
    char control[128];
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (recvmsg(s->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN || !block) return errno == EAGAIN ? 0 : -errno;
      struct pollfd p = {.fd = s->fd, .events = 0, .revents = 0};
      if (poll(&p, 1, 5000) == 0) return -ETIMEDOUT;
      continue;
    }
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (!((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
            (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)))
        continue;
      struct sock_extended_err err;
      memcpy(&err, CMSG_DATA(c), sizeof err);
      if (err.ee_origin != SO_EE_ORIGIN_ZEROCOPY || err.ee_errno != 0) continue;
      /* One notification covers sends ee_info..ee_data, copied or not. */
      const int copied = (err.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0;
      uint64_t n = 0;
      for (uint32_t id = err.ee_info; id - err.ee_info <= err.ee_data - err.ee_info; ++id) {
        s->done[id % ID_RING] = 1;
        if (s->outstanding > 0) s->outstanding--;
        n++;
        if (id == err.ee_data) break;
      }
      s->completions += n;
      if (copied) s->copied += n;
      if (s->report_to_guard)
        zcal_guard_completed(&s->guard, n, copied ? n : 0);
      else /* Counted for the agent all the same, when reporting is on. */
        zcal_report_completed(s->zcal, &s->guard.key, ZCAL_METHOD_MSG_ZEROCOPY, s->max_age_ns,
                              n, copied ? n : 0);
    }
    return 1;
  }
}

static int buffer_free(const struct sender *s, const struct buffer *b) {
  for (uint32_t id = b->first_id; id != b->end_id; ++id)
    if (!s->done[id % ID_RING]) return 0;
  return 1;
}

/* Sends all of buf; zerocopy sends register completion ids on `b`. */
static int send_all(struct sender *s, struct buffer *b, size_t len,
                    int zerocopy, unsigned long long *calls) {
  size_t off = 0;
  b->first_id = b->end_id = s->next_id;
  while (off < len) {
    if (zerocopy && s->outstanding >= ID_RING - 64 && reap(s, 1) < 0) zerocopy = 0;
    ssize_t n = send(s->fd, b->data + off, len - off, zerocopy ? MSG_ZEROCOPY : 0);
    if (n < 0 && errno == ENOBUFS && zerocopy) {
      /* Option memory for completions is exhausted: reap, then copy. */
      if (reap(s, s->outstanding > 0) < 0 || s->outstanding == 0) zerocopy = 0;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (zerocopy) {
      s->done[s->next_id % ID_RING] = 0;
      s->next_id++;
      s->outstanding++;
      b->end_id = s->next_id;
    }
    (*calls)++;
    off += (size_t)n;
  }
  return 0;
}

static int parse_sizes(char *text, size_t *sizes) {
  int n = 0;
  for (char *tok = strtok(text, ","); tok && n < MAX_SIZES; tok = strtok(NULL, ",")) {
    char *end;
    unsigned long long v = strtoull(tok, &end, 10);
    if (*end || v == 0 || v > (64u << 20)) return -1;
    sizes[n++] = (size_t)v;
  }
  return n;
}

static int connect_to(const char *address, const char *port) {
  struct addrinfo hints, *res;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  int rc = getaddrinfo(address, port, &hints, &res);
  if (rc != 0) {
    fprintf(stderr, "zc_sender: bad address %s port %s: %s\n", address, port,
            gai_strerror(rc));
    return -1;
  }
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    fprintf(stderr, "zc_sender: cannot connect to %s port %s: %s\n", address,
            port, strerror(errno));
    if (fd >= 0) close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd;
}

struct options {
  const char *segment, *report, *address, *port;
  long count;
  size_t sizes[MAX_SIZES];
  int nsizes, fallback, guard_on;
  unsigned long long max_age_ns;
};

/* The command line into `o`; 0, or 2 after printing the usage. */
static int parse_options(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->count = 1000;
  o->sizes[0] = 4096;
  o->sizes[1] = 65536;
  o->nsizes = 2;
  o->max_age_ns = 60ull * 1000000000ull;
  o->guard_on = 1;
  int i = 1;
  for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
    if (strcmp(argv[i], "--segment") == 0) o->segment = argv[i + 1];
    else if (strcmp(argv[i], "--count") == 0) o->count = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--sizes") == 0) o->nsizes = parse_sizes(argv[i + 1], o->sizes);
    else if (strcmp(argv[i], "--max-age-s") == 0)
      o->max_age_ns = strtoull(argv[i + 1], NULL, 10) * 1000000000ull;
    else if (strcmp(argv[i], "--fallback") == 0) o->fallback = strcmp(argv[i + 1], "zerocopy") == 0;
    else if (strcmp(argv[i], "--guard") == 0) o->guard_on = strcmp(argv[i + 1], "off") != 0;
    else if (strcmp(argv[i], "--report") == 0) o->report = argv[i + 1];
    else break;
  }
  if (argc - i != 2 || o->count <= 0 || o->nsizes <= 0) {
    fprintf(stderr, "usage: zc_sender [--segment NAME] [--count N] [--sizes S1,S2,...] "
                    "[--fallback copy|zerocopy] [--max-age-s S] [--guard on|off] "
                    "[--report APP] ADDRESS PORT\n");
    return 2;
  }
  o->address = argv[i];
  o->port = argv[i + 1];
  return 0;
}

struct totals {
  unsigned long long bytes, zc_messages, calls, checksum;
};

/* Sends o->count messages from `pool`, each with zerocopy where the guard
 * says so, and waits for every completion; 0, or 1 after printing why. */
static int send_messages(struct sender *s, const struct options *o, struct buffer *pool,
                         int can_zerocopy, struct totals *t) {
  t->checksum = 1469598103934665603ull;
  for (long m = 0; m < o->count; ++m) {
    size_t size = o->sizes[m % o->nsizes];
    struct buffer *b = &pool[m % POOL];
    while (!buffer_free(s, b)) {
      if (reap(s, 1) < 0) {
        fprintf(stderr, "zc_sender: no zerocopy completion within 5 s\n");
        return 1;
      }
    }
    for (size_t k = 0; k < size; ++k) {
      b->data[k] = (unsigned char)(m * 131 + (long)k);
      t->checksum = (t->checksum ^ b->data[k]) * 1099511628211ull;
    }
    int zerocopy = can_zerocopy && zcal_guard_should_zerocopy(&s->guard, size);
    if (send_all(s, b, size, zerocopy, &t->calls) != 0) {
      fprintf(stderr, "zc_sender: send of %zu bytes failed: %s\n", size, strerror(errno));
      return 1;
    }
    t->zc_messages += (unsigned long long)zerocopy;
    t->bytes += size;
  }
  while (s->outstanding > 0) {
    if (reap(s, 1) < 0) {
      fprintf(stderr, "zc_sender: %u zerocopy completions missing after 5 s\n", s->outstanding);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  struct options o;
  if (parse_options(argc, argv, &o) != 0) return 2;
  /* Before zcal_open, which would otherwise take ZCAL_REPORT's name. */
  if (o.report && zcal_report_open(o.report) != 0) {
    fprintf(stderr, "zc_sender: --report %s: %s\n", o.report, zcal_error_detail());
    return 1;
  }

  zcal_handle *zcal = NULL;
  int rc = zcal_open(o.segment, &zcal);
  if (rc != 0)
    fprintf(stderr, "zc_sender: no zcal data (%s): falling back to %s\n",
            zcal_error_detail(), o.fallback ? "zerocopy" : "copy");

  struct sender s;
  memset(&s, 0, sizeof s);
  s.fd = connect_to(o.address, o.port);
  if (s.fd < 0) return 1;
  int one = 1;
  setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int can_zerocopy = setsockopt(s.fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) == 0;
  /* The per-connection state: the threshold for this peer (looked up again
   * after each publish) and what the completions said. */
  rc = zcal_guard_init(&s.guard, sizeof s.guard, zcal, s.fd, ZCAL_METHOD_MSG_ZEROCOPY,
                       o.fallback, o.max_age_ns);
  if (rc != 0) {
    fprintf(stderr, "zc_sender: %s\n", zcal_error_detail());
    return 1;
  }
  s.report_to_guard = o.guard_on;
  s.zcal = zcal;
  s.max_age_ns = o.max_age_ns;

  size_t max_size = 0;
  for (int k = 0; k < o.nsizes; ++k) max_size = o.sizes[k] > max_size ? o.sizes[k] : max_size;
  struct buffer pool[POOL];
  for (int k = 0; k < POOL; ++k) {
    pool[k].data = malloc(max_size);
    pool[k].first_id = pool[k].end_id = 0;
    if (!pool[k].data) return 1;
  }

  struct totals t = {0, 0, 0, 0};
  if (send_messages(&s, &o, pool, can_zerocopy, &t) != 0) return 1;
  shutdown(s.fd, SHUT_WR);
  char sink[256];
  while (read(s.fd, sink, sizeof sink) > 0) {
  }
  close(s.fd);
  static const char *const kStates[] = {"on", "off", "probing"};
  printf("zc_sender: messages=%ld bytes=%llu zerocopy_messages=%llu copy_messages=%llu "
         "send_calls=%llu completions=%llu copied=%llu decision=%s guard=%s "
         "guard_state=%s guard_turned_off=%llu checksum=%016llx\n",
         o.count, t.bytes, t.zc_messages, (unsigned long long)o.count - t.zc_messages, t.calls,
         s.completions, s.copied, s.guard.have_result ? "agent" : "fallback",
         o.guard_on ? "on" : "off", kStates[s.guard.state % 3],
         (unsigned long long)s.guard.turned_off, t.checksum);
  for (int k = 0; k < POOL; ++k) free(pool[k].data);
  zcal_close(zcal);
  return 0;
}
