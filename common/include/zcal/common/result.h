// Result type shared by every zcal C++ library (the common layer).
//
// Library code returns Result<T> instead of throwing. The alias lets
// std::expected replace tl::expected once the toolchain has it.
#pragma once

#include <string>
#include <utility>

#include <tl/expected.hpp>

namespace zcal {

/// Broad class of a failure, for callers that branch on it (exit codes,
/// metric labels). The message carries the detail a user acts on.
enum class Errc {
  kInvalidArgument,  ///< bad option or value given by the caller
  kParse,            ///< malformed input file or text
  kIo,               ///< read/write/open failed
  kUnsupported,      ///< the kernel or environment lacks a feature
  kPermission,       ///< refused for ownership or privilege reasons
  kBusy,             ///< resource held by someone else (lock, segment)
  kNotFound,         ///< something expected to exist does not
  kFailed,           ///< an operation ran and failed (peer gone, send error)
};

/// An error: what class of failure and a sentence saying what was wrong,
/// where, and what to do.
struct Error {
  Errc code = Errc::kFailed;
  std::string message;
};

template <typename T>
using Result = tl::expected<T, Error>;

/// Builds the unexpected value of a Result: `return Fail(Errc::kParse, msg);`
inline tl::unexpected<Error> Fail(Errc code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

}  // namespace zcal
