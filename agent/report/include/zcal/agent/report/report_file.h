// Writing a report: a file appears whole or not at all, and a bad input
// names its file, line and column. Shared by `zcal report`, `zcal calibrate
// --report` and `zcal analyze --report`.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "zcal/agent/report/report.h"
#include "zcal/common/result.h"

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
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  /// Writes `text`, sets mode 0644 and renames. kIo naming the path.
  Result<void> Commit(std::string_view text);

 private:
  PendingFile(std::string path, std::string temp, int fd)
      : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {}
  Result<void> WriteAll(std::string_view text);

  std::string path_, temp_;  // temp_ "": written in place (fd_) or stdout
  int fd_ = -1;  // -1: standard output, or closed
  bool committed_ = false;
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
