// Text placed in the report's HTML: one escape for the page and its
// applications' section.
#pragma once

#include <string>
#include <string_view>

namespace zcal::agent {

/// `text` with the five characters HTML gives meaning to (& < > " ')
/// replaced by their references: safe in element text and in quoted
/// attribute values.
inline std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace zcal::agent
