// Private to the segment writer: the table as the segment stores it, and
// how a word of it is stored.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "zcal/agent/domain/published_entry.h"
#include "zcal/common/result.h"
#include "zcal/zcal.h"

namespace zcal::agent {

/// The entries of segment `name` in its layout (docs/shm-abi.md).
/// kInvalidArgument (naming the entry) for an unparsable address, a prefix
/// or interface name out of range, a threshold verdict without bytes, a
/// confidence outside [0,1], or two entries with the same scope and method.
Result<std::vector<zcal_shm_entry>> EncodeTable(std::span<const PublishedEntry> entries,
                                                const std::string& name);

// Readers load every word with acquire; the writer stores every word it
// changes with release, so that seqlock ordering needs no fence (which
// GCC 12 rejects under -fsanitize=thread). The writer and the heartbeat's
// health check store the same way.
template <typename T>
void StoreRelease(T* word, T value) {
  __atomic_store_n(word, value, __ATOMIC_RELEASE);
}

}  // namespace zcal::agent
