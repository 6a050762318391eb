// Why a server of our own and not prometheus-cpp's Exposer (CivetWeb): each
// CivetWeb worker blocks on one connection until its request arrives, so N
// idle connections stall every scrape for the request timeout (measured: 64
// idle connections against 8 workers and a 500 ms timeout delayed a scrape
// by 3.9 s); CivetWeb 1.15 has no limit per client, exposes no count of what
// it times out, is built without IPv6 in Debian, offers the Exposer no way
// to add a handler, and needs up to 2 s to stop because its listener polls
// in 2 s quanta. Here an idle connection costs a descriptor and no thread.
#include "zcal/agent/metrics/http_server.h"

#include "zcal/agent/metrics/asio.h"  // first: the Asio configuration every build compiles

// GCC 12 at -O2 with the sanitizers warns that Beast's
// basic_parser::content_length_unchecked() returns an uninitialised
// boost::optional (-Wmaybe-uninitialized, inlined from Beast's own header; a
// false positive: boost::none initialises it). The warning is raised where
// the template is inlined, so it is silenced for this file, after the
// includes too, and only for GCC.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cassert>
#include <list>
#include <system_error>
#include <thread>

#include "zcal/common/errno_text.h"

namespace zcal::agent {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// After accept() fails (EMFILE, ENFILE, ENOBUFS), wait before the next try
// instead of spinning on an error that persists.
constexpr std::chrono::milliseconds kAcceptRetry{100};

// After an error answer to a request that was not read to its end, the
// rest is read and discarded for this long before closing: closing with
// unread data sends a reset, which can destroy the answer at the client.
constexpr std::chrono::milliseconds kLinger{1000};

asio::ip::address ToAsio(const common::IpAddress& address) {
  if (address.IsIpv6()) {
    asio::ip::address_v6::bytes_type bytes;
    std::copy_n(address.bytes.begin(), bytes.size(), bytes.begin());
    return asio::ip::address_v6(bytes);
  }
  asio::ip::address_v4::bytes_type bytes;
  std::copy_n(address.bytes.begin(), bytes.size(), bytes.begin());
  return asio::ip::address_v4(bytes);
}

Result<void> CheckLimits(const HttpLimits& limits,
                         const std::vector<HttpRoute>& routes) {
  if (limits.request_timeout.count() <= 0 || limits.write_timeout.count() <= 0 ||
      limits.max_connections == 0 || limits.max_connections_per_client == 0 ||
      limits.max_header_bytes < 256) {
    return Fail(Errc::kInvalidArgument,
                "HTTP limits out of range: timeouts must be positive, "
                "connection limits at least 1, max_header_bytes at least 256");
  }
  for (std::size_t i = 0; i < routes.size(); ++i) {
    if (!routes[i].path.starts_with("/") || !routes[i].handler) {
      return Fail(Errc::kInvalidArgument,
                  "HTTP route '" + routes[i].path +
                      "' needs a path starting with '/' and a handler");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (routes[j].path == routes[i].path) {
        return Fail(Errc::kInvalidArgument,
                    "HTTP route '" + routes[i].path + "' is given twice");
      }
    }
  }
  return {};
}

}  // namespace

std::string_view HttpDropName(HttpDrop drop) {
  switch (drop) {
    case HttpDrop::kRequestTimeout:
      return "request_timeout";
    case HttpDrop::kWriteTimeout:
      return "write_timeout";
    case HttpDrop::kClientLimit:
      return "client_limit";
    case HttpDrop::kServerLimit:
      return "server_limit";
  }
  return "unknown";
}

// Everything below runs on the server's one thread, except Start and Stop.
class HttpServer::Impl {
 public:
  Impl(std::vector<HttpRoute> routes, const HttpLimits& limits,
       HttpObserver observer)
      : routes_(std::move(routes)),
        limits_(limits),
        observer_(std::move(observer)),
        acceptor_(io_),
        retry_timer_(io_) {}

