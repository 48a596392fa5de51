// String helpers. Debian's abseil is built with its own absl::string_view (not an alias of
// std::string_view), so absl::StrCat does not take std::string_view; this one does.
//
// Untrusted text (node ids, resource names, type URLs, nonces, versions and NACK error_detail
// sent by clients) goes into log lines and metric labels only through EscapeUntrusted, so a
// client cannot forge a log line (newline), a key=value pair (space, '=') or a quoted field
// ('"'), and cannot make one line or label arbitrarily long. Storage of such text (the NACK
// error kept in the ledger) goes through TruncateUntrusted.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

namespace cxds {

namespace strings_internal {
template <typename T>
void AppendPiece(std::string& out, const T& piece) {
  if constexpr (std::is_same_v<T, bool>) {
    out += piece ? "true" : "false";
  } else if constexpr (std::is_arithmetic_v<T>) {
    out += std::to_string(piece);
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out += std::string_view(piece);
  } else {
    out.append(piece.data(), piece.size());  // absl::string_view
  }
}
}  // namespace strings_internal

// Concatenates strings, string views, C strings and numbers.
template <typename... Pieces>
std::string StrCat(const Pieces&... pieces) {
  std::string out;
  (strings_internal::AppendPiece(out, pieces), ...);
  return out;
}

// `text` as a JSON string literal, quotes included.
inline std::string JsonQuote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += kHex[(c >> 4) & 0xf];
          out += kHex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Longest untrusted value a log line or label carries by default (bytes of the input).
inline constexpr size_t kUntrustedLogBytes = 256;

enum class UntrustedIn {
  kBare,    // a bare key=value field: space and '=' are escaped too (\x20, \x3d)
  kQuoted,  // inside "...": spaces stay
};

// Keeps at most `max_bytes` of `text` (cut at a UTF-8 character boundary); a longer text ends
// with "…(N bytes)", N its full length. For untrusted text that is stored, not printed.
inline std::string TruncateUntrusted(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  // Do not split a multi-byte character: back up over continuation bytes (10xxxxxx), at most
  // three (a character has no more). A longer run is not UTF-8, and backing up over all of
  // it would keep nothing of a message made of such bytes.
  for (int back = 0; back < 3 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80; ++back) cut--;
  std::string out(text.substr(0, cut));
  out += "\u2026(";  // "…"
  out += std::to_string(text.size());
  out += " bytes)";
  return out;
}

// `text` made safe for a log line or a metric label: backslash, '"', control characters,
// DEL and every byte >= 0x80 are escaped (\\, \", \n, \r, \t, \xNN), and so are space and
// '=' in UntrustedIn::kBare; only the first `max_bytes` of `text` are kept, followed by
// "…(N bytes)" when it is longer. The result is printable ASCII apart from that ellipsis.
inline std::string EscapeUntrusted(std::string_view text, size_t max_bytes = kUntrustedLogBytes,
                                   UntrustedIn where = UntrustedIn::kBare) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string_view kept = text.substr(0, std::min(text.size(), max_bytes));
  std::string out;
  out.reserve(kept.size() + 16);
  for (char c : kept) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '\\':
        out += "\\\\";
        continue;
      case '"':
        out += "\\\"";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      default:
        break;
    }
    const bool bare_special = where == UntrustedIn::kBare && (c == ' ' || c == '=');
    if (byte < 0x20 || byte >= 0x7f || bare_special) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  if (kept.size() < text.size()) {
    out += "\u2026(";
    out += std::to_string(text.size());
    out += " bytes)";
  }
  return out;
}

}  // namespace cxds
