#pragma once

#include "zcal/common/address.h"
#include "zcal/common/unique_fd.h"
#include "zcal/probes/types/peer_failure.h"

namespace zcal::probes {

/// Opens a blocking TCP connection with TCP_NODELAY set, waiting at most
/// `timeout_ms` for the handshake. Errc::kFailed with the endpoint and
/// errno in the message, and how it failed: PeerFailure::kTimeout (no
/// answer within `timeout_ms`, or ETIMEDOUT), kUnreachable (refused,
/// unreachable, any other error of connect(2)), kLocalError (socket(2),
/// setsockopt, poll or fcntl on this host).
Result<common::UniqueFd, PeerError> ConnectTcp(const common::HostPort& endpoint,
                                               int timeout_ms = 2000);

}  // namespace zcal::probes
