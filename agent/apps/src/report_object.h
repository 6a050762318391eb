// One report object's bytes as the reader checks and copies them
// (docs/shm-abi.md, "Validation (readers)"): the header validated against
// the file's size, the name checked and sanitised, the slots summed. Pure
// functions over a mapping, so that the fuzz target and the tests reach
// them without a directory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "zcal/agent/apps/apps_reader.h"
#include "zcal/agent/domain/app_traffic.h"
#include "zcal/common/result.h"

namespace zcal::agent::apps {

/// Why an object's bytes were refused: the kind, and a message.
struct ObjectError : Error {
  AppRefusal kind = AppRefusal::kLayout;
  ObjectError(AppRefusal refusal, std::string text)
      : Error{Errc::kParse, std::move(text)}, kind(refusal) {}
};

/// What the header says, once validated.
struct ObjectHeader {
  std::uint32_t header_size = 0;
  std::uint32_t slot_size = 0;
  std::uint32_t slot_header_size = 0;
  std::uint32_t cell_size = 0;
  std::uint16_t scopes = 0;
  std::uint16_t methods = 0;
  std::uint32_t slots_used = 0;
  std::uint32_t owner_pid = 0;  ///< 1..INT32_MAX
  std::uint64_t generation = 0;
  bool closed = false;
  std::string name;  ///< sanitised: [A-Za-z0-9_.:-], 1..63 bytes
};

/// Validates the header of an object of `file_bytes` bytes mapped at
/// `base` (file_bytes >= 256; every field is read once with an atomic
/// load). Errors: kMagic, kVersion, kLayout, kName; kSize when the file
/// shrank below what is read (a SIGBUS, caught: InstallBusGuard must have
/// been called, as AppsReader's constructor does).
Result<ObjectHeader, ObjectError> ReadHeader(const unsigned char* base,
                                             std::uint64_t file_bytes);

/// The name as a label, or kName: `raw` up to its NUL must be 1..63 bytes
/// without a byte below 0x20, 0x7f or '/'; other bytes outside
/// [A-Za-z0-9_.:-] become '_'.
Result<std::string, ObjectError> SanitiseName(std::string_view raw);

/// The slots 0..slots_used-1 summed (slot 0 copied plainly, the others
/// through their seqlock, which only report ABI 1.0 writers keep; at most
/// `attempts` tries each), for the scopes
/// and methods this reader knows; cells all zero are left out. kTorn when
/// a slot stayed busy; kSize when the file shrank (as ReadHeader).
Result<AppCells, ObjectError> ReadCounts(const unsigned char* base, const ObjectHeader& header,
                                         int attempts);

/// The bytes ReadCounts loads for `header` (without retries).
std::uint64_t LoadBytes(const ObjectHeader& header);

/// True when some counter of `now` is below the same counter of `last`
/// (a cell of `last` missing from `now` counts as zeros).
bool WentBackwards(const AppCells& last, const AppCells& now);

}  // namespace zcal::agent::apps
