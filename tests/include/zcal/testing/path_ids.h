// The paths tests key the agent's state by: a configured path by its name,
// a peer by its sink's "ADDR:PORT".
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "zcal/agent/domain/path_id.h"
#include "zcal/common/address.h"

namespace zcal::testing {

inline agent::PathId ConfiguredPath(std::string name) {
  return agent::PathId::Configured(std::move(name));
}

/// The peer whose sink is `endpoint`; a test failure when it does not parse.
inline agent::PathId PeerPath(std::string_view endpoint) {
  const Result<common::HostPort> parsed = common::ParseHostPort(endpoint);
  EXPECT_TRUE(parsed) << endpoint;
  return agent::PathId::Peer(parsed ? *parsed : common::HostPort{});
}

}  // namespace zcal::testing

namespace zcal::agent {
// How GoogleTest prints a PathId in a failure.
inline void PrintTo(const PathId& path, std::ostream* out) { *out << ToString(path); }
}  // namespace zcal::agent
