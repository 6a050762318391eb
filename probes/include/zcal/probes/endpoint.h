// Where probes send: a TCP endpoint given by numeric address and port.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "zcal/calibrator/result.h"

namespace zcal::probes {

/// A numeric IPv4 or IPv6 address and a TCP port.
struct Endpoint {
  std::string host = "127.0.0.1";  ///< "127.0.0.1", "::1", "10.0.0.2", ...
  std::uint16_t port = 0;
};

/// Parses "ADDR:PORT" or "[V6ADDR]:PORT" (numeric addresses only, port
/// 1-65535). Errc::kInvalidArgument with a message naming the text
/// otherwise.
Result<Endpoint> ParseEndpoint(std::string_view text);

/// "127.0.0.1:5201" or "[::1]:5201".
std::string ToString(const Endpoint& endpoint);

/// Opens a blocking TCP connection with TCP_NODELAY set, waiting at most
/// `timeout_ms` for the handshake. Returns the socket, owned by the caller.
/// Errc::kFailed (refused, unreachable, timed out) with the endpoint and
/// errno in the message.
Result<int> ConnectTcp(const Endpoint& endpoint, int timeout_ms = 2000);

}  // namespace zcal::probes
