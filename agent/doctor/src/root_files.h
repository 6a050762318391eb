// Reading the small files of procfs and sysfs under a root directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zcal::agent::doctor {

/// ROOT/RELATIVE, e.g. ("/", "proc/sys/net/core/optmem_max").
std::string UnderRoot(std::string_view root, std::string_view relative);

/// The first line of the file, trimmed; nullopt when it cannot be read.
std::optional<std::string> ReadFirstLine(const std::string& path);

/// The file's first line as a whole decimal number; nullopt otherwise.
std::optional<std::uint64_t> ReadNumber(const std::string& path);

/// A sysctl under root: "net.core.optmem_max" reads
/// ROOT/proc/sys/net/core/optmem_max.
std::optional<std::string> ReadSysctl(std::string_view root, std::string_view name);
std::optional<std::uint64_t> ReadSysctlNumber(std::string_view root, std::string_view name);

}  // namespace zcal::agent::doctor
