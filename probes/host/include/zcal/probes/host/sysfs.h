// Reading small sysfs/procfs files under a root directory that tests can
// point at a fake tree.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "zcal/common/result.h"

namespace zcal::probes {

/// ROOT joined with `relative` ("sys/class/net"), never escaping ROOT by a
/// leading slash.
std::filesystem::path UnderRoot(const std::string& root,
                                std::string_view relative);

/// The whole file (at most 1 MiB; a larger one is an error). Errc::kNotFound when it does not exist,
/// Errc::kIo when it cannot be read (a directory, EINVAL from a driver),
/// each with the path and the reason.
Result<std::string> ReadSmallFile(const std::filesystem::path& path);

/// The file's first line without surrounding white space.
Result<std::string> ReadFirstLine(const std::filesystem::path& path);

}  // namespace zcal::probes
