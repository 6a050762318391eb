#include "csv_tokenizer.h"

#include <span>
#include <utility>
#include <vector>

#include "zcal/common/units.h"

namespace zcal::calibrator {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

bool Blank(char c) { return c == ' ' || c == '\t'; }

std::string HexByte(unsigned char c) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return std::string{'0', 'x', kDigits[c >> 4], kDigits[c & 0xF]};
}

std::string HexBytes(std::span<const unsigned char> bytes) {
  std::string out;
  for (const unsigned char b : bytes) out += (out.empty() ? "" : " ") + HexByte(b);
  return out;
}

std::string Ordinal(std::size_t n) {
  switch (n) {
    case 2: return "2nd";
    case 3: return "3rd";
    default: return std::to_string(n) + "th";
  }
}

}  // namespace

std::string CsvWhere(std::string_view source, std::size_t line, std::size_t column) {
  return std::string(source) + ":" + std::to_string(line) + ":" +
         std::to_string(column) + ": ";
}

CsvTokenizer::CsvTokenizer(std::string source, std::size_t max_record_bytes,
                           std::size_t max_fields, RowSink sink)
    : source_(std::move(source)),
      max_record_bytes_(max_record_bytes),
      max_fields_(max_fields),
      sink_(std::move(sink)) {}

tl::unexpected<Error> CsvTokenizer::Bad(std::size_t line, std::size_t column,
                                        const std::string& what) const {
  return Fail(Errc::kParse, CsvWhere(source_, line, column) + what);
}

Result<void> CsvTokenizer::Feed(std::string_view bytes) {
  for (const char c : bytes) {
    if (at_start_) {
      // A UTF-8 byte order mark is not part of the first column's name.
      if (bom_seen_ < kBom.size() && c == kBom[bom_seen_]) {
        if (++bom_seen_ == kBom.size()) {
          at_start_ = false;
          offset_ += kBom.size();
        }
        continue;
      }
      at_start_ = false;
      for (std::size_t i = 0; i < bom_seen_; ++i) {
        if (auto ok = Byte(kBom[i]); !ok) return ok;
      }
    }
    if (auto ok = Byte(c); !ok) return ok;
  }
  return {};
}

tl::unexpected<Error> CsvTokenizer::BrokenUtf8(unsigned char c) const {
  std::vector<unsigned char> bytes(utf8_bytes_.begin(), utf8_bytes_.begin() + utf8_have_);
  bytes.push_back(c);
  const std::size_t length = utf8_have_ + static_cast<std::size_t>(utf8_pending_);
  return Bad(utf8_line_, utf8_column_,
             "invalid UTF-8 at byte offset " + std::to_string(utf8_offset_) + ": the bytes " +
                 HexBytes(bytes) + " are not a UTF-8 sequence (" + HexByte(utf8_bytes_[0]) +
                 " begins one of " + std::to_string(length) + " bytes, " + HexByte(c) +
                 " cannot be its " + Ordinal(utf8_have_ + 1) +
                 "); expected CSV text in UTF-8");
}

Result<void> CsvTokenizer::CheckUtf8(unsigned char c, std::uint64_t offset) {
  if (utf8_pending_ > 0) {
    const bool second = utf8_have_ == 1;
    const unsigned char min = second ? utf8_second_min_ : 0x80;
    const unsigned char max = second ? utf8_second_max_ : 0xBF;
    if (c < min || c > max) return BrokenUtf8(c);
    utf8_bytes_[utf8_have_++] = c;
    --utf8_pending_;
    return {};
  }
  if (c < 0x80) {
    const bool control = c < 0x20 && c != '\n' && c != '\r' && c != '\t';
    if (control) {
      return Bad(line_, column_,
                 "binary data (byte " + HexByte(c) + " at byte offset " +
                     std::to_string(offset) + "); expected CSV text with a header row");
    }
    return {};
  }
  utf8_second_min_ = 0x80;
  utf8_second_max_ = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    utf8_pending_ = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    utf8_pending_ = 2;
    if (c == 0xE0) utf8_second_min_ = 0xA0;
    if (c == 0xED) utf8_second_max_ = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    utf8_pending_ = 3;
    if (c == 0xF0) utf8_second_min_ = 0x90;
    if (c == 0xF4) utf8_second_max_ = 0x8F;
  } else {
    return Bad(line_, column_,
               "invalid UTF-8 at byte offset " + std::to_string(offset) + ": the byte " +
                   HexByte(c) + " begins no UTF-8 sequence; expected CSV text in UTF-8");
  }
  utf8_bytes_[0] = c;
  utf8_have_ = 1;
  utf8_offset_ = offset;
  utf8_line_ = line_;
  utf8_column_ = column_;
  return {};
}

void CsvTokenizer::NewLine() {
  ++line_;
  column_ = 0;
}

