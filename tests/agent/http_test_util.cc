#include "http_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace zcal::agent::testing {
namespace {

// Fills `storage` with host:port; false when `host` is not numeric.
bool ToAddress(const std::string& host, int port, sockaddr_storage& storage,
               socklen_t& length) {
  storage = {};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

}  // namespace

TcpClient::TcpClient(const std::string& host, int port,
                     const std::string& source) {
  sockaddr_storage to{};
  socklen_t to_length = 0;
  if (!ToAddress(host, port, to, to_length)) return;
  const int fd = socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  if (!source.empty()) {
    sockaddr_storage from{};
    socklen_t from_length = 0;
    if (!ToAddress(source, 0, from, from_length) ||
        bind(fd, reinterpret_cast<sockaddr*>(&from), from_length) != 0) {
      close(fd);
      return;
    }
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), to_length) != 0) {
    close(fd);
    return;
  }
  fd_ = fd;
}

TcpClient::~TcpClient() {
  if (fd_ >= 0) close(fd_);
}

TcpClient::TcpClient(TcpClient&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

bool TcpClient::Send(std::string_view data) const {
  while (!data.empty()) {
    const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string TcpClient::ReadToEnd(std::chrono::milliseconds timeout) const {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

bool TcpClient::Readable() const {
  char byte = 0;
  return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

bool TcpClient::PeerClosed() const {
  char byte = 0;
  const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

bool HasIpv6Loopback() {
  const int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_addr = in6addr_loopback;
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  close(fd);
  return ok;
}

std::optional<std::string> HttpExchange(const std::string& host, int port,
                                        const std::string& request,
                                        const std::string& source) {
  const TcpClient client(host, port, source);
  if (!client.ok() || !client.Send(request)) return std::nullopt;
  std::string response = client.ReadToEnd(std::chrono::milliseconds(5000));
  if (response.empty()) return std::nullopt;
  return response;
}

int StatusOf(const std::string& response) {
  if (!response.starts_with("HTTP/1.") || response.size() < 12) return 0;
  return std::atoi(response.c_str() + 9);
}

std::string BodyOf(const std::string& response) {
  const std::size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

std::optional<double> SeriesValue(const std::string& scrape,
                                  const std::string& series) {
  std::istringstream lines(scrape);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with(series + " ")) {
      return std::strtod(line.c_str() + series.size() + 1, nullptr);
    }
  }
  return std::nullopt;
}

}  // namespace zcal::agent::testing
