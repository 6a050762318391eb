// Raw TCP clients for the tests of the agent's HTTP listener: connections
// from a chosen loopback source address, partial requests, responses read
// to the end.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace zcal::agent::testing {

/// An owned client socket.
class TcpClient {
 public:
  /// Connects to `host`:`port` ("127.0.0.1", "::1") from `source` (any
  /// local address of the same family; "" lets the kernel choose). An
  /// invalid client (ok() false) when the connection fails.
  TcpClient(const std::string& host, int port, const std::string& source = "");
  ~TcpClient();
  TcpClient(TcpClient&& other) noexcept;
  TcpClient& operator=(TcpClient&&) = delete;
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  bool Send(std::string_view data) const;
  /// Everything received until the peer closes, an error, or `timeout`.
  std::string ReadToEnd(std::chrono::milliseconds timeout) const;
  /// True while received bytes wait to be read; never blocks.
  bool Readable() const;
  /// True once the peer has closed (end of stream or reset) and nothing is
  /// left unread; never blocks.
  bool PeerClosed() const;

 private:
  int fd_ = -1;
};

/// True when ::1 can be bound here (IPv6 enabled on lo).
bool HasIpv6Loopback();

/// Sends `request` and returns the whole response (status line, headers,
/// body); nullopt when the connection fails or nothing arrives in 5 s.
std::optional<std::string> HttpExchange(const std::string& host, int port,
                                        const std::string& request,
                                        const std::string& source = "");

/// The status code of a raw response ("HTTP/1.1 404 ..." -> 404), 0 if none.
int StatusOf(const std::string& response);

/// The body of a raw response (after the blank line).
std::string BodyOf(const std::string& response);

/// The value of the series `series` (name and labels exactly as exposed,
/// e.g. `zcal_http_responses_total{code="200"}`) in a scrape; nullopt
/// without such a series.
std::optional<double> SeriesValue(const std::string& scrape,
                                  const std::string& series);

}  // namespace zcal::agent::testing
