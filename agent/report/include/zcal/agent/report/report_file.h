// Writing a report: a file appears whole or not at all, and a bad input
// names its file, line and column. Shared by `zcal report`, `zcal calibrate
// --report` and `zcal analyze --report`.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "zcal/agent/report/report.h"
#include "zcal/common/atomic_file.h"
#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"

namespace zcal::agent {

/// A file written under a temporary name in its directory and renamed
/// over `path` by Commit, so that readers never see part of it; destroyed
/// uncommitted, the temporary file goes. A symbolic link's target is
/// replaced (the link stays); an existing device or pipe (/dev/null, a
/// FIFO) is written in place; "-" is standard output. Nothing is written
/// before Commit.
class PendingFile {
 public:
  /// Creates the temporary file now (so that an unwritable directory is
  /// found before a calibration runs). kIo naming the path and the errno.
  static Result<std::unique_ptr<PendingFile>> Create(const std::string& path);
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  /// Writes `text`, sets mode 0644 and renames. kIo naming the path.
  Result<void> Commit(std::string_view text);

 private:
  PendingFile(std::string path, std::unique_ptr<common::AtomicFile> file, common::UniqueFd fd)
      : path_(std::move(path)), file_(std::move(file)), fd_(std::move(fd)) {}
  Result<void> WriteInPlace(std::string_view text);
  std::string path_;
  std::unique_ptr<common::AtomicFile> file_;  // a regular file's replacement
  common::UniqueFd fd_;  // a device or pipe written in place; empty with no file_: stdout
};

/// Reads a report input (a samples CSV, `zcal calibrate --json`, `zcal
/// analyze --json` or an agent state file; "-" is standard input) into a
/// model. A CSV is analysed with `options`. kParse (bad input) with one line
/// "FILE:LINE:COLUMN: what is wrong"; kNotFound, kInvalidArgument (not a
/// file) or kIo when it cannot be read.
Result<ReportModel> LoadReportInput(const std::string& path,
                                    const calibrator::DecisionOptions& options);

/// Renders `model` (stamped with the time now) and commits it to `file`.
Result<void> WriteReport(PendingFile& file, ReportModel model);

}  // namespace zcal::agent