  Result<void> Bind(const common::HostPort& listen);
  void Run() {
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  void Stop();
  const common::HostPort& local() const { return local_; }

 private:
  class Connection;
  friend class Connection;

  void Accept();
  void Admit(tcp::socket socket);
  void Forget(const Connection* connection);
  Connection* OldestWaiting(const asio::ip::address* client) const;
  void Drop(HttpDrop why) const {
    if (observer_.dropped) observer_.dropped(why);
  }
  void ReportOpen(int change) const {
    if (observer_.open_connections_changed) {
      observer_.open_connections_changed(change);
    }
  }
  HttpResponse Answer(const HttpRequest& request) const;

  const std::vector<HttpRoute> routes_;
  const HttpLimits limits_;
  const HttpObserver observer_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_timer_;
  common::HostPort local_;
  // In order of acceptance: admission evicts the oldest waiting ones first.
  std::list<std::shared_ptr<Connection>> connections_;
  std::thread thread_;
};

class HttpServer::Impl::Connection
    : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Impl& server, tcp::socket socket, asio::ip::address client)
      : server_(server), stream_(std::move(socket)), client_(client) {
    parser_.header_limit(server_.limits_.max_header_bytes);
  }

  const asio::ip::address& client() const { return client_; }
  bool waiting() const { return waiting_; }

  void Read() {
    stream_.expires_after(server_.limits_.request_timeout);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec,
                                                 std::size_t) {
                       self->OnRead(ec);
                     });
  }

  // Evicted or stopped: the pending operation ends with operation_aborted.
  void Close() {
    closed_ = true;
    stream_.close();
  }

 private:
  void OnRead(beast::error_code ec) {
    if (closed_) return;
    waiting_ = false;
    if (ec == beast::error::timeout) {
      server_.Drop(HttpDrop::kRequestTimeout);
      return Finish();
    }
    if (ec == http::error::header_limit) {
      return Respond(11, {431, "text/plain; charset=utf-8",
                          "request header fields too large\n"},
                     false, true);
    }
    if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
        ec == asio::error::connection_reset) {
      return Finish();
    }
    if (ec) {
      return Respond(11, {400, "text/plain; charset=utf-8", "bad request\n"},
                     false, true);
    }
    const http::request<http::empty_body>& request = parser_.get();
    const std::string_view target(request.target().data(),
                                  request.target().size());
    const std::size_t question = target.find('?');
    HttpRequest view;
    view.method = std::string_view(request.method_string().data(),
                                   request.method_string().size());
    view.path = target.substr(0, question);
    view.query = question == std::string_view::npos
                     ? std::string_view()
                     : target.substr(question + 1);
    const bool head = request.method() == http::verb::head;
    Respond(request.version(), server_.Answer(view), head, false);
  }

  void Respond(unsigned version, HttpResponse answer, bool head, bool linger) {
    linger_ = linger;
    response_.version(version == 10 ? 10 : 11);
    response_.result(static_cast<unsigned>(answer.status));
    response_.set(http::field::content_type, answer.content_type);
    if (answer.status == 405) response_.set(http::field::allow, "GET, HEAD");
    for (const auto& [name, value] : answer.headers) response_.set(name, value);
    response_.keep_alive(false);
    response_.body() = std::move(answer.body);
    response_.prepare_payload();
    // HEAD: the headers of the GET answer, Content-Length included.
    if (head) response_.body().clear();
    stream_.expires_after(server_.limits_.write_timeout);
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code ec,
                                                  std::size_t) {
                        self->OnWritten(ec);
                      });
  }

  void OnWritten(beast::error_code ec) {
    if (closed_) return;
    if (ec == beast::error::timeout) {
      server_.Drop(HttpDrop::kWriteTimeout);
    } else if (!ec && server_.observer_.answered) {
      server_.observer_.answered(static_cast<int>(response_.result_int()));
    }
    if (!ec) {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      if (linger_) {
        waiting_ = true;  // nothing of value: may be evicted
        stream_.expires_after(kLinger);
        return Discard();
      }
    }
    Finish();
  }

  void Discard() {
    stream_.async_read_some(
        buffer_.prepare(4096),
        [self = shared_from_this()](beast::error_code ec, std::size_t) {
          if (self->closed_) return;
          self->buffer_.clear();
          if (ec) return self->Finish();
          self->Discard();
        });
  }

  void Finish() {
    Close();
    server_.Forget(this);
  }

  Impl& server_;
  beast::tcp_stream stream_;
  const asio::ip::address client_;
  beast::flat_buffer buffer_;
  http::request_parser<http::empty_body> parser_;
  http::response<http::string_body> response_;
  bool waiting_ = true;  // for its request
  bool linger_ = false;  // discard what follows the answer before closing
  bool closed_ = false;
};

