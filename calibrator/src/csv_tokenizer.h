// An incremental RFC 4180 tokenizer: bytes go in as they are read, rows come
// out as soon as they are complete, so that a file of any length is parsed
// in bounded memory.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/common/result.h"

namespace zcal::calibrator {

struct CsvField {
  std::string text;
  std::size_t column = 1;  ///< 1-based byte column where the field starts
  bool quoted = false;
};

struct CsvRow {
  std::size_t line = 1;  ///< 1-based line where the row starts
  std::vector<CsvField> fields;
};

/// "SOURCE:LINE:COLUMN: ", the prefix of every message about a place.
std::string CsvWhere(std::string_view source, std::size_t line, std::size_t column);

/// Commas, double-quoted fields with "" escapes and quoted newlines; LF, CRLF
/// or CR line ends; blank lines and lines starting with '#' skipped; blanks
/// around unquoted fields trimmed; a leading UTF-8 BOM ignored. Anything but
/// UTF-8 text (a NUL, a control character, a broken or overlong sequence, a
/// surrogate) is an error at its place, naming its byte offset from the
/// start of the input (0-based, the BOM counted) and the bytes; so are a
/// record longer than `max_record_bytes` and one of more than `max_fields`
/// fields (the first record is called the header, its fields columns).
class CsvTokenizer {
 public:
  using RowSink = std::function<Result<void>(CsvRow&&)>;

  CsvTokenizer(std::string source, std::size_t max_record_bytes,
               std::size_t max_fields, RowSink sink);

  /// Tokenizes `bytes`, calling the sink for each complete row; the first
  /// error (of the text or of the sink) ends the input.
  Result<void> Feed(std::string_view bytes);

  /// Ends the input: the last row without a line end is delivered; an open
  /// quote is an error.
  Result<void> Finish();

 private:
  enum class State : std::uint8_t {
    kRowStart, kComment, kFieldStart, kUnquoted, kQuoted, kQuoteInQuoted,
    kAfterQuoted,
  };
  Result<void> Byte(char c);
  // One handler per state; each takes the byte Byte() has counted and
  // checked. A line end also notes a CR, whose LF is then skipped.
  bool LineEnd(char c);
  Result<void> InComment(char c);
  Result<void> AtRowStart(char c);
  Result<void> AtFieldStart(char c);
  Result<void> InUnquoted(char c);
  Result<void> InQuoted(char c);
  Result<void> AfterQuoteInQuoted(char c);
  Result<void> AfterQuoted(char c);
  Result<void> CheckUtf8(unsigned char c, std::uint64_t offset);
  tl::unexpected<Error> BrokenUtf8(unsigned char c) const;
  Result<void> EndField();
  Result<void> EndRow();
  void NewLine();
  tl::unexpected<Error> Bad(std::size_t line, std::size_t column,
                            const std::string& what) const;

  std::string source_;
  std::size_t max_record_bytes_;
  std::size_t max_fields_;
  RowSink sink_;
  std::uint64_t offset_ = 0;  // of the next byte, from the start of the input
  std::uint64_t rows_ = 0;    // delivered to the sink
  State state_ = State::kRowStart;
  std::size_t line_ = 1;
  std::size_t column_ = 0;  // of the byte being read
  bool after_cr_ = false;
  bool at_start_ = true;    // for the BOM
  std::size_t bom_seen_ = 0;
  // The UTF-8 sequence being read: its bytes so far, how many more it
  // needs, where it began, and the range its second byte must fall in
  // (narrower after E0, ED, F0, F4: no overlong forms, surrogates or code
  // points past U+10FFFF).
  int utf8_pending_ = 0;
  std::array<unsigned char, 4> utf8_bytes_{};
  std::size_t utf8_have_ = 0;
  std::uint64_t utf8_offset_ = 0;
  std::size_t utf8_line_ = 0;
  std::size_t utf8_column_ = 0;
  unsigned char utf8_second_min_ = 0x80;
  unsigned char utf8_second_max_ = 0xBF;
  CsvRow row_;
  CsvField field_;
  std::size_t trailing_blanks_ = 0;  // of an unquoted field
  std::size_t record_bytes_ = 0;
  std::size_t quote_line_ = 0;
  std::size_t quote_column_ = 0;
};

}  // namespace zcal::calibrator
