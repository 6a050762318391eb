// Every file zcal reads goes through here, so that no input can make it read
// without end: a configuration pointed at /dev/zero, a 4 GB file given to a
// reload, a device where a file was meant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"

namespace zcal::common {

/// What kind of file an input may be.
enum class InputKind : std::uint8_t {
  kRegular,        ///< a regular file (configuration, state, keys)
  kRegularOrPipe,  ///< also a FIFO or pipe ("-", <(...)): streamed inputs
};

/// The caps (docs/units.md lists them for users).
inline constexpr std::uint64_t kMaxConfigBytes = 1 << 20;     ///< 1 MiB
inline constexpr std::uint64_t kMaxStateBytes = 16 << 20;     ///< 16 MiB
inline constexpr std::uint64_t kMaxKeyFileBytes = 64 << 10;   ///< 64 KiB
inline constexpr std::uint64_t kMaxDocumentBytes = 64 << 20;  ///< 64 MiB

/// Opens `path` for reading ("-" is standard input, duplicated) after
/// checking its kind. `what` names the input in messages ("configuration").
/// Errors: kNotFound when it does not exist, kInvalidArgument when it is of
/// the wrong kind (a directory, a device, a socket), kPermission, kIo.
Result<UniqueFd> OpenInput(const std::string& path, InputKind kind,
                           std::string_view what);

/// Reads the whole input, refusing one larger than `max_bytes` (kInvalidArgument,
/// with the size and the cap) without holding more than max_bytes + 1 bytes.
Result<std::string> ReadBounded(const std::string& path, std::uint64_t max_bytes,
                                InputKind kind, std::string_view what);

/// The same on an open descriptor; `path` is for messages only.
Result<std::string> ReadBounded(int fd, const std::string& path,
                                std::uint64_t max_bytes, std::string_view what);

/// Reads up to `size` bytes (retrying EINTR); 0 at end of input. kIo with
/// `path` in the message on an error.
Result<std::size_t> ReadSome(int fd, const std::string& path, char* buffer,
                             std::size_t size);

}  // namespace zcal::common
