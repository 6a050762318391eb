// The agent's HTTP listener: a small asynchronous server (Boost.Beast on
// one Asio thread) that answers GET and HEAD on a fixed set of paths.
// docs/metrics.md ("The HTTP listener") documents its limits for operators.
//
// An idle connection costs one file descriptor and no thread, so idle or
// slow clients never delay a scrape; the limits below bound what they hold.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zcal/common/address.h"
#include "zcal/common/result.h"

namespace zcal::agent {

/// What clients of the listener may hold. The defaults are the agent's.
struct HttpLimits {
  /// From accept until the request line and headers are complete. A
  /// Prometheus scrape sends its request at once; 5 s allows a slow link.
  std::chrono::milliseconds request_timeout{5000};
  /// To write one response (the client must read it within this time).
  std::chrono::milliseconds write_timeout{10000};
  /// Connections open at once, all clients together (1 or more). Bounds the
  /// agent's file descriptors whatever clients do.
  std::size_t max_connections = 64;
  /// Connections open at once from one source address (1 or more).
  std::size_t max_connections_per_client = 8;
  /// Request line and headers, bytes; a larger request is answered 431.
  std::uint32_t max_header_bytes = 8192;
};

/// Why the listener closed a connection without a complete answer (label
/// `reason` of zcal_http_connections_dropped_total).
enum class HttpDrop : std::uint8_t {
  kRequestTimeout,  ///< the request did not arrive within request_timeout
  kWriteTimeout,    ///< the client did not read the answer in time
  kClientLimit,     ///< its source address held max_connections_per_client
  kServerLimit,     ///< the listener held max_connections
};
std::string_view HttpDropName(HttpDrop drop);

/// A request as a handler sees it.
struct HttpRequest {
  std::string_view method;  ///< "GET" or "HEAD" (others never reach one)
  std::string_view path;    ///< the target before '?', as sent: "/metrics"
  std::string_view query;   ///< after '?', "" without one
};

/// A handler's answer. For HEAD the server sends the headers only.
struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  /// Further header fields (name, value), e.g. Content-Security-Policy.
  std::vector<std::pair<std::string, std::string>> headers = {};
};

/// Answers one path. Runs on the server's thread: while it runs no other
/// client is served, so it must not block (render from memory), and it
/// must never wait for the thread that stops the server (Stop joins the
/// server's thread). An exception it throws is answered 500.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpRoute {
  std::string path;  ///< exact match: "/metrics", "/", "/api/v1/thresholds"
  HttpHandler handler;
};

/// What happened on the listener; each member may be empty. Called on the
/// server's thread, so they must be quick and thread-safe with respect to
/// whoever reads what they record.
struct HttpObserver {
  std::function<void(HttpDrop)> dropped;
  /// A response was written completely, with this status.
  std::function<void(int status)> answered;
  /// +1 when a connection is accepted, -1 when it is closed: the sum is
  /// the connections open now (several servers may feed one gauge).
  std::function<void(int change)> open_connections_changed;
};

/// Admission: a connection from a client that already holds
/// max_connections_per_client replaces that client's oldest connection
/// still waiting for its request (kClientLimit); with none waiting, the
/// new one is closed unread (kClientLimit). Likewise at max_connections
/// for the oldest waiting connection of any client (kServerLimit). So idle
/// connections never stop a scrape, which sends its request at once, and a
/// client can only evict its own connections until the server is full.
/// Every answer closes its connection (no keep-alive).
///
/// Thread safety: Start, Stop and the destructor from one thread (not a
/// handler's); port() and Url() from any thread.
class HttpServer {
 public:
  /// Binds `listen` (IPv4 or IPv6; port 0 picks a free one) and serves
  /// `routes` from then on. Errors: kInvalidArgument for limits out of range
  /// or two routes of one path; kBusy (address in use), kPermission
  /// (privileged port) or kIo (address not local, ...) when binding fails,
  /// with the errno text.
  static Result<std::unique_ptr<HttpServer>> Start(
      const common::HostPort& listen, std::vector<HttpRoute> routes,
      const HttpLimits& limits = {}, HttpObserver observer = {});

  /// Stops.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Closes the listener and every connection (a response being written
  /// is cut), and joins the server's thread. Returns within the time the
  /// running handler needs, if any (milliseconds); idempotent.
  void Stop();

  /// The bound address; its port differs from the requested one for 0.
  const common::HostPort& local() const;

 private:
  class Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zcal::agent