Result<void> CsvTokenizer::Byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  const std::uint64_t offset = offset_++;
  if (after_cr_) {
    after_cr_ = false;
    if (c == '\n') return {};  // the LF of a CRLF
  }
  ++column_;
  if (auto ok = CheckUtf8(u, offset); !ok) return ok;
  if (state_ != State::kRowStart && state_ != State::kComment &&
      ++record_bytes_ > max_record_bytes_) {
    return Bad(row_.line, 1,
               "a record longer than " +
                   common::FormatSizeApprox(static_cast<double>(max_record_bytes_)) +
                   "; expected one sample per line");
  }
  switch (state_) {
    case State::kComment: return InComment(c);
    case State::kRowStart: return AtRowStart(c);
    case State::kFieldStart: return AtFieldStart(c);
    case State::kUnquoted: return InUnquoted(c);
    case State::kQuoted: return InQuoted(c);
    case State::kQuoteInQuoted: return AfterQuoteInQuoted(c);
    case State::kAfterQuoted: return AfterQuoted(c);
  }
  return {};
}

bool CsvTokenizer::LineEnd(char c) {
  if (c != '\n' && c != '\r') return false;
  after_cr_ = c == '\r';
  return true;
}

Result<void> CsvTokenizer::InComment(char c) {
  if (LineEnd(c)) {
    NewLine();
    state_ = State::kRowStart;
  }
  return {};
}

Result<void> CsvTokenizer::AtRowStart(char c) {
  if (LineEnd(c)) {
    NewLine();
    return {};
  }
  if (c == '#') {
    state_ = State::kComment;
    return {};
  }
  row_ = CsvRow{line_, {}};
  record_bytes_ = 1;
  state_ = State::kFieldStart;
  field_ = CsvField{};
  field_.column = column_;
  return AtFieldStart(c);
}

Result<void> CsvTokenizer::AtFieldStart(char c) {
  if (Blank(c)) {
    field_.column = column_ + 1;
    return {};
  }
  field_.column = column_;
  if (c == '"') {
    field_.quoted = true;
    quote_line_ = line_;
    quote_column_ = column_;
    state_ = State::kQuoted;
    return {};
  }
  if (c == ',') return EndField();
  if (LineEnd(c)) return EndRow();
  state_ = State::kUnquoted;
  field_.text += c;
  trailing_blanks_ = 0;
  return {};
}

Result<void> CsvTokenizer::InUnquoted(char c) {
  if (c == ',') return EndField();
  if (LineEnd(c)) return EndRow();
  field_.text += c;
  trailing_blanks_ = Blank(c) ? trailing_blanks_ + 1 : 0;
  return {};
}

Result<void> CsvTokenizer::InQuoted(char c) {
  if (c == '"') {
    state_ = State::kQuoteInQuoted;
    return {};
  }
  field_.text += c;
  if (c == '\n') NewLine();
  return {};
}

Result<void> CsvTokenizer::AfterQuoteInQuoted(char c) {
  if (c == '"') {  // a doubled quote stands for one
    field_.text += '"';
    state_ = State::kQuoted;
    return {};
  }
  return AfterQuoted(c);
}

Result<void> CsvTokenizer::AfterQuoted(char c) {
  if (Blank(c)) {
    state_ = State::kAfterQuoted;
    return {};
  }
  if (c == ',') return EndField();
  if (LineEnd(c)) return EndRow();
  return Bad(line_, column_,
             "unexpected text after a quoted field; expected ',' or the "
             "end of the line");
}

Result<void> CsvTokenizer::EndField() {
  // Each field costs its bytes and a fixed overhead: a record of commas only
  // would otherwise take some 50 times its size.
  if (row_.fields.size() == max_fields_) {
    const std::string limit = std::to_string(max_fields_);
    return Bad(row_.line, field_.column,
               rows_ == 0 ? "a header of more than " + limit +
                                " columns; at most " + limit +
                                " are read, of which samples need method, size, mb_per_s and "
                                "cpu_pct"
                          : "a row of more than " + limit +
                                " fields; expected one sample per line");
  }
  if (!field_.quoted) field_.text.resize(field_.text.size() - trailing_blanks_);
  trailing_blanks_ = 0;
  row_.fields.push_back(std::move(field_));
  field_ = CsvField{};
  field_.column = column_ + 1;
  state_ = State::kFieldStart;
  return {};
}

Result<void> CsvTokenizer::EndRow() {
  if (auto ok = EndField(); !ok) return ok;
  state_ = State::kRowStart;
  record_bytes_ = 0;
  NewLine();
  ++rows_;
  return sink_(std::move(row_));
}

Result<void> CsvTokenizer::Finish() {
  if (utf8_pending_ > 0) {
    return Bad(utf8_line_, utf8_column_,
               "a truncated UTF-8 sequence at the end: the bytes " +
                   HexBytes(std::span(utf8_bytes_).first(utf8_have_)) + " at byte offset " +
                   std::to_string(utf8_offset_) + " begin one of " +
                   std::to_string(utf8_have_ + static_cast<std::size_t>(utf8_pending_)) +
                   " bytes; expected CSV text in UTF-8");
  }
  switch (state_) {
    case State::kRowStart:
    case State::kComment:
      return {};
    case State::kQuoted:
      return Bad(quote_line_, quote_column_,
                 "unterminated quoted field; expected a closing '\"'");
    default:
      if (auto ok = EndField(); !ok) return ok;
      state_ = State::kRowStart;
      ++rows_;
      return sink_(std::move(row_));
  }
}

}  // namespace zcal::calibrator