Result<void> HttpServer::Impl::Bind(const common::HostPort& listen) {
  const tcp::endpoint endpoint(ToAsio(listen.address), listen.port);
  const std::string where = common::ToString(listen);
  beast::error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec && listen.address.IsIpv6()) {
    acceptor_.set_option(asio::ip::v6_only(true), ec);
  }
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    const Errc code = ec == asio::error::address_in_use ? Errc::kBusy
                      : ec == asio::error::access_denied ? Errc::kPermission
                                                         : Errc::kIo;
    return Fail(code, where + ": cannot listen: " +
                          common::ErrnoText(ec.value()));
  }
  local_ = listen;
  local_.port = acceptor_.local_endpoint().port();
  return {};
}

void HttpServer::Impl::Accept() {
  acceptor_.async_accept(io_, [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      retry_timer_.expires_after(kAcceptRetry);
      retry_timer_.async_wait([this](beast::error_code timer_ec) {
        if (!timer_ec) Accept();
      });
      return;
    }
    Admit(std::move(socket));
    Accept();
  });
}

void HttpServer::Impl::Admit(tcp::socket socket) {
  beast::error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return;  // already gone
  const asio::ip::address client = peer.address();
  const auto from_client = static_cast<std::size_t>(std::count_if(
      connections_.begin(), connections_.end(),
      [&](const auto& c) { return c->client() == client; }));
  if (from_client >= limits_.max_connections_per_client) {
    Drop(HttpDrop::kClientLimit);
    Connection* victim = OldestWaiting(&client);
    if (victim == nullptr) return;  // `socket` closes unread
    victim->Close();
    Forget(victim);
  }
  if (connections_.size() >= limits_.max_connections) {
    Drop(HttpDrop::kServerLimit);
    Connection* victim = OldestWaiting(nullptr);
    if (victim == nullptr) return;
    victim->Close();
    Forget(victim);
  }
  auto connection =
      std::make_shared<Connection>(*this, std::move(socket), client);
  connections_.push_back(connection);
  ReportOpen(+1);
  connection->Read();
}

HttpServer::Impl::Connection* HttpServer::Impl::OldestWaiting(
    const asio::ip::address* client) const {
  for (const auto& c : connections_) {
    if (c->waiting() && (client == nullptr || c->client() == *client)) {
      return c.get();
    }
  }
  return nullptr;
}

void HttpServer::Impl::Forget(const Connection* connection) {
  const auto it = std::find_if(
      connections_.begin(), connections_.end(),
      [&](const auto& c) { return c.get() == connection; });
  if (it == connections_.end()) return;
  connections_.erase(it);
  ReportOpen(-1);
}

HttpResponse HttpServer::Impl::Answer(const HttpRequest& request) const {
  if (request.method != "GET" && request.method != "HEAD") {
    return {405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
  }
  for (const HttpRoute& route : routes_) {
    if (route.path != request.path) continue;
    try {
      return route.handler(request);
    } catch (const std::exception& e) {
      return {500, "text/plain; charset=utf-8",
              std::string("internal error: ") + e.what() + "\n"};
    } catch (...) {
      return {500, "text/plain; charset=utf-8", "internal error\n"};
    }
  }
  std::string known;
  for (const HttpRoute& route : routes_) known += route.path + "\n";
  return {404, "text/plain; charset=utf-8",
          "not found; this server answers:\n" + known};
}

void HttpServer::Impl::Stop() {
  if (!thread_.joinable()) return;
  assert(thread_.get_id() != std::this_thread::get_id());
  asio::post(io_, [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    retry_timer_.cancel();
    for (const auto& c : connections_) {
      c->Close();
      ReportOpen(-1);
    }
    connections_.clear();
  });
  // With the acceptor and every socket closed, run() returns once their
  // handlers have seen operation_aborted.
  thread_.join();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(
    const common::HostPort& listen, std::vector<HttpRoute> routes,
    const HttpLimits& limits, HttpObserver observer) {
  if (auto checked = CheckLimits(limits, routes); !checked) {
    return tl::unexpected(checked.error());
  }
  auto impl =
      std::make_unique<Impl>(std::move(routes), limits, std::move(observer));
  if (auto bound = impl->Bind(listen); !bound) {
    return tl::unexpected(bound.error());
  }
  try {
    impl->Run();
  } catch (const std::system_error& e) {
    return Fail(Errc::kIo, common::ToString(listen) +
                               ": cannot start the HTTP server's thread: " +
                               e.what());
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::Stop() { impl_->Stop(); }

const common::HostPort& HttpServer::local() const { return impl_->local(); }

}  // namespace zcal::agent
