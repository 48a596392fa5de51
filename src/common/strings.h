// String helpers. Debian's abseil is built with its own absl::string_view (not an alias of
// std::string_view), so absl::StrCat does not take std::string_view; this one does.
#pragma once

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

}  // namespace cxds
