// Result type shared by every zcal C++ library (the common layer).
//
// Library code returns Result<T> instead of throwing: one spelling for every
// fallible call. The error type is Error unless a caller must branch on a
// finer kind than Errc; then it is a type derived from Error that adds the
// kind (probes::PeerError, probes::CalibrationError, ...), and the call
// returns Result<T, ThatError>. Such an error still converts to Error, so
// code that needs only the class and the message (an exit status, a log
// line) takes it as one. The alias lets std::expected replace tl::expected
// once the toolchain has it.
#pragma once

#include <cstddef>
#include <optional>
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

/// An Error about one field of an input (a setting, a key of a file, an
/// element of a list). Whoever makes it sets `field` and `detail`, so that a
/// caller that points at where the field was written (a YAML node, another
/// spelling of the setting) reads them and never parses `message`.
struct FieldError : Error {
  /// The field as the input's own schema names it, without a section or a
  /// spelling: "max_sessions", "allow", "peers.dns"; "" when the
  /// error is about the input as a whole.
  std::string field;
  /// The element of a list field that is at fault, when one is.
  std::optional<std::size_t> index;
  /// The sentence without the field's name ("1 to 64"); `message` is the
  /// whole sentence as the maker words it.
  std::string detail;

  FieldError() = default;
  FieldError(Errc errc, std::string text, std::string field_name, std::string detail_text,
             std::optional<std::size_t> element = std::nullopt)
      : Error{errc, std::move(text)},
        field(std::move(field_name)),
        index(element),
        detail(std::move(detail_text)) {}
};

/// T or an error of type E (Error, or a type derived from it).
template <typename T, typename E = Error>
using Result = tl::expected<T, E>;

/// Builds the unexpected value of a Result: `return Fail(Errc::kParse, msg);`
inline tl::unexpected<Error> Fail(Errc code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

/// Builds the unexpected value of a Result<T, E> from an error already
/// made: `return Fail(PeerError(...));`
template <typename E>
tl::unexpected<E> Fail(E error) {
  return tl::unexpected<E>(std::move(error));
}

}  // namespace zcal
