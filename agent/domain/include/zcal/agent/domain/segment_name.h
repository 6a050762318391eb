// The name of the shared-memory segment: checked where the configuration
// is read and again where the writer creates it.
#pragma once

#include <cstddef>
#include <string>

#include "zcal/common/result.h"

namespace zcal::agent {

/// Bytes a segment name may have after its leading '/' (the reader's limit,
/// libzcal's name buffer).
inline constexpr std::size_t kMaxSegmentNameBytes = 250;

/// A segment name is "/NAME": one leading slash, 1 to kMaxSegmentNameBytes
/// more bytes, no other slash. kInvalidArgument with what to write instead.
Result<void> ValidateSegmentName(const std::string& name);

}  // namespace zcal::agent
