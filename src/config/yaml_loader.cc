#include "config/yaml_loader.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "common/strings.h"
#include "config/tls_material.h"
#include "protocol/resource.h"
#include "re2/re2.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace cxds {

namespace {
// A part of an error as printed: at most `max_bytes` of it, with control characters and DEL
// escaped so that a newline in a key or scalar cannot split (or forge) a line. UTF-8 and
// quotes stay as they are: the text is for people reading their own config.
std::string PrintablePart(std::string_view text, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string cut = TruncateUntrusted(text, max_bytes);
  std::string out;
  out.reserve(cut.size());
  for (char c : cut) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

std::string ConfigError::ToString() const {
  std::string out = PrintablePart(file, 512);
  if (line > 0) out += StrCat(":", line);
  out += ": ";
  if (!object.empty()) out += PrintablePart(object, 300) + ": ";
  if (!field.empty()) out += PrintablePart(field, 300) + ": ";
  return out + PrintablePart(message, 1024);
}

std::string KindOf(const MeshObject& object) {
  static const char* kNames[] = {"Service",        "EndpointSlice",   "ServiceEntry", "WorkloadEntry",
                                 "VirtualService", "DestinationRule", "Sidecar",      "Pod",
                                 "Gateway",        "Secret",          "Endpoints"};
  static_assert(std::size(kNames) == std::variant_size_v<MeshObject>);
  return kNames[object.index()];
}

const ObjectMeta& MetaOf(const MeshObject& object) {
  return std::visit([](const auto& o) -> const ObjectMeta& { return o.meta; }, object);
}

bool IsConfigFileName(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (base.empty() || base[0] == '.' || base.back() == '~') return false;
  for (std::string_view ext : {".yaml", ".yml", ".json"}) {
    if (base.size() > ext.size() && base.substr(base.size() - ext.size()) == ext) return true;
  }
  return false;
}

namespace {

// Edit distance, bounded: keys are short, and a long one (hostile input) is not compared.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same =
          std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The known key `key` is most likely a typo of (at most 2 edits, and fewer than half its
// length), or nullptr.
const char* NearestKey(const std::string& key, absl::Span<const char* const> allowed,
                       absl::Span<const char* const> unsupported) {
  if (key.empty() || key.size() > 64) return nullptr;
  const char* best = nullptr;
  size_t best_distance = std::min<size_t>(3, (key.size() + 1) / 2);
  for (const auto& list : {allowed, unsupported}) {
    for (const char* candidate : list) {
      const size_t d = EditDistance(key, candidate);
      if (d < best_distance) {
        best = candidate;
        best_distance = d;
      }
    }
  }
  return best;
}

// Whether `text` is a number in JSON's grammar: -?(0|[1-9][0-9]*), then (not for `integer`) an
// optional fraction and exponent.
bool IsJsonNumber(std::string_view text, bool integer) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t start = i;
    while (i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i - start;
  };
  if (i < text.size() && text[i] == '-') ++i;
  if (i < text.size() && text[i] == '0') {
    ++i;
  } else if (digits() == 0) {
    return false;
  }
  if (!integer && i < text.size() && text[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  }
  if (!integer && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == text.size();
}

// An integer as Istio reads one from YAML (YAML 1.1 as go-yaml resolves a plain scalar, then
// JSON into a protobuf integer): decimal with an optional sign, 0x hexadecimal, 0b binary, 0o or
// a leading 0 octal ("010" is 8), '_' between digits; or a float with no fraction ("50.0",
// "1e2"). A quoted scalar (`plain` false) is a string: a JSON integer only ("-12", not "012" or
// "+12"), as protobuf's JSON reading takes one. nullopt: not an integer, or past int64.
std::optional<int64_t> YamlInteger(std::string_view text, bool plain) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  if (!plain && !IsJsonNumber(text, /*integer=*/true)) return std::nullopt;
  std::string digits;
  for (char c : text) {
    if (c != '_' || !plain) digits.push_back(plain ? absl::ascii_tolower(static_cast<unsigned char>(c)) : c);
  }
  if (digits.empty()) return std::nullopt;
  const bool negative = digits[0] == '-';
  const std::string_view body = std::string_view(digits).substr(digits[0] == '-' || digits[0] == '+' ? 1 : 0);
  const auto parse = [&](std::string_view number, int base) -> std::optional<int64_t> {
    if (number.empty()) return std::nullopt;
    uint64_t magnitude = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), magnitude, base);
    if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
    if (magnitude > (negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1)) return std::nullopt;
    return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  };
  if (!plain) return parse(body, 10);
  if (body.starts_with("0x")) return parse(body.substr(2), 16);
  if (body.starts_with("0b")) return parse(body.substr(2), 2);
  if (body.starts_with("0o")) return parse(body.substr(2), 8);
  if (body.size() > 1 && body[0] == '0' && body.find_first_not_of("01234567") == std::string_view::npos) {
    return parse(body.substr(1), 8);
  }
  if (std::optional<int64_t> decimal = parse(body, 10)) return decimal;
  if (body.find_first_not_of("0123456789.e+-") != std::string_view::npos) return std::nullopt;
  double value = 0;
  if (!absl::SimpleAtod(digits, &value) || !std::isfinite(value) || value != std::trunc(value) ||
      std::fabs(value) >= 9.2e18) {
    return std::nullopt;
  }
  return static_cast<int64_t>(value);
}

// Whether `node` is a plain (unquoted) scalar, or one tagged a number (!!int, !!float), which
// YAML 1.1 may read as a number.
bool IsPlainScalar(const YAML::Node& node) {
  return node.IsScalar() &&
         (node.Tag() == "?" || node.Tag() == "tag:yaml.org,2002:int" || node.Tag() == "tag:yaml.org,2002:float");
}

// A YAML 1.1 boolean, as Kubernetes and Istio read YAML (y, yes, true, on and n, no, false, off;
// each lower-case, capitalised or upper-case), from a plain scalar or one tagged !!bool. A quoted
// "true" is a string, which their schemas refuse for a boolean field.
std::optional<bool> YamlBoolWord(std::string_view word) {
  static const absl::flat_hash_map<std::string_view, bool> kWords = {
      {"y", true},      {"Y", true},    {"yes", true},  {"Yes", true}, {"YES", true},    {"true", true},
      {"True", true},   {"TRUE", true}, {"on", true},   {"On", true},  {"ON", true},     {"n", false},
      {"N", false},     {"no", false},  {"No", false},  {"NO", false}, {"false", false}, {"False", false},
      {"FALSE", false}, {"off", false}, {"Off", false}, {"OFF", false}};
  auto it = kWords.find(word);
  if (it == kWords.end()) return std::nullopt;
  return it->second;
}

std::optional<bool> YamlBool(const YAML::Node& node) {
  if (!node.IsScalar() || (node.Tag() != "?" && node.Tag() != "tag:yaml.org,2002:bool")) return std::nullopt;
  return YamlBoolWord(node.Scalar());
}

// Whether `text` is an integer as Go's strconv.ParseInt or ParseUint read one with base 0 (as
// go-yaml v2 tries them): an optional sign (ParseInt only), then 0x, 0o, 0b or a leading 0
// (octal), or decimal digits; within int64, or uint64 without a sign.
bool IsGoInteger(std::string_view text) {
  const char sign = !text.empty() && (text[0] == '+' || text[0] == '-') ? text[0] : '\0';
  std::string_view digits = text.substr(sign != '\0' ? 1 : 0);
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && absl::ascii_isalpha(static_cast<unsigned char>(digits[1]))) {
    const char prefix = absl::ascii_tolower(static_cast<unsigned char>(digits[1]));
    base = prefix == 'x' ? 16 : prefix == 'o' ? 8 : prefix == 'b' ? 2 : 0;
    if (base == 0) return false;
    digits.remove_prefix(2);
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    digits.remove_prefix(1);
  }
  if (digits.empty()) return false;
  uint64_t magnitude = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  if (ec != std::errc() || end != digits.data() + digits.size()) return false;
  if (sign == '\0') return true;  // ParseUint: up to 2^64 - 1
  return magnitude <= (sign == '-' ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1);
}

// Whether `text` is a finite float in Go's ParseFloat (decimal form only: go-yaml's pattern
// allows no other), which go-yaml v2 also needs: one that overflows stays a string.
bool IsFiniteFloat(const std::string& text) {
  double value = 0;
  return absl::SimpleAtod(text, &value) && std::isfinite(value);
}

// The type go-yaml v2 (with which Kubernetes and Istio decode YAML) resolves `text` to when it
// is written plain, without a tag: "null", "bool", "int", "float" or "str". go-yaml resolves
// `yes` and `on` to booleans and `1`, `0x1f`, `1.5` and `.inf` to numbers before the schema sees
// them. As go-yaml's resolve: only a scalar starting with a digit, a sign or '.' may be a
// number; on the digit and sign path '_' is dropped, then an integer (IsGoInteger), then a float
// of the form [-+]?(.d+|d+(.d*)?)([eE][-+]?d+)?; on the '.' path a float as written.
// Timestamps, which go-yaml turns into strings for a string field, are strings here.
std::string_view ResolvedYamlType(std::string_view text) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return "null";
  if (YamlBoolWord(text).has_value()) return "bool";
  static const absl::flat_hash_set<std::string_view> kSpecialFloats = {
      ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN"};
  if (kSpecialFloats.contains(text)) return "float";
  const char first = text[0];
  if (first == '.') {
    // ParseFloat of the text as written: ".5", ".5e3"; no '_' (Go allows one only after a base prefix).
    static const LazyRE2 kDotFloat = {R"(\.[0-9]+([eE][-+]?[0-9]+)?)"};
    return RE2::FullMatch(text, *kDotFloat) && IsFiniteFloat(std::string(text)) ? "float" : "str";
  }
  if (!absl::ascii_isdigit(static_cast<unsigned char>(first)) && first != '+' && first != '-') return "str";
  std::string plain;
  for (char c : text) {
    if (c != '_') plain.push_back(c);
  }
  if (IsGoInteger(plain)) return "int";
  static const LazyRE2 kFloat = {R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)"};
  return RE2::FullMatch(plain, *kFloat) && IsFiniteFloat(plain) ? "float" : "str";
}

// Whether go-yaml v2 (parseTimestamp) takes `text` as a timestamp: exactly four digits and '-',
// then, as Go's time.Parse reads them, one of "2006-1-2T15:4:5.999999999Z07:00" (or with 't'),
// "2006-1-2 15:4:5.999999999" and "2006-1-2": one- or two-digit month, day, hour, minute and
// second in range (the day for its month and year), any number of fraction digits after '.' or
// ',', a zone of 'Z' or +hh:mm / -hh:mm (hours up to 24, minutes up to 60, as Go allows).
bool IsYamlTimestamp(std::string_view text) {
  const auto digit = [&](size_t i) {
    return i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i]));
  };
  if (text.size() < 5 || !digit(0) || !digit(1) || !digit(2) || !digit(3) || text[4] != '-') return false;
  size_t at = 5;
  const auto number = [&](int& out) {  // Go's getnum, not fixed: one or two digits
    if (!digit(at)) return false;
    out = text[at++] - '0';
    if (digit(at)) out = out * 10 + (text[at++] - '0');
    return true;
  };
  const auto literal = [&](char c) { return at < text.size() && text[at] == c ? (++at, true) : false; };
  const int year = (text[0] - '0') * 1000 + (text[1] - '0') * 100 + (text[2] - '0') * 10 + (text[3] - '0');
  int month = 0, day = 0;
  if (!number(month) || month < 1 || month > 12 || !literal('-') || !number(day)) return false;
  const bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (day < 1 || day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) return false;
  if (at == text.size()) return true;  // "2006-1-2"
  const char separator = text[at++];
  if (separator != 'T' && separator != 't' && separator != ' ') return false;
  while (separator == ' ' && at < text.size() && text[at] == ' ') ++at;  // Go takes a run of spaces for one
  int hour = 0, minute = 0, second = 0;
  if (!number(hour) || hour > 23 || !literal(':') || !number(minute) || minute > 59 || !literal(':') ||
      !number(second) || second > 59) {
    return false;
  }
  if (at + 1 < text.size() && (text[at] == '.' || text[at] == ',') && digit(at + 1)) {
    ++at;
    while (digit(at)) ++at;
  }
  if (separator == ' ') return at == text.size();  // no zone in that layout
  if (literal('Z')) return at == text.size();
  if (text.size() - at != 6 || (text[at] != '+' && text[at] != '-') || !digit(at + 1) || !digit(at + 2) ||
      text[at + 3] != ':' || !digit(at + 4) || !digit(at + 5)) {
    return false;
  }
  const int zone_hours = (text[at + 1] - '0') * 10 + (text[at + 2] - '0');
  const int zone_minutes = (text[at + 4] - '0') * 10 + (text[at + 5] - '0');
  return zone_hours <= 24 && zone_minutes <= 60;
}

// What YAML 1.1 makes of `text` written as a plain scalar, when Kubernetes and Istio would not
// read it as a string: "a boolean", "a number", or "" for a string (or null, which callers
// handle apart). A string field given one is refused there, so cxds refuses it too rather than
// load a file they would not. A quoted scalar is always a string.
std::string_view PlainScalarKind(std::string_view text) {
  const std::string_view type = ResolvedYamlType(text);
  if (type == "bool") return "a boolean";
  return type == "int" || type == "float" ? "a number" : "";
}

std::string_view NonStringPlainScalar(const YAML::Node& node) {
  if (!node.IsScalar()) return "";
  if (YamlBool(node).has_value()) return "a boolean";
  if (!IsPlainScalar(node)) return "";
  return PlainScalarKind(node.Scalar());
}

// Validation context of one document.
class Reader {
 public:
  Reader(std::string file, std::vector<ConfigError>& errors) : file_(std::move(file)), errors_(errors) {}

  void set_object(std::string object) { object_ = std::move(object); }
  // The line of the document being read: where a missing field is reported.
  void set_document_line(int line) { document_line_ = line; }
  int error_count() const { return count_; }

  // `node` may be undefined (a missing key): yaml-cpp throws on Mark() of such a node, so the
  // document's line stands in.
  void Error(const YAML::Node& node, const std::string& field, const std::string& message) {
    count_++;
    errors_.push_back(
        ConfigError{file_, node.IsDefined() ? node.Mark().line + 1 : document_line_, object_, field, message});
  }

  // A missing node is "required" here: callers reach for a node they need.
  bool IsMap(const YAML::Node& node, const std::string& field) {
    if (!node.IsDefined()) {
      Error(node, field, "is required");
      return false;
    }
    if (node.IsMap()) return true;
    Error(node, field, "must be a map");
    return false;
  }
  bool IsSeq(const YAML::Node& node, const std::string& field) {
    if (!node.IsDefined()) {
      Error(node, field, "is required");
      return false;
    }
    if (node.IsSequence()) return true;
    Error(node, field, "must be a list");
    return false;
  }

  // Reports every key of `node` that is not in `allowed`. A key in `unsupported`, a field of
  // the Istio or Kubernetes API that cxds does not serve, is "not supported by cxds": valid
  // input is never called unknown. Any other key is unknown, with the nearest known key when it
  // looks like a typo.
  void OnlyKeys(const YAML::Node& node, const std::string& field, absl::Span<const char* const> allowed,
                absl::Span<const char* const> unsupported = {}) {
    if (!node.IsMap()) return;
    const auto in = [](absl::Span<const char* const> list, const std::string& key) {
      return std::any_of(list.begin(), list.end(), [&](const char* a) { return key == a; });
    };
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      if (in(allowed, key)) continue;
      if (in(unsupported, key)) {
        Error(entry.first, Join(field, key), "is not supported by cxds");
        continue;
      }
      std::string message = "unknown field";
      if (const char* near = NearestKey(key, allowed, unsupported))
        message += StrCat(" (did you mean \"", near, "\"?)");
      Error(entry.first, Join(field, key), message);
    }
  }

  std::optional<std::string> String(const YAML::Node& parent, const char* key, const std::string& field,
                                    bool required) {
    const YAML::Node node = parent[key];
    if (!node.IsDefined() || node.IsNull()) {
      if (required) Error(parent, Join(field, key), "is required");
      return std::nullopt;
    }
    if (!node.IsScalar()) {
      Error(node, Join(field, key), "must be a string");
      return std::nullopt;
    }
    if (!IsStringScalar(node, Join(field, key))) return std::nullopt;
    return node.Scalar();
  }

  // Refuses a plain scalar that YAML 1.1 reads as a boolean or a number where a string is
  // expected (see NonStringPlainScalar), with how to write it instead.
  bool IsStringScalar(const YAML::Node& node, const std::string& field) {
    const std::string_view what = NonStringPlainScalar(node);
    if (what.empty()) return true;
    // A long value (a number may be a file's worth of digits) is not repeated in the message.
    const std::string& text = node.Scalar();
    Error(node, field,
          text.size() <= 64 ? StrCat("must be a string: unquoted ", text, " is ", what,
                                     " in YAML as Kubernetes and Istio read it; quote it (\"", text, "\")")
                            : StrCat("must be a string: this unquoted value of ", text.size(), " characters is ", what,
                                     " in YAML as Kubernetes and Istio read it; quote it"));
    return false;
  }

  std::optional<uint32_t> Uint(const YAML::Node& parent, const char* key, const std::string& field, bool required,
                               uint32_t min, uint32_t max) {
    const YAML::Node node = parent[key];
    if (!node.IsDefined() || node.IsNull()) {
      if (required) Error(parent, Join(field, key), "is required");
      return std::nullopt;
    }
    return UintValue(node, Join(field, key), min, max);
  }

  std::optional<uint32_t> UintValue(const YAML::Node& node, const std::string& field, uint32_t min, uint32_t max) {
    const std::string text = node.IsScalar() ? node.Scalar() : "";
    if (const std::optional<int64_t> value = YamlInteger(text, IsPlainScalar(node));
        value.has_value() && *value >= int64_t{min} && *value <= int64_t{max}) {
      return static_cast<uint32_t>(*value);
    }
    Error(node, field, StrCat("must be an integer from ", min, " to ", max, ", got \"", text, "\""));
    return std::nullopt;
  }

  std::optional<bool> Bool(const YAML::Node& parent, const char* key, const std::string& field) {
    const YAML::Node node = parent[key];
    if (!node.IsDefined() || node.IsNull()) return std::nullopt;
    if (std::optional<bool> value = YamlBool(node); value.has_value()) return value;
    Error(
        node, Join(field, key),
        node.IsScalar() && node.Tag() == "!" ? "must be true or false, not a quoted string" : "must be true or false");
    return std::nullopt;
  }

  // Istio durations: "1.5s", "100ms", "2m", "1h".
  std::optional<absl::Duration> Duration(const YAML::Node& parent, const char* key, const std::string& field) {
    const YAML::Node node = parent[key];
    if (!node.IsDefined() || node.IsNull()) return std::nullopt;
    absl::Duration d;
    if (node.IsScalar() && absl::ParseDuration(node.Scalar(), &d) && d >= absl::ZeroDuration() &&
        node.Scalar().find_first_of("smh") != std::string::npos) {
      // protobuf's Duration ends at 10,000 years: a proxy refuses the resource past it.
      if (d <= kMaxProtoDuration) return d;
      Error(
          node, Join(field, key),
          StrCat("must be at most 315576000000.999999999s (10,000 years, the largest duration a proxy accepts), got \"",
                 node.Scalar().substr(0, 64), "\""));
      return std::nullopt;
    }
    Error(node, Join(field, key),
          StrCat("must be a duration such as \"1s\" or \"250ms\", got \"", node.IsScalar() ? node.Scalar() : "", "\""));
    return std::nullopt;
  }

  // protobuf's seconds end there; its nanos may be up to 999,999,999 on top.
  static inline const absl::Duration kMaxProtoDuration = absl::Seconds(315576000000) + absl::Nanoseconds(999999999);

  // A duration as Istio validates its fields (ValidateDuration): at least 1ms, and in whole
  // milliseconds ("1.5ms" and "100us" are refused there). With `unchecked_under_1ms`, a value
  // under 1ms is taken as it is, as Istio skips the check for one (tcp.idleTimeout: 0s is none).
  std::optional<absl::Duration> IstioDuration(const YAML::Node& parent, const char* key, const std::string& field,
                                              bool unchecked_under_1ms = false) {
    const std::optional<absl::Duration> d = Duration(parent, key, field);
    if (!d.has_value() || (unchecked_under_1ms && *d < absl::Milliseconds(1))) return d;
    if (*d < absl::Milliseconds(1)) {
      Error(parent[key], Join(field, key), "must be at least 1ms");
      return std::nullopt;
    }
    if (absl::Trunc(*d, absl::Milliseconds(1)) != *d) {
      Error(parent[key], Join(field, key),
            StrCat("must be a whole number of milliseconds, as Istio validates durations, got \"",
                   parent[key].Scalar().substr(0, 64), "\""));
      return std::nullopt;
    }
    return d;
  }

  // A number (Istio's double and DoubleValue fields) from `min` (excluded when `above_min`) to
  // `max`; `range` says so in the error.
  std::optional<double> Number(const YAML::Node& parent, const char* key, const std::string& field, double min,
                               double max, bool above_min, const char* range) {
    const YAML::Node node = parent[key];
    if (!node.IsDefined() || node.IsNull()) return std::nullopt;
    const std::optional<double> value = NumberValue(node);
    if (value.has_value() && (above_min ? *value > min : *value >= min) && *value <= max) return *value;
    Error(node, Join(field, key),
          StrCat("must be a number ", range, ", got \"", node.IsScalar() ? node.Scalar().substr(0, 64) : "", "\""));
    return std::nullopt;
  }

  // A finite number as Istio reads a double: a plain integer in its YAML 1.1 forms (YamlInteger),
  // else a decimal.
  static std::optional<double> NumberValue(const YAML::Node& node) {
    if (!node.IsScalar()) return std::nullopt;
    if (IsPlainScalar(node)) {
      if (const std::optional<int64_t> integer = YamlInteger(node.Scalar(), true)) return static_cast<double>(*integer);
    } else if (!IsJsonNumber(node.Scalar(), /*integer=*/false)) {
      return std::nullopt;  // a quoted number is read as JSON reads one
    }
    double value = 0;
    if (!absl::SimpleAtod(node.Scalar(), &value) || !std::isfinite(value)) return std::nullopt;
    return value;
  }

  // An Istio Percent, {value: 12.5}: 0 to 100.
  std::optional<double> Percent(const YAML::Node& parent, const char* key, const std::string& field) {
    const YAML::Node node = parent[key];
    if (!node.IsDefined() || node.IsNull()) return std::nullopt;
    const std::string f = Join(field, key);
    if (!IsMap(node, f)) return std::nullopt;
    OnlyKeys(node, f, {"value"});
    const YAML::Node value = node["value"];
    // Istio's Percent with no value is 0, as proto3 reads it.
    if (!value.IsDefined() || value.IsNull()) return 0.0;
    if (const std::optional<double> percent = NumberValue(value);
        percent.has_value() && *percent >= 0 && *percent <= 100) {
      return *percent;
    }
    Error(value, Join(f, "value"),
          StrCat("must be a number from 0 to 100, got \"", value.IsScalar() ? value.Scalar().substr(0, 64) : "", "\""));
    return std::nullopt;
  }

  // How a map of strings reads a null value: Kubernetes' own maps (ObjectMeta's, an
  // EndpointSlice's deprecatedTopology) as "", as its JSON decoding does; Istio's are refused.
  enum class NullValue { kRefused, kEmpty };

  LabelMap Labels(const YAML::Node& parent, const char* key, const std::string& field,
                  NullValue null_value = NullValue::kRefused) {
    LabelMap labels;
    const YAML::Node node = parent[key];
    if (!node.IsDefined() || node.IsNull()) return labels;
    if (!IsMap(node, Join(field, key))) return labels;
    for (const auto& entry : node) {
      if (entry.second.IsNull() && null_value == NullValue::kEmpty) {
        labels[entry.first.Scalar()] = "";
        continue;
      }
      if (!entry.second.IsScalar()) {
        Error(entry.second, Join(Join(field, key), entry.first.Scalar()), "must be a string");
        continue;
      }
      if (!IsStringScalar(entry.second, Join(Join(field, key), entry.first.Scalar()))) continue;
      labels[entry.first.Scalar()] = entry.second.Scalar();
    }
    return labels;
  }

  std::vector<std::string> Strings(const YAML::Node& parent, const char* key, const std::string& field, bool required) {
    std::vector<std::string> out;
    const YAML::Node node = parent[key];
    if (!node.IsDefined() || node.IsNull()) {
      if (required) Error(parent, Join(field, key), "is required");
      return out;
    }
    if (!IsSeq(node, Join(field, key))) return out;
    for (size_t i = 0; i < node.size(); ++i) {
      if (!node[i].IsScalar()) {
        Error(node[i], Index(Join(field, key), i), "must be a string");
        continue;
      }
      if (!IsStringScalar(node[i], Index(Join(field, key), i))) continue;
      out.push_back(node[i].Scalar());
    }
    if (required && node.size() == 0) Error(node, Join(field, key), "must not be empty");
    return out;
  }

  static std::string Join(const std::string& field, const std::string& key) {
    return field.empty() ? key : field + "." + key;
  }
  static std::string Index(const std::string& field, size_t i) { return StrCat(field, "[", i, "]"); }

 private:
  const std::string file_;
  std::vector<ConfigError>& errors_;
  std::string object_;
  int document_line_ = 0;
  int count_ = 0;
};

// Why `host` cannot name a service, or "" if it can: DNS labels of lowercase letters, digits
// and '-', at most 253 characters, optionally after a "*." wildcard. Anything else would
// collide in cluster names ("outbound|PORT|SUBSET|HOST" is split on '|') or in route matching.
// What Istio takes and cxds does not (upper-case letters; a first label "*foo" or "*-foo",
// which cxds's host matching takes only whole) is said so, once the host is valid to Istio.
std::string HostProblem(std::string_view host, bool allow_wildcard) {
  if (host.empty()) return "must not be empty";
  if (host.size() > 253) return StrCat("is ", host.size(), " characters long; a host has at most 253");
  const std::string lower = absl::AsciiStrToLower(std::string(host));
  std::string_view rest = lower;
  bool partial_wildcard = false;
  if (allow_wildcard && (rest == "*" || rest.starts_with("*."))) {
    if (rest == "*") return "";
    rest.remove_prefix(2);
  } else if (allow_wildcard && rest.starts_with('*')) {
    rest.remove_prefix(rest.starts_with("*-") ? 2 : 1);
    partial_wildcard = true;
  }
  size_t start = 0;
  while (start <= rest.size()) {
    size_t dot = rest.find('.', start);
    if (dot == std::string_view::npos) dot = rest.size();
    const std::string_view label = rest.substr(start, dot - start);
    if (label.empty() || label.size() > 63) return "must be DNS labels of 1 to 63 characters separated by '.'";
    for (const char c : label) {
      if (std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-') {
        continue;
      }
      return c == '*' ? "may use '*' only as a whole first label (\"*.example.com\")"
                      : "must contain only letters, digits, '-' and '.'";
    }
    if (label.front() == '-' || label.back() == '-') return "DNS labels must not start or end with '-'";
    start = dot + 1;
  }
  if (partial_wildcard) {
    return "a '*' that begins a label (\"*-foo.example.com\") is not supported by cxds: write '*' as a whole "
           "first label (\"*.example.com\")";
  }
  if (lower != host) {
    return "upper-case letters are not supported by cxds (Istio accepts them; DNS names compare ignoring case, so "
           "write the host in lower case)";
  }
  return "";
}

// Reports `host` at `node` if it cannot name a service.
void CheckHost(Reader& r, const YAML::Node& node, const std::string& field, const std::string& host,
               bool allow_wildcard) {
  if (host.empty()) return;  // "is required" was reported
  if (std::string problem = HostProblem(host, allow_wildcard); !problem.empty()) r.Error(node, field, problem);
}

// `ip` in its one canonical spelling (inet_ntop's: "::1", lowercase hex), or nullopt when it
// is no IPv4 or IPv6 address.
std::optional<std::string> CanonicalIp(const std::string& ip) {
  in_addr v4;
  in6_addr v6;
  char out[INET6_ADDRSTRLEN] = {};
  if (inet_pton(AF_INET, ip.c_str(), &v4) == 1) return inet_ntop(AF_INET, &v4, out, sizeof(out));
  if (inet_pton(AF_INET6, ip.c_str(), &v6) == 1) return inet_ntop(AF_INET6, &v6, out, sizeof(out));
  return std::nullopt;
}

// Why a tunnel's targetHost is not one, or "": an IP address, or a DNS name as Istio's
// ValidateFQDN takes one (at most 255 characters, DNS labels, a trailing '.' allowed, and
// a last label that is not all digits).
std::string TunnelTargetProblem(const std::string& host) {
  if (CanonicalIp(host).has_value()) return "";
  // An IPv6 address with a zone ("fe80::1%eth0"), which Istio's address check takes too.
  if (const size_t zone = host.find('%'); zone != std::string::npos && zone + 1 < host.size()) {
    in6_addr v6;
    if (inet_pton(AF_INET6, host.substr(0, zone).c_str(), &v6) == 1) return "";
  }
  const auto bad = [&](std::string_view why) {
    return StrCat("must be a DNS name or an IP address, got \"", host.substr(0, 64), "\" (", why, ")");
  };
  if (host.empty()) return bad("empty");
  if (host.size() > 255) return bad(StrCat(host.size(), " characters; a DNS name has at most 255"));
  const std::string_view name = host.ends_with('.') ? std::string_view(host).substr(0, host.size() - 1) : host;
  std::string_view label;
  for (size_t start = 0; start <= name.size();) {
    const size_t dot = std::min(name.find('.', start), name.size());
    label = name.substr(start, dot - start);
    // (A name of one label is one to HostProblem too.)
    // (Istio takes upper-case letters here, and so does Envoy's CONNECT request.)
    if (std::string problem = HostProblem(absl::AsciiStrToLower(std::string(label)), /*allow_wildcard=*/false);
        !problem.empty()) {
      return bad(problem);
    }
    start = dot + 1;
  }
  // (After a trailing '.', Istio's last label is the empty one, which this does not refuse.)
  if (!host.ends_with('.') &&
      std::all_of(label.begin(), label.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return bad("a DNS name's last label cannot be all digits");
  }
  return "";
}

// Why `address` cannot be an endpoint address, or "": cxds serves IP addresses only, since it
// does not resolve names (a hostname here would reach proxies unresolved and break traffic).
std::string AddressProblem(const std::string& address) {
  in_addr v4;
  in6_addr v6;
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1 || inet_pton(AF_INET6, address.c_str(), &v6) == 1) return "";
  if (address.starts_with("unix://")) return "Unix domain socket addresses are not supported by cxds";
  return StrCat("must be an IPv4 or IPv6 address, got \"", address.substr(0, 64),
                "\" (hostnames need DNS resolution, which is not supported by cxds)");
}

// Keys of a DNS-1123 name: lowercase alphanumerics and '-', '.'.
bool IsDnsName(const std::string& s) {
  return !s.empty() && s.size() <= 253 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
           c == '.';
  });
}

// A DNS-1123 label: namespaces and subset names, which appear inside hosts and cluster names.
bool IsDnsLabel(const std::string& s) {
  return !s.empty() && s.size() <= 63 && s.front() != '-' && s.back() != '-' &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                  c == '-';
         });
}

// A Kubernetes port name (IANA service name): at most 15 lowercase letters, digits and '-',
// with a letter, no leading, trailing or double '-'.
bool IsPortName(const std::string& s) {
  return !s.empty() && s.size() <= 15 && s.front() != '-' && s.back() != '-' && s.find("--") == std::string::npos &&
         std::any_of(s.begin(), s.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); }) &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                  c == '-';
         });
}

// Of the fields the Kubernetes API server sets (ReadMeta accepts all of them, so that what
// `kubectl get -o yaml` prints is read unchanged), those it rewrites on every update: left out
// of the canonical text (ServerSetFree), so that exporting an object again is not a change.
constexpr const char* kVolatileMetadata[] = {"uid", "resourceVersion", "generation", "managedFields", "selfLink"};

ObjectMeta ReadMeta(Reader& r, const YAML::Node& doc) {
  ObjectMeta meta;
  const YAML::Node node = doc["metadata"];
  if (!node.IsDefined()) {
    r.Error(doc, "metadata", "is required");
    return meta;
  }
  if (!r.IsMap(node, "metadata")) return meta;
  r.OnlyKeys(node, "metadata",
             {"name", "namespace", "labels", "annotations", "uid", "resourceVersion", "generation", "creationTimestamp",
              "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink", "generateName",
              "ownerReferences", "finalizers"});
  meta.name = r.String(node, "name", "metadata", true).value_or("");
  if (node["name"].IsDefined() && !node["name"].IsNull() && meta.name.empty()) {
    r.Error(node["name"], "metadata.name", "must not be empty");  // `name: ""` or `name: !!str`
  } else if (!meta.name.empty() && !IsDnsName(meta.name)) {
    r.Error(node["name"], "metadata.name", "must be a lowercase DNS name (a-z, 0-9, '-', '.')");
  }
  meta.namespace_name = r.String(node, "namespace", "metadata", false).value_or("default");
  if (!IsDnsLabel(meta.namespace_name)) {
    r.Error(node["namespace"], "metadata.namespace", "must be a DNS label (a-z, 0-9, '-'; at most 63 characters)");
  }
  meta.labels = r.Labels(node, "labels", "metadata", Reader::NullValue::kEmpty);
  // Typed only: strings, as Kubernetes has them.
  r.Labels(node, "annotations", "metadata", Reader::NullValue::kEmpty);
  if (auto created = r.String(node, "creationTimestamp", "metadata", false)) {
    absl::Time t;
    std::string why;
    if (absl::ParseTime(absl::RFC3339_full, *created, &t, &why)) {
      meta.creation_timestamp = t;
    } else {
      r.Error(
          node["creationTimestamp"], "metadata.creationTimestamp",
          StrCat("must be an RFC 3339 time such as \"2026-11-30T10:00:00Z\", got \"", created->substr(0, 64), "\""));
    }
  }
  return meta;
}

std::string Upper(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

// Istio's protocols (pkg/config/protocol): those cxds serves, routed as HTTP or proxied as
// opaque TCP (IsHttpProtocol), and those it does not.
const std::set<std::string>& ServedProtocols() {
  static const std::set<std::string> kServed = {"HTTP", "HTTP2", "GRPC",  "TCP",  "HTTPS",
                                                "TLS",  "MONGO", "MYSQL", "REDIS"};
  return kServed;
}
bool IsUnservedIstioProtocol(const std::string& upper) {
  return upper == "GRPC-WEB" || upper == "UDP" || upper == "HTTP_PROXY";
}

// Reports `upper` (from `node` at `field`) unless cxds serves it.
void CheckProtocol(Reader& r, const YAML::Node& node, const std::string& field, const std::string& upper,
                   const char* source) {
  if (ServedProtocols().contains(upper)) return;
  if (IsUnservedIstioProtocol(upper)) {
    r.Error(node, field, StrCat("protocol ", upper, " is not supported by cxds"));
  } else {
    r.Error(node, field,
            StrCat(source, " \"", TruncateUntrusted(upper, 64),
                   "\" is not a protocol Istio knows (HTTP, HTTP2, GRPC, TCP, HTTPS, "
                   "TLS, MONGO, MYSQL, REDIS, GRPC-WEB, UDP)"));
  }
}

std::string Protocol(Reader& r, const YAML::Node& port, const std::string& field) {
  std::optional<std::string> protocol = r.String(port, "protocol", field, false);
  // "" is unset, as Istio reads it (its protocol then detected, which cxds serves as HTTP).
  if (!protocol.has_value() || protocol->empty()) return "HTTP";
  const std::string upper = Upper(*protocol);
  CheckProtocol(r, port["protocol"], Reader::Join(field, "protocol"), upper, "protocol");
  return upper;
}

}  // namespace

std::string KubernetesPortProtocol(std::string_view name, std::optional<std::string_view> app_protocol) {
  std::string token(app_protocol.value_or(name));
  if (app_protocol.has_value()) {
    // Kubernetes' standard application protocols (Service.spec.ports[].appProtocol).
    if (token == "kubernetes.io/h2c") return "HTTP2";
    if (token == "kubernetes.io/ws") return "HTTP";
    if (token == "kubernetes.io/wss") return "HTTPS";
  }
  std::string upper = Upper(token);
  if (upper.starts_with("GRPC-WEB")) return "GRPC-WEB";  // before the prefix cut: it has a '-'
  upper = upper.substr(0, upper.find('-'));
  if (ServedProtocols().contains(upper) || IsUnservedIstioProtocol(upper)) return upper;
  return "";
}

bool HostSubsetOf(std::string_view name, std::string_view of) {
  const auto wildcard = [](std::string_view h) { return h.starts_with('*'); };
  if (wildcard(name)) return wildcard(of) && name.substr(1).ends_with(of.substr(1));
  if (wildcard(of)) return name.ends_with(of.substr(1));
  return name == of;
}

bool IsHttpProtocol(std::string_view protocol) {
  return protocol == "HTTP" || protocol == "HTTP2" || protocol == "GRPC";
}

bool IsTlsProtocol(std::string_view protocol) { return protocol == "TLS" || protocol == "HTTPS"; }

namespace {

std::vector<ServicePort> Ports(Reader& r, const YAML::Node& spec, const std::string& field, bool k8s) {
  std::vector<ServicePort> ports;
  const YAML::Node node = spec["ports"];
  const std::string list = Reader::Join(field, "ports");
  // Istio takes a ServiceEntry without ports, and Kubernetes a headless Service: they serve
  // nothing (no cluster, route or listener), as in istiod. Kubernetes takes an ExternalName
  // Service without ports too (an alias uses its host's).
  const YAML::Node cluster_ip = k8s ? spec["clusterIP"] : YAML::Node();
  const YAML::Node type = k8s ? spec["type"] : YAML::Node();
  // An alias serves its host's ports (MeshContext::AliasesOf), never its own: they are
  // typed as Kubernetes types them, and nothing in them is refused as unsupported.
  const bool alias = type.IsDefined() && type.IsScalar() && type.Scalar() == "ExternalName";
  const bool headless = (cluster_ip.IsDefined() && cluster_ip.IsScalar() && cluster_ip.Scalar() == "None") || alias;
  if (!node.IsDefined() || ((!k8s || headless) && node.IsNull())) {
    if (k8s && !headless) r.Error(spec, list, "is required");
    return ports;
  }
  if (!r.IsSeq(node, list)) return ports;
  // Kubernetes takes a port number once per protocol (DNS on 53 over UDP and TCP); Istio once.
  std::set<std::pair<std::string, uint32_t>> numbers;
  std::set<std::string> names;  // Kubernetes: each port of a Service of several is named, once
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string f = Reader::Index(list, i);
    const YAML::Node p = node[i];
    if (!r.IsMap(p, f)) continue;
    ServicePort port;
    if (k8s) {
      // nodePort is set by the API server for NodePort and LoadBalancer Services; ignored.
      r.OnlyKeys(p, f, {"name", "port", "targetPort", "protocol", "appProtocol", "nodePort"});
      port.number = r.Uint(p, "port", f, true, 1, 65535).value_or(0);
      const std::optional<std::string> app = r.String(p, "appProtocol", f, false);
      port.protocol = KubernetesPortProtocol(r.String(p, "name", f, false).value_or(""), app);
      // As Istio's ConvertProtocol: a port it cannot place by name is TCP on the well-known
      // ports of SMTP, DNS, MySQL and MongoDB (no detection there).
      if (port.protocol.empty() &&
          (port.number == 25 || port.number == 53 || port.number == 3306 || port.number == 27017)) {
        port.protocol = "TCP";
      }
      if (port.protocol.empty()) {
        // Istio would sniff the protocol; cxds does not, and serves HTTP. An appProtocol it
        // cannot place is refused rather than guessed.
        // (Kubernetes takes any appProtocol of a qualified name's form, and Istio detects the
        // protocol of one it does not know.)
        if (app.has_value() && !alias) {
          r.Error(p["appProtocol"], Reader::Join(f, "appProtocol"),
                  StrCat("appProtocol \"", TruncateUntrusted(*app, 64),
                         "\" is not supported by cxds: Istio would detect the protocol from the traffic, which cxds "
                         "does not do; use one cxds serves (http, http2, grpc, tcp, https, tls, mongo, mysql, redis, "
                         "kubernetes.io/h2c, kubernetes.io/ws, kubernetes.io/wss)"));
        }
        port.protocol = "HTTP";
      } else if (!alias) {
        CheckProtocol(r, app.has_value() ? p["appProtocol"] : p["name"],
                      Reader::Join(f, app.has_value() ? "appProtocol" : "name"), port.protocol, "protocol");
      }
      // A named targetPort ("http-web") is the Pods' container port name: the EndpointSlice
      // already carries its number for this port, which is what endpoints are served with.
      // A plain scalar YAML 1.1 reads as a number ("0x1f90") is one, as Kubernetes reads it.
      if (const YAML::Node target = p["targetPort"];
          target.IsDefined() && !(target.IsScalar() && IsPortName(target.Scalar()) &&
                                  !(IsPlainScalar(target) && YamlInteger(target.Scalar(), true).has_value()))) {
        port.target_port = r.Uint(p, "targetPort", f, false, 1, 65535).value_or(0);
      }
      if (auto proto = r.String(p, "protocol", f, false); proto.has_value() && *proto != "TCP") {
        if (*proto == "UDP" || *proto == "SCTP") {
          if (!alias) {
            r.Error(p["protocol"], Reader::Join(f, "protocol"), StrCat(*proto, " ports are not supported by cxds"));
          }
        } else {
          r.Error(p["protocol"], Reader::Join(f, "protocol"), "must be TCP, UDP or SCTP");
        }
      }
    } else {
      r.OnlyKeys(p, f, {"name", "number", "protocol", "targetPort"});
      port.number = r.Uint(p, "number", f, true, 1, 65535).value_or(0);
      port.target_port = r.Uint(p, "targetPort", f, false, 1, 65535).value_or(0);
      port.protocol = Protocol(r, p, f);
    }
    const std::optional<std::string> given_name = r.String(p, "name", f, false);
    port.name = given_name.value_or(StrCat("port-", port.number));
    if (k8s && (!given_name.has_value() || given_name->empty())) {
      if (node.size() > 1) {
        r.Error(p, Reader::Join(f, "name"),
                "is required when the Service has more than one port, as Kubernetes validates");
      }
    } else if (k8s && !names.insert(*given_name).second) {
      r.Error(p["name"], Reader::Join(f, "name"),
              StrCat("\"", TruncateUntrusted(*given_name, 64), "\" is listed twice, as Kubernetes refuses"));
    }
    const std::string l4 =
        k8s && p["protocol"].IsDefined() && p["protocol"].IsScalar() ? p["protocol"].Scalar() : std::string("TCP");
    if (port.number != 0 && !numbers.insert({l4, port.number}).second) {
      r.Error(p, f,
              StrCat("port ", port.number, k8s ? StrCat(" (", TruncateUntrusted(l4, 8), ")") : "", " is listed twice"));
    }
    ports.push_back(std::move(port));
  }
  if (k8s && !headless && ports.empty() && node.size() == 0) r.Error(node, list, "must not be empty");
  return ports;
}

// A locality as Istio reads it: "region/zone/subzone", the subzone taking any further '/'
// (istiod's SplitN of 3). Bounded, and printable, since it is sent in EDS.
std::string LocalityProblem(const std::string& locality) {
  if (locality.size() > 253) return "must be at most 253 characters";
  for (const char c : locality) {
    if (c <= ' ' || c == 0x7f) return "must not contain spaces or control characters";
  }
  return "";
}

// `names_allowed`: a ServiceEntry of resolution DNS, whose endpoint addresses may be names.
WorkloadEndpoint ReadWorkload(Reader& r, const YAML::Node& node, const std::string& field, bool names_allowed = false) {
  WorkloadEndpoint w;
  r.OnlyKeys(node, field, {"address", "ports", "labels", "weight", "network", "locality", "serviceAccount"});
  for (const char* unsupported : {"network", "serviceAccount"}) {
    if (node[unsupported].IsDefined()) {
      r.Error(node[unsupported], Reader::Join(field, unsupported), "is not supported by cxds");
    }
  }
  w.address = r.String(node, "address", field, true).value_or("");
  if (!w.address.empty()) {
    std::string problem = AddressProblem(w.address);
    if (!problem.empty() && names_allowed && !w.address.starts_with("unix://")) {
      problem = HostProblem(w.address, /*allow_wildcard=*/false);
    }
    if (!problem.empty()) r.Error(node["address"], Reader::Join(field, "address"), problem);
  }
  if (node["ports"].IsDefined() && r.IsMap(node["ports"], Reader::Join(field, "ports"))) {
    for (const auto& entry : node["ports"]) {
      if (auto v =
              r.UintValue(entry.second, Reader::Join(Reader::Join(field, "ports"), entry.first.Scalar()), 1, 65535)) {
        w.ports[entry.first.Scalar()] = *v;
      }
    }
  }
  w.labels = r.Labels(node, "labels", field);
  w.weight = r.Uint(node, "weight", field, false, 1, 1u << 31).value_or(0);
  w.locality = r.String(node, "locality", field, false).value_or("");
  if (std::string problem = LocalityProblem(w.locality); !problem.empty()) {
    r.Error(node["locality"], Reader::Join(field, "locality"), problem);
  }
  return w;
}

// exportTo (ServiceEntry, VirtualService, DestinationRule), as Istio validates it: "*", ".",
// "~" (a ServiceEntry's only) or namespace names, each once ("." and the object's own namespace
// name the same one); "*" and "~" only alone.
// Entries of one exportTo: every proxy's visibility checks walk them on every push.
constexpr size_t kMaxExportTo = 256;

std::vector<std::string> ReadExportTo(Reader& r, const YAML::Node& spec, const std::string& namespace_name,
                                      bool service_entry) {
  std::vector<std::string> out = r.Strings(spec, "exportTo", "spec", false);
  if (out.size() > kMaxExportTo) {
    r.Error(spec["exportTo"], "spec.exportTo",
            StrCat("more than ", kMaxExportTo, " entries are not supported by cxds"));
    return {};
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string& to = out[i];
    const std::string f = Reader::Index("spec.exportTo", i);
    if (!seen.insert(to == "." ? namespace_name : to).second) {
      // The earlier entry naming the same namespace: "." beside the name is the pair to say.
      const auto earlier = std::find_if(out.begin(), out.begin() + i, [&](const std::string& e) {
        return (e == "." ? namespace_name : e) == (to == "." ? namespace_name : to);
      });
      const bool dot = earlier != out.begin() + i && ((to == ".") != (*earlier == "."));
      r.Error(spec["exportTo"][i], f,
              dot ? StrCat("\".\" and \"", namespace_name, "\" both name this namespace: list it once")
                  : StrCat("\"", to.substr(0, 64), "\" is listed twice"));
    } else if (to == "~" && !service_entry) {
      r.Error(spec["exportTo"][i], f,
              "\"~\" (no namespace) is allowed for a ServiceEntry only, as Istio validates: export to \".\" to keep "
              "it to this namespace");
    } else if ((to == "*" || to == "~") && out.size() > 1) {
      r.Error(spec["exportTo"][i], f, StrCat("\"", to, "\" must be the only entry"));
    } else if (to != "*" && to != "~" && to != "." && !IsDnsLabel(to)) {
      r.Error(spec["exportTo"][i], f,
              StrCat("must be \"*\", \".\", ", service_entry ? "\"~\" " : "",
                     "or a namespace name, a DNS label (a-z, 0-9, '-'; at most 63 characters)"));
    }
  }
  return out;
}

std::optional<LabelMap> Selector(Reader& r, const YAML::Node& spec, const std::string& field) {
  const YAML::Node node = spec["workloadSelector"];
  if (!node.IsDefined()) return std::nullopt;
  const std::string f = Reader::Join(field, "workloadSelector");
  if (!r.IsMap(node, f)) return std::nullopt;
  r.OnlyKeys(node, f, {"labels"});
  return r.Labels(node, "labels", f);
}

// The Service annotation networking.istio.io/exportTo, as istiod reads it: entries separated by
// commas, spaces around each dropped, each "*", ".", "~" or a namespace name, any mix (istiod
// validates none: an entry that names no namespace, an empty one among them, matches none). Said
// in ServiceEntry's form: "*" among them is everywhere, else "~" among them is nowhere.
std::vector<std::string> ServiceExportTo(const std::string& annotation) {
  if (annotation.empty()) return {};  // istiod: as if not annotated
  std::set<std::string> entries;
  for (absl::string_view entry : absl::StrSplit(annotation, ',')) {
    entries.insert(std::string(absl::StripAsciiWhitespace(entry)));
  }
  if (entries.contains("*")) return {"*"};
  if (entries.contains("~")) return {"~"};
  return {entries.begin(), entries.end()};
}

MeshObject ReadService(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  K8sService s{std::move(meta), {}, {}};
  // Istio narrows a Service's visibility by this annotation; ignoring it would widen it.
  // (A key of a missing node throws in yaml-cpp: metadata is looked at only when it is a map.)
  const YAML::Node metadata = doc["metadata"];
  if (const YAML::Node annotations = metadata.IsDefined() && metadata.IsMap() ? metadata["annotations"] : YAML::Node();
      annotations.IsDefined() && annotations.IsMap()) {
    const YAML::Node exported = annotations["networking.istio.io/exportTo"];
    // Anything but a string was refused with the other annotations (ReadMeta).
    if (exported.IsDefined() && exported.IsScalar() && NonStringPlainScalar(exported).empty()) {
      s.export_to = ServiceExportTo(exported.Scalar());
      if (s.export_to.size() > kMaxExportTo) {
        r.Error(exported, "metadata.annotations.networking.istio.io/exportTo",
                StrCat("more than ", kMaxExportTo, " namespaces are not supported by cxds"));
      }
    }
  }
  const YAML::Node spec = doc["spec"];
  if (!r.IsMap(spec, "spec")) return s;
  // An alias (type ExternalName) serves its host's ports and has no endpoints of its own: the
  // fields that would change how its own endpoints serve mean nothing on it, so none of them is
  // refused as not supported there; they are only typed (MeshContext::AliasesOf).
  const YAML::Node type_node = spec["type"];
  const bool alias = type_node.IsDefined() && type_node.IsScalar() && type_node.Scalar() == "ExternalName";
  // Addressing and node-level fields mean nothing to a proxy that routes by host: ignored.
  std::vector<const char*> known = {"ports",
                                    "selector",
                                    "type",
                                    "clusterIP",
                                    "clusterIPs",
                                    "ipFamilies",
                                    "ipFamilyPolicy",
                                    "sessionAffinity",
                                    "sessionAffinityConfig",
                                    "internalTrafficPolicy",
                                    "publishNotReadyAddresses",
                                    "externalTrafficPolicy",
                                    "healthCheckNodePort",
                                    "allocateLoadBalancerNodePorts",
                                    "loadBalancerClass",
                                    "loadBalancerIP",
                                    "loadBalancerSourceRanges",
                                    "externalName"};
  constexpr const char* kUnsupported[] = {"externalIPs", "trafficDistribution"};
  if (alias) known.insert(known.end(), std::begin(kUnsupported), std::end(kUnsupported));
  r.OnlyKeys(spec, "spec", known, alias ? absl::Span<const char* const>() : kUnsupported);
  if (alias) {
    r.Strings(spec, "externalIPs", "spec", false);
    r.String(spec, "trafficDistribution", "spec", false);
  }
  // Ignored, yet typed as Kubernetes types them: a file its API server would refuse is refused.
  for (const char* key :
       {"clusterIP", "ipFamilyPolicy", "externalTrafficPolicy", "loadBalancerClass", "loadBalancerIP"}) {
    r.String(spec, key, "spec", false);
  }
  for (const char* key : {"clusterIPs", "ipFamilies", "loadBalancerSourceRanges"}) r.Strings(spec, key, "spec", false);
  r.Bool(spec, "allocateLoadBalancerNodePorts", "spec");
  r.Uint(spec, "healthCheckNodePort", "spec", false, 0, 65535);
  if (const YAML::Node config = spec["sessionAffinityConfig"]; config.IsDefined() && !config.IsNull()) {
    r.IsMap(config, "spec.sessionAffinityConfig");
  }
  // A NodePort or LoadBalancer Service has its cluster address too: proxies reach it by its host
  // as a ClusterIP one's, as istiod serves it; its node ports and balancer lie outside the mesh.
  const std::optional<std::string> type = r.String(spec, "type", "spec", false);
  if (type.has_value() && *type != "ClusterIP" && *type != "NodePort" && *type != "LoadBalancer" &&
      *type != "ExternalName") {
    r.Error(spec["type"], "spec.type",
            StrCat("type \"", type->substr(0, 64),
                   "\" must be one of ClusterIP, NodePort, LoadBalancer, ExternalName, as Kubernetes validates"));
  }
  // An ExternalName Service is an alias of the host it names (MeshContext::AliasesOf); with
  // another type, Kubernetes drops externalName, and so does cxds.
  const std::optional<std::string> external_name = r.String(spec, "externalName", "spec", false);
  if (type == "ExternalName") {
    if (!external_name.has_value() || external_name->empty()) {
      r.Error(spec, "spec.externalName", "is required for type ExternalName, as Kubernetes validates");
    } else {
      // A trailing dot (an absolute DNS name, which Kubernetes allows) names the same host.
      std::string name = *external_name;
      if (name.ends_with('.')) name.pop_back();
      const std::vector<std::string> labels = absl::StrSplit(name, '.');
      if (name.size() > 253 || !std::all_of(labels.begin(), labels.end(), IsDnsLabel)) {
        r.Error(spec["externalName"], "spec.externalName",
                StrCat("\"", external_name->substr(0, 64),
                       "\" must be a lowercase DNS name (RFC 1123 labels of letters, digits and '-', joined by "
                       "dots), as Kubernetes validates"));
      } else {
        s.external_name = std::move(name);
      }
    }
    for (const char* key : {"clusterIP", "clusterIPs"}) {
      const YAML::Node given = spec[key];
      const bool set = given.IsDefined() && !given.IsNull() &&
                       (given.IsSequence() ? given.size() > 0 : given.IsScalar() && !given.Scalar().empty());
      if (set) {
        r.Error(given, Reader::Join("spec", key), "must not be set for type ExternalName, as Kubernetes validates");
      }
    }
  }
  // Values that would change which endpoints serve, and that cxds does not implement (not on an
  // alias, above). Each must be one Kubernetes takes, the first its default; `empty_is_unset`:
  // Kubernetes defaults "" (a plain string field), where an optional field's "" is refused.
  const auto only_default = [&](const char* key, std::initializer_list<const char*> values, bool empty_is_unset,
                                const char* meaning) {
    const std::optional<std::string> value = r.String(spec, key, "spec", false);
    if (!value.has_value() || (empty_is_unset && value->empty()) || *value == *values.begin()) return;
    if (std::none_of(values.begin(), values.end(), [&](const char* v) { return *value == v; })) {
      r.Error(spec[key], Reader::Join("spec", key),
              StrCat("\"", TruncateUntrusted(*value, 64), "\" must be ", absl::StrJoin(values, " or "),
                     ", as Kubernetes validates"));
    } else if (!alias) {
      r.Error(spec[key], Reader::Join("spec", key),
              StrCat(key, ": ", value->substr(0, 64), " (", meaning, ") is not supported by cxds"));
    }
  };
  only_default("sessionAffinity", {"None", "ClientIP"}, /*empty_is_unset=*/true, "client IP stickiness");
  only_default("internalTrafficPolicy", {"Cluster", "Local"}, /*empty_is_unset=*/false, "node-local endpoints only");
  if (r.Bool(spec, "publishNotReadyAddresses", "spec").value_or(false) && !alias) {
    r.Error(spec["publishNotReadyAddresses"], "spec.publishNotReadyAddresses",
            "publishNotReadyAddresses: true (serving endpoints that are not ready) is not supported by cxds");
  }
  s.ports = Ports(r, spec, "spec", /*k8s=*/true);
  s.selector = r.Labels(spec, "selector", "spec");
  return s;
}

// The `targetRef` of endpoint `node` (at `field`), a slice's or an Endpoints address's: a Pod
// gives `endpoint` its labels (namespace `own_namespace` unless given); other targets (a
// WorkloadEntry's, say) are kept as references and read for nothing.
void ReadTargetRef(Reader& r, const YAML::Node& node, const std::string& field, const std::string& own_namespace,
                   EndpointSlice::Endpoint& endpoint) {
  const YAML::Node ref = node["targetRef"];
  const std::string rf = Reader::Join(field, "targetRef");
  if (!ref.IsDefined() || !r.IsMap(ref, rf)) return;
  r.OnlyKeys(ref, rf, {"kind", "name", "namespace", "uid", "apiVersion", "resourceVersion", "fieldPath"});
  if (r.String(ref, "kind", rf, false).value_or("") == "Pod") {
    endpoint.pod_name = r.String(ref, "name", rf, true).value_or("");
    endpoint.pod_namespace = r.String(ref, "namespace", rf, false).value_or(own_namespace);
  }
}

MeshObject ReadEndpointSlice(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  EndpointSlice e;
  e.meta = std::move(meta);
  auto service = e.meta.labels.find("kubernetes.io/service-name");
  if (service == e.meta.labels.end()) {
    r.Error(doc["metadata"], "metadata.labels.kubernetes.io/service-name", "is required (the Service it belongs to)");
  } else {
    e.service_name = service->second;
  }
  if (auto type = r.String(doc, "addressType", "", true); type.has_value() && *type != "IPv4" && *type != "IPv6") {
    r.Error(
        doc["addressType"], "addressType",
        *type == "FQDN" ? "FQDN is not supported by cxds (it does not resolve names)" : "must be IPv4, IPv6 or FQDN");
  }
  // `ports: null` and `endpoints: null` are how kubectl prints a slice of a Service with none.
  const YAML::Node ports = doc["ports"];
  if (ports.IsDefined() && !ports.IsNull() && r.IsSeq(ports, "ports")) {
    for (size_t i = 0; i < ports.size(); ++i) {
      const std::string f = Reader::Index("ports", i);
      if (!r.IsMap(ports[i], f)) continue;
      r.OnlyKeys(ports[i], f, {"name", "port", "protocol", "appProtocol"});
      for (const char* key : {"protocol", "appProtocol"}) r.String(ports[i], key, f, false);  // typed only
      e.ports.push_back(
          {r.String(ports[i], "name", f, false).value_or(""), r.Uint(ports[i], "port", f, true, 1, 65535).value_or(0)});
    }
  }
  const YAML::Node endpoints = doc["endpoints"];
  if (endpoints.IsDefined() && !endpoints.IsNull() && r.IsSeq(endpoints, "endpoints")) {
    for (size_t i = 0; i < endpoints.size(); ++i) {
      const std::string f = Reader::Index("endpoints", i);
      if (!r.IsMap(endpoints[i], f)) continue;
      // hostname, zone and hints (topology-aware routing) are not used: ignored.
      r.OnlyKeys(
          endpoints[i], f,
          {"addresses", "conditions", "nodeName", "targetRef", "hostname", "zone", "hints", "deprecatedTopology"});
      // Typed as Kubernetes types them, though not read.
      for (const char* key : {"nodeName", "hostname", "zone"}) r.String(endpoints[i], key, f, false);
      r.Labels(endpoints[i], "deprecatedTopology", f, Reader::NullValue::kEmpty);
      if (const YAML::Node hints = endpoints[i]["hints"]; hints.IsDefined() && !hints.IsNull()) {
        r.IsMap(hints, Reader::Join(f, "hints"));
      }
      EndpointSlice::Endpoint endpoint;
      endpoint.addresses = r.Strings(endpoints[i], "addresses", f, true);
      for (size_t a = 0; a < endpoint.addresses.size(); ++a) {
        if (std::string problem = AddressProblem(endpoint.addresses[a]); !problem.empty()) {
          r.Error(endpoints[i]["addresses"][a], Reader::Index(Reader::Join(f, "addresses"), a), problem);
        }
      }
      ReadTargetRef(r, endpoints[i], f, e.meta.namespace_name, endpoint);
      const YAML::Node conditions = endpoints[i]["conditions"];
      if (conditions.IsDefined() && r.IsMap(conditions, Reader::Join(f, "conditions"))) {
        r.OnlyKeys(conditions, Reader::Join(f, "conditions"), {"ready", "serving", "terminating"});
        endpoint.ready = r.Bool(conditions, "ready", Reader::Join(f, "conditions")).value_or(true);
        r.Bool(conditions, "serving", Reader::Join(f, "conditions"));
        r.Bool(conditions, "terminating", Reader::Join(f, "conditions"));
      }
      e.endpoints.push_back(std::move(endpoint));
    }
  }
  return e;
}

// v1 Endpoints, each subset read as the EndpointSlice Kubernetes' mirroring makes of it (what
// the slice reader reads of an endpoint: its address, readiness and Pod).
MeshObject ReadEndpoints(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  K8sEndpoints out;
  out.meta = std::move(meta);
  if (auto skip = out.meta.labels.find("endpointslice.kubernetes.io/skip-mirror"); skip != out.meta.labels.end()) {
    out.skip_mirror = skip->second == "true";
  }
  // Nor are leader-election records (an old pattern that keeps a lock on an Endpoints object).
  if (const YAML::Node metadata = doc["metadata"]; metadata.IsDefined() && metadata.IsMap()) {
    if (const YAML::Node annotations = metadata["annotations"]; annotations.IsDefined() && annotations.IsMap()) {
      if (annotations["control-plane.alpha.kubernetes.io/leader"].IsDefined()) out.skip_mirror = true;
    }
  }
  // `subsets: null`, or none, is how kubectl prints the Endpoints of a Service with none.
  const YAML::Node subsets = doc["subsets"];
  if (!subsets.IsDefined() || subsets.IsNull() || !r.IsSeq(subsets, "subsets")) return out;
  for (size_t i = 0; i < subsets.size(); ++i) {
    const std::string f = Reader::Index("subsets", i);
    if (!r.IsMap(subsets[i], f)) continue;
    r.OnlyKeys(subsets[i], f, {"addresses", "notReadyAddresses", "ports"});
    // (Name and namespace alone: a copy of the labels per subset would let one small file ask
    // for gigabytes, a long label times many empty subsets.)
    EndpointSlice slice;
    slice.meta.name = out.meta.name;
    slice.meta.namespace_name = out.meta.namespace_name;
    slice.service_name = out.meta.name;
    const std::string pf = Reader::Join(f, "ports");
    if (const YAML::Node ports = subsets[i]["ports"]; ports.IsDefined() && !ports.IsNull() && r.IsSeq(ports, pf)) {
      std::set<std::string> names;
      for (size_t p = 0; p < ports.size(); ++p) {
        const std::string pp = Reader::Index(pf, p);
        if (!r.IsMap(ports[p], pp)) continue;
        r.OnlyKeys(ports[p], pp, {"name", "port", "protocol", "appProtocol"});
        for (const char* key : {"protocol", "appProtocol"}) r.String(ports[p], key, pp, false);  // typed only
        const std::string name = r.String(ports[p], "name", pp, ports.size() > 1).value_or("");
        if (!name.empty() && !names.insert(name).second) {
          r.Error(ports[p]["name"], Reader::Join(pp, "name"), "is the name of another port of the subset");
        }
        slice.ports.push_back({name, r.Uint(ports[p], "port", pp, true, 1, 65535).value_or(0)});
      }
    }
    for (const char* list : {"addresses", "notReadyAddresses"}) {
      const std::string lf = Reader::Join(f, list);
      const YAML::Node addresses = subsets[i][list];
      if (!addresses.IsDefined() || addresses.IsNull() || !r.IsSeq(addresses, lf)) continue;
      for (size_t a = 0; a < addresses.size(); ++a) {
        const std::string af = Reader::Index(lf, a);
        if (!r.IsMap(addresses[a], af)) continue;
        r.OnlyKeys(addresses[a], af, {"ip", "hostname", "nodeName", "targetRef"});
        for (const char* key : {"hostname", "nodeName"}) r.String(addresses[a], key, af, false);  // typed only
        EndpointSlice::Endpoint endpoint;
        endpoint.ready = std::string_view(list) == "addresses";
        if (auto ip = r.String(addresses[a], "ip", af, true)) {
          if (std::string problem = AddressProblem(*ip); !problem.empty()) {
            r.Error(addresses[a]["ip"], Reader::Join(af, "ip"), problem);
          } else {
            endpoint.addresses.push_back(*ip);
          }
        }
        ReadTargetRef(r, addresses[a], af, out.meta.namespace_name, endpoint);
        slice.endpoints.push_back(std::move(endpoint));
      }
    }
    out.mirrored.push_back(std::move(slice));
  }
  return out;
}

// A Pod as `kubectl get pod -o yaml` prints it: of its spec, the node; of its status, the IPs.
MeshObject ReadPod(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  K8sPod pod{std::move(meta), {}, {}};
  // The spec is read for its node alone (a spec that is not a map is left unread, as before).
  if (const YAML::Node spec = doc["spec"]; spec.IsDefined() && spec.IsMap()) {
    if (auto node_name = r.String(spec, "nodeName", "spec", false)) {
      // A Kubernetes node name is a DNS-1123 subdomain; it becomes the label
      // kubernetes.io/hostname of the Pod's endpoints. Empty: not scheduled yet.
      if (node_name->empty() || IsDnsName(*node_name)) {
        pod.node_name = *node_name;
      } else {
        r.Error(spec["nodeName"], "spec.nodeName",
                "must be a Kubernetes node name (lowercase letters, digits, '-' and '.', at most 253 characters)");
      }
    }
  }
  const YAML::Node status = doc["status"];
  if (!status.IsDefined() || !r.IsMap(status, "status")) return pod;
  if (auto ip = r.String(status, "podIP", "status", false)) pod.ips.push_back(*ip);
  if (const YAML::Node ips = status["podIPs"]; ips.IsDefined() && r.IsSeq(ips, "status.podIPs")) {
    for (size_t i = 0; i < ips.size(); ++i) {
      const std::string f = Reader::Index("status.podIPs", i);
      if (!r.IsMap(ips[i], f)) continue;
      r.OnlyKeys(ips[i], f, {"ip"});
      if (auto ip = r.String(ips[i], "ip", f, true);
          ip.has_value() && std::find(pod.ips.begin(), pod.ips.end(), *ip) == pod.ips.end()) {
        pod.ips.push_back(*ip);
      }
    }
  }
  for (const std::string& ip : pod.ips) {
    if (std::string problem = AddressProblem(ip); !problem.empty()) r.Error(status, "status.podIP", problem);
  }
  return pod;
}

std::string ScalarAt(const YAML::Node& map, const char* key);

// Istio's keys for TLS material in a Secret: the generic ones first, then kubernetes.io/tls's,
// as istiod's secret controller reads them.
constexpr const char* kCertKeys[] = {"cert", "tls.crt"};
constexpr const char* kPrivateKeyKeys[] = {"key", "tls.key"};
constexpr const char* kCaKeys[] = {"cacert", "ca.crt"};
constexpr const char* kCrlKeys[] = {"crl", "ca.crl"};  // each the pair of kCaKeys' entry

// Whether the Secret has a non-empty value under `key` (istiod takes an empty one as absent).
bool SecretHasKey(const YAML::Node& doc, const char* key) {
  for (const char* section : {"data", "stringData"}) {
    const YAML::Node map = doc[section];
    if (!map.IsDefined() || !map.IsMap()) continue;
    const YAML::Node value = map[key];
    if (value.IsDefined() && !(value.IsScalar() && value.Scalar().empty()) && !value.IsNull()) return true;
  }
  return false;
}

// Whether the value under `key` reads as PEM text ("-----BEGIN"), base64 in data or text in
// stringData: how a generic Secret's cert/key/cacert are told from unrelated values of the
// same names.
bool SecretValueLooksLikePem(const YAML::Node& doc, const char* key) {
  for (const char* section : {"stringData", "data"}) {
    const YAML::Node map = doc[section];
    if (!map.IsDefined() || !map.IsMap() || !map[key].IsDefined() || !map[key].IsScalar()) continue;
    std::string text = map[key].Scalar();
    if (std::string_view(section) == "data" && !absl::Base64Unescape(map[key].Scalar(), &text)) return false;
    return text.find("-----BEGIN") != std::string::npos;
  }
  return false;
}

// A Secret that is TLS material for a gateway (credentialName): kubernetes.io/tls, or one of
// another type (Opaque, unset, or a custom type such as example.com/cert, which istiod reads by
// its keys alone) with a PEM certificate and key, or (not for a custom type) a PEM CA, under
// Istio's keys. Secrets of
// Kubernetes' own other types (a service account token with its ca.crt, docker configs, basic
// and SSH auth, bootstrap tokens) and those without such keys have no meaning for xDS: skipped.
bool CarriesTlsMaterial(const YAML::Node& doc) {
  const std::string type = ScalarAt(doc, "type");
  if (type == "kubernetes.io/tls") return true;
  if (type.starts_with("kubernetes.io/") || type.starts_with("bootstrap.kubernetes.io/")) return false;
  // A custom type is someone else's format: TLS material only with a PEM certificate and a PEM
  // key under one naming (a PEM CA alone, or a key of another kind, is not taken as a sign).
  const bool custom = !type.empty() && type != "Opaque";
  for (size_t i = 0; i < std::size(kCertKeys); ++i) {
    if (SecretValueLooksLikePem(doc, kCertKeys[i]) &&
        (custom ? SecretValueLooksLikePem(doc, kPrivateKeyKeys[i]) : SecretHasKey(doc, kPrivateKeyKeys[i]))) {
      return true;
    }
  }
  return !custom && std::any_of(std::begin(kCaKeys), std::end(kCaKeys),
                                [&](const char* key) { return SecretValueLooksLikePem(doc, key); });
}

// One value of a Secret: from stringData (text) when it is there, as the API server merges it
// over data, else from data (base64).
struct SecretValue {
  bool present = false;
  bool ok = false;  // read and decoded (else an error was reported)
  std::string text;
  std::string field;  // "data.tls.crt"
  YAML::Node node;
};

SecretValue ReadSecretValue(Reader& r, const YAML::Node& doc, const char* key) {
  SecretValue out;
  for (const char* section : {"stringData", "data"}) {
    const YAML::Node map = doc[section];
    if (!map.IsDefined() || !map.IsMap() || !map[key].IsDefined()) continue;
    out.present = true;
    out.field = Reader::Join(section, key);
    out.node = map[key];
    std::optional<std::string> value = r.String(map, key, section, true);
    if (!value.has_value()) return out;
    if (std::string_view(section) == "stringData") {
      out.text = *std::move(value);
      out.ok = true;
    } else if (absl::Base64Unescape(*value, &out.text)) {
      out.ok = true;
    } else {
      r.Error(out.node, out.field, "is not base64 (data holds base64; stringData holds text)");
    }
    return out;
  }
  return out;
}

MeshObject ReadSecret(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  K8sTlsSecret secret;
  secret.meta = std::move(meta);
  r.String(doc, "type", "", false);  // which types are read: CarriesTlsMaterial
  r.Bool(doc, "immutable", "");      // no meaning here, but typed as Kubernetes types it
  // OCSP staples: istiod serves them; cxds would drop them without a word, so a Secret with one
  // is refused rather than served without it.
  if (SecretHasKey(doc, "tls.ocsp-staple")) {
    r.Error(doc, "tls.ocsp-staple", "is not supported by cxds (OCSP staples are not served)");
  }
  for (const char* section : {"data", "stringData"}) {
    if (const YAML::Node map = doc[section]; map.IsDefined() && !map.IsNull()) r.IsMap(map, section);
  }
  // The certificate and its key come as a pair of one naming: cert/key, else tls.crt/tls.key.
  bool have_pair = false;
  for (size_t i = 0; i < std::size(kCertKeys) && !have_pair; ++i) {
    if (!SecretHasKey(doc, kCertKeys[i]) || !SecretHasKey(doc, kPrivateKeyKeys[i])) continue;
    have_pair = true;
    const SecretValue cert = ReadSecretValue(r, doc, kCertKeys[i]);
    const SecretValue key = ReadSecretValue(r, doc, kPrivateKeyKeys[i]);
    if (!cert.ok || !key.ok) {
      // already reported
    } else if (std::string problem = CertificatesProblem(cert.text); !problem.empty()) {
      r.Error(cert.node, cert.field, problem);
    } else if (std::string key_problem = PrivateKeyProblem(key.text, cert.text); !key_problem.empty()) {
      r.Error(key.node, key.field, key_problem);
    }
    secret.certificate_chain = cert.text;
    secret.private_key = key.text;
  }
  for (size_t i = 0; i < std::size(kCertKeys) && !have_pair; ++i) {
    // A certificate without its key (or the other way round) cannot terminate TLS.
    const bool has_cert = SecretHasKey(doc, kCertKeys[i]), has_key = SecretHasKey(doc, kPrivateKeyKeys[i]);
    if (has_cert == has_key) continue;
    r.Error(doc, has_cert ? kPrivateKeyKeys[i] : kCertKeys[i],
            StrCat("is required with ", has_cert ? kCertKeys[i] : kPrivateKeyKeys[i],
                   " (a certificate and its private key)"));
  }
  // The CA, and beside it its revocation lists, as istiod pairs them: cacert with crl, ca.crt
  // with ca.crl.
  const char* paired_crl_key = nullptr;
  bool ca_ok = false;
  for (size_t i = 0; i < std::size(kCaKeys); ++i) {
    if (!SecretHasKey(doc, kCaKeys[i])) continue;
    const SecretValue ca = ReadSecretValue(r, doc, kCaKeys[i]);
    std::string problem = ca.ok ? CertificatesProblem(ca.text) : "";
    if (!problem.empty()) r.Error(ca.node, ca.field, problem);
    ca_ok = ca.ok && problem.empty();
    secret.ca_certificates = ca.text;
    paired_crl_key = kCrlKeys[i];
    break;
  }
  for (const char* crl_key : kCrlKeys) {
    if (!SecretHasKey(doc, crl_key)) continue;
    if (paired_crl_key == nullptr || std::string_view(crl_key) != paired_crl_key) {
      // istiod reads it only beside its CA: served here, it would check nothing; dropped, it would
      // be lost without a word.
      r.Error(doc, crl_key,
              StrCat("is not supported by cxds without ", std::string_view(crl_key) == "crl" ? "cacert" : "ca.crt",
                     " beside it (revocation lists are read with their CA: crl with cacert, ca.crl with ca.crt)"));
      continue;
    }
    const SecretValue crl = ReadSecretValue(r, doc, crl_key);
    if (!crl.ok || !ca_ok) continue;
    if (std::string problem = RevocationListProblem(crl.text, secret.ca_certificates); !problem.empty()) {
      r.Error(crl.node, crl.field, problem);
    }
    secret.revocation_lists = crl.text;
  }
  if (!have_pair && secret.ca_certificates.empty() && r.error_count() == 0) {
    r.Error(doc, "data", "holds no certificate: tls.crt and tls.key (or cert and key), or ca.crt (or cacert)");
  }
  return secret;
}

MeshObject ReadServiceEntry(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  ServiceEntry se;
  se.meta = std::move(meta);
  const YAML::Node spec = doc["spec"];
  if (!r.IsMap(spec, "spec")) return se;
  r.OnlyKeys(spec, "spec",
             {"hosts", "ports", "resolution", "endpoints", "workloadSelector", "location", "exportTo", "addresses",
              "subjectAltNames"},
             {});
  se.export_to = ReadExportTo(r, spec, se.meta.namespace_name, /*service_entry=*/true);
  se.subject_alt_names = r.Strings(spec, "subjectAltNames", "spec", false);
  se.addresses = r.Strings(spec, "addresses", "spec", false);
  for (size_t i = 0; i < se.addresses.size(); ++i) {
    const std::string f = Reader::Index("spec.addresses", i);
    std::string& address = se.addresses[i];
    const size_t slash = address.find('/');
    const std::string ip = address.substr(0, slash);
    const bool v6 = ip.find(':') != std::string::npos;
    uint32_t prefix = v6 ? 128 : 32;  // a full-length prefix is the address itself, as in istiod
    const std::optional<std::string> canonical = CanonicalIp(ip);
    if (!canonical.has_value() ||
        (slash != std::string::npos &&
         (!absl::SimpleAtoi(address.substr(slash + 1), &prefix) || prefix > (v6 ? 128u : 32u)))) {
      r.Error(spec["addresses"][i], f,
              StrCat("must be an IP address or a CIDR range, got \"", address.substr(0, 64), "\""));
    } else if (prefix != (v6 ? 128u : 32u)) {
      // Valid in Istio: it matches the destination a client dialled, and cxds's listeners bind
      // their own addresses, so none is ever seen.
      r.Error(spec["addresses"][i], f,
              "a CIDR range is not supported by cxds (it matches the address a client dialled, which cxds's "
              "listeners, bound to their own addresses, never see); give IP addresses");
    } else {
      // One spelling per address ("::1", lowercase): Envoy refuses a domain named twice, in any case.
      address = *canonical;
    }
  }
  se.hosts = r.Strings(spec, "hosts", "spec", true);
  for (size_t i = 0; i < se.hosts.size(); ++i) {
    if (se.hosts[i] == "*") {
      // Invalid in Istio too: a ServiceEntry would take every host on its ports.
      r.Error(spec["hosts"][i], Reader::Index("spec.hosts", i),
              "must not be \"*\" (a ServiceEntry for every host); name the hosts, or a wildcard such as "
              "\"*.example.com\"");
      continue;
    }
    CheckHost(r, spec["hosts"][i], Reader::Index("spec.hosts", i), se.hosts[i], /*allow_wildcard=*/true);
  }
  se.ports = Ports(r, spec, "spec", /*k8s=*/false);
  // Istio's default is NONE (traffic passes through to the address the client dialled), so a
  // ServiceEntry without a resolution is not taken as STATIC.
  const std::optional<std::string> given = r.String(spec, "resolution", "spec", false);
  const std::string resolution = given.value_or("NONE");
  const char* unset = given.has_value() ? "" : " (NONE is Istio's default when spec.resolution is not set)";
  if (resolution == "NONE") {
    // An empty list is valid in Istio (it checks the count), so only endpoints given are an error.
    if (const YAML::Node given_endpoints = spec["endpoints"];
        given_endpoints.IsDefined() && !(given_endpoints.IsSequence() && given_endpoints.size() == 0)) {
      // Invalid in Istio too ("no endpoints should be provided for resolution type none").
      r.Error(spec["endpoints"], "spec.endpoints",
              StrCat("cannot be used with resolution NONE", unset, "; set spec.resolution: STATIC"));
    } else {
      // istiod makes it an ORIGINAL_DST cluster, which needs the address the client dialled;
      // cxds's Envoy listeners bind their own addresses (no traffic capture restores another),
      // and proxyless gRPC has no such cluster, so every request would fail.
      r.Error(given.has_value() ? spec["resolution"] : spec, "spec.resolution",
              StrCat("resolution NONE (pass-through to the address dialled) is not supported by cxds", unset,
                     ": its listeners bind their own addresses, so there is no dialled address to pass through to; "
                     "set spec.resolution: STATIC to serve spec.endpoints or the workloads spec.workloadSelector "
                     "selects, or DNS to resolve the hosts"));
    }
  } else if (resolution == "DNS" || resolution == "DNS_ROUND_ROBIN") {
    se.resolution = resolution == "DNS" ? ServiceEntry::Resolution::kDns : ServiceEntry::Resolution::kDnsRoundRobin;
  } else if (resolution == "DYNAMIC_DNS") {
    r.Error(spec["resolution"], "spec.resolution",
            "resolution DYNAMIC_DNS (names resolved per request by a dynamic forward proxy) is not supported by cxds; "
            "set DNS to have the hosts resolved");
  } else if (resolution != "STATIC") {
    r.Error(spec["resolution"], "spec.resolution", "must be one of NONE, STATIC, DNS, DNS_ROUND_ROBIN, DYNAMIC_DNS");
  }
  if (auto location = r.String(spec, "location", "spec", false);
      location.has_value() && *location != "MESH_INTERNAL" && *location != "MESH_EXTERNAL") {
    r.Error(spec["location"], "spec.location", "must be MESH_INTERNAL or MESH_EXTERNAL");
  }
  const YAML::Node endpoints = spec["endpoints"];
  if (endpoints.IsDefined() && r.IsSeq(endpoints, "spec.endpoints")) {
    for (size_t i = 0; i < endpoints.size(); ++i) {
      const std::string f = Reader::Index("spec.endpoints", i);
      if (r.IsMap(endpoints[i], f)) {
        se.endpoints.push_back(ReadWorkload(r, endpoints[i], f, se.resolution != ServiceEntry::Resolution::kStatic));
      }
    }
  }
  se.workload_selector = Selector(r, spec, "spec");
  if (se.workload_selector.has_value() && !se.endpoints.empty()) {
    r.Error(spec["workloadSelector"], "spec.workloadSelector", "cannot be used together with spec.endpoints");
  }
  if (se.resolution != ServiceEntry::Resolution::kStatic) {
    // Istio's rules: without endpoints the hosts are the names resolved, so they cannot be
    // wildcards; DNS_ROUND_ROBIN (one connection to whatever the name resolves to) takes at most
    // one endpoint.
    if (se.endpoints.empty()) {
      for (size_t i = 0; i < se.hosts.size(); ++i) {
        if (se.hosts[i].starts_with("*")) {
          r.Error(spec["hosts"][i], Reader::Index("spec.hosts", i),
                  StrCat("a wildcard host needs spec.endpoints with resolution ", resolution,
                         " (without them the host itself is the name resolved)"));
        }
      }
    }
    if (se.resolution == ServiceEntry::Resolution::kDnsRoundRobin && se.endpoints.size() > 1) {
      r.Error(spec["endpoints"], "spec.endpoints", "resolution DNS_ROUND_ROBIN takes at most one endpoint");
    }
    if (se.workload_selector.has_value()) {
      r.Error(spec["workloadSelector"], "spec.workloadSelector",
              StrCat("with resolution ", resolution, " is not supported by cxds"));
    }
  }
  return se;
}

MeshObject ReadWorkloadEntry(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  WorkloadEntry we;
  we.meta = std::move(meta);
  const YAML::Node spec = doc["spec"];
  if (r.IsMap(spec, "spec")) we.spec = ReadWorkload(r, spec, "spec");
  return we;
}

// Envoy and gRPC match with RE2, and Envoy refuses (NACKs the whole RDS) a regex RE2 does not
// compile or whose program is larger than its default limit, 100 (runtime key
// re2.max_program_size.error_level): such a regex is an error here, before any proxy sees it.
constexpr int kEnvoyMaxRegexProgramSize = 100;

void CheckRegex(Reader& r, const YAML::Node& node, const std::string& field, const std::string& pattern) {
  if (pattern.empty()) {  // as Istio; Envoy refuses an empty one too
    r.Error(node, field, "must not be empty");
    return;
  }
  RE2::Options options;
  options.set_log_errors(false);
  const RE2 re(pattern, options);
  if (!re.ok()) {
    r.Error(node, field, StrCat("is not an RE2 regular expression: ", re.error()));
  } else if (re.ProgramSize() > kEnvoyMaxRegexProgramSize) {
    r.Error(node, field,
            StrCat("is too complex for Envoy: RE2 program size ", re.ProgramSize(), ", Envoy's default limit is ",
                   kEnvoyMaxRegexProgramSize));
  }
}

std::optional<StringMatch> ReadStringMatch(Reader& r, const YAML::Node& node, const std::string& field) {
  if (!r.IsMap(node, field)) return std::nullopt;
  r.OnlyKeys(node, field, {"exact", "prefix", "regex"});
  if (node.size() != 1) {
    r.Error(node, field, "must have exactly one of exact, prefix, regex");
    return std::nullopt;
  }
  StringMatch m;
  const std::string key = node.begin()->first.Scalar();
  m.kind = key == "exact"    ? StringMatch::Kind::kExact
           : key == "prefix" ? StringMatch::Kind::kPrefix
                             : StringMatch::Kind::kRegex;
  m.value = r.String(node, key.c_str(), field, true).value_or("");
  if (m.kind == StringMatch::Kind::kRegex) CheckRegex(r, node["regex"], Reader::Join(field, "regex"), m.value);
  return m;
}

// gRPC's status names (doc/statuscodes.md), which Istio's abort.grpcStatus takes.
std::optional<uint32_t> GrpcStatusCode(const std::string& name) {
  static constexpr std::string_view kNames[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (kNames[i] == name) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

// http[].fault, with Istio's rules: a delay or an abort or both; a delay is fixedDelay (at least
// 1ms); an abort is httpStatus (200-599) or grpcStatus; percentage.value, or the deprecated
// integer percent (a delay's only: Istio's abort has no such field).
std::optional<FaultInjection> ReadFault(Reader& r, const YAML::Node& node, const std::string& f) {
  if (!r.IsMap(node, f)) return std::nullopt;
  r.OnlyKeys(node, f, {"delay", "abort"});
  FaultInjection fault;
  if (const YAML::Node delay = node["delay"]; delay.IsDefined() && r.IsMap(delay, Reader::Join(f, "delay"))) {
    const std::string df = Reader::Join(f, "delay");
    r.OnlyKeys(delay, df, {"fixedDelay", "percentage", "percent"}, {"exponentialDelay"});
    FaultInjection::Delay d;
    if (std::optional<absl::Duration> fixed = r.IstioDuration(delay, "fixedDelay", df)) {
      d.fixed_delay = *fixed;
    } else if (!delay["fixedDelay"].IsDefined() && !delay["exponentialDelay"].IsDefined()) {
      r.Error(delay, Reader::Join(df, "fixedDelay"), "is required");
    }
    if (const YAML::Node whole = delay["percent"]; whole.IsDefined() && !whole.IsNull()) {
      // Istio takes any int32 here (its validation checks only `percentage`).
      const std::optional<int64_t> read =
          whole.IsScalar() ? YamlInteger(whole.Scalar(), IsPlainScalar(whole)) : std::nullopt;
      const bool in_range = read.has_value() && *read >= std::numeric_limits<int32_t>::min() &&
                            *read <= std::numeric_limits<int32_t>::max();
      const int32_t value = in_range ? static_cast<int32_t>(*read) : 0;
      if (!in_range) {
        r.Error(whole, Reader::Join(df, "percent"),
                StrCat("must be an integer from -2147483648 to 2147483647, got \"",
                       whole.IsScalar() ? whole.Scalar().substr(0, 64) : "", "\""));
      }
      d.whole_percent = value;
    }
    if (std::optional<double> percentage = r.Percent(delay, "percentage", df)) {
      d.percent = *percentage;
      d.whole_percent.reset();  // percentage wins, as in istiod
    } else if (delay["percentage"].IsDefined() && !delay["percentage"].IsNull()) {
      d.whole_percent.reset();  // an invalid percentage: the file is refused
    } else if (!d.whole_percent.has_value()) {
      d.whole_percent = 0;  // neither given: istiod sends the integer's 0
    }
    fault.delay = d;
  }
  if (const YAML::Node abort = node["abort"]; abort.IsDefined() && r.IsMap(abort, Reader::Join(f, "abort"))) {
    const std::string af = Reader::Join(f, "abort");
    r.OnlyKeys(abort, af, {"httpStatus", "grpcStatus", "percentage", "percent"}, {"http2Error"});
    if (abort["percent"].IsDefined()) {
      r.Error(abort["percent"], Reader::Join(af, "percent"),
              "is not a field of Istio's abort (only a delay has the deprecated integer percent): use "
              "percentage.value");
    }
    FaultInjection::Abort a;
    const bool http = abort["httpStatus"].IsDefined(), grpc = abort["grpcStatus"].IsDefined();
    if (http && grpc) {
      r.Error(abort, af, "has both httpStatus and grpcStatus: give one");
    } else if (http) {
      a.http_status = r.Uint(abort, "httpStatus", af, true, 200, 599).value_or(0);
    } else if (grpc) {
      const std::string name = r.String(abort, "grpcStatus", af, true).value_or("");
      a.grpc_status = GrpcStatusCode(name);
      if (!a.grpc_status.has_value()) {
        r.Error(
            abort["grpcStatus"], Reader::Join(af, "grpcStatus"),
            StrCat("must be a gRPC status name such as UNAVAILABLE or NOT_FOUND, got \"", name.substr(0, 64), "\""));
      }
    } else if (!abort["http2Error"].IsDefined()) {
      r.Error(abort, af, "needs httpStatus or grpcStatus");
    }
    a.percent = r.Percent(abort, "percentage", af).value_or(0);
    fault.abort = a;
  }
  if (!fault.delay.has_value() && !fault.abort.has_value()) r.Error(node, f, "needs a delay or an abort");
  return fault;
}

// An HTTP token (RFC 7230): letters, digits and !#$%&'*+-.^_`|~, at most 256 here.
bool IsHttpToken(std::string_view name) {
  static constexpr std::string_view kTokenMarks = "!#$%&'*+-.^_`|~";
  return !name.empty() && name.size() <= 256 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || kTokenMarks.find(c) != std::string_view::npos;
  });
}

// A header name as Istio takes one: an HTTP token (RFC 7230: letters, digits and
// !#$%&'*+-.^_`|~). To match, Istio also takes a pseudo-header (kept: Envoy matches it as
// istiod sends it) and a JWT claim (@request.auth.claims.NAME); in an operation, any name
// without a ':' prefix. `host` is not one a proxy may rewrite through header operations (Envoy
// refuses it: rewrite.authority is the way).
bool CheckHeaderName(Reader& r, const YAML::Node& node, const std::string& field, const std::string& name,
                     bool operation) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (operation && (lower == "host" || lower == ":authority")) {
    // Istio takes these in request set/add as the authority rewrite.
    r.Error(node, field,
            "changing the host header by header operations is not supported by cxds (use rewrite.authority)");
    return false;
  }
  static constexpr std::string_view kPseudo[] = {":method", ":scheme", ":authority", ":path", ":status"};
  if (!operation && std::find(std::begin(kPseudo), std::end(kPseudo), name) != std::end(kPseudo)) return true;
  if (!IsHttpToken(name)) {
    if (!operation && lower.starts_with("@request.auth.claims")) {
      r.Error(node, field,
              "routing by JWT claim is not supported by cxds (it needs a RequestAuthentication, which cxds does not "
              "read)");
    } else if (operation && !name.empty() && name.size() <= 256 && !name.starts_with(':')) {
      r.Error(node, field,
              "a header name other than an HTTP token (letters, digits and !#$%&'*+-.^_`|~) is not supported by cxds");
    } else {
      r.Error(node, field, "must be a header name (an HTTP token: letters, digits and !#$%&'*+-.^_`|~)");
    }
    return false;
  }
  return true;
}

std::map<std::string, StringMatch> ReadMatchMap(Reader& r, const YAML::Node& node, const std::string& field,
                                                bool header_names) {
  std::map<std::string, StringMatch> out;
  if (!node.IsDefined() || !r.IsMap(node, field)) return out;
  for (const auto& entry : node) {
    const std::string name = entry.first.Scalar();
    const std::string f = Reader::Join(field, name);
    if (header_names ? !CheckHeaderName(r, entry.first, f, name, false) : name.empty()) {
      if (!header_names) r.Error(entry.first, f, "must not be empty");
      continue;
    }
    if (auto sm = ReadStringMatch(r, entry.second, f)) out[name] = *sm;
  }
  return out;
}

HeaderManipulation ReadHeaders(Reader& r, const YAML::Node& node, const std::string& field) {
  HeaderManipulation out;
  if (!r.IsMap(node, field)) return out;
  r.OnlyKeys(node, field, {"request", "response"});
  for (const char* side : {"request", "response"}) {
    const YAML::Node ops = node[side];
    const std::string f = Reader::Join(field, side);
    if (!ops.IsDefined() || !r.IsMap(ops, f)) continue;
    r.OnlyKeys(ops, f, {"set", "add", "remove"});
    HeaderOperations& into = std::string_view(side) == "request" ? out.request : out.response;
    for (const char* op : {"set", "add"}) {
      const LabelMap values = r.Labels(ops, op, f);
      for (const auto& [name, value] : values) {
        if (CheckHeaderName(r, ops[op], Reader::Join(Reader::Join(f, op), name), name, true)) {
          (std::string_view(op) == "set" ? into.set : into.add)[name] = value;
        }
      }
    }
    const std::vector<std::string> removed = r.Strings(ops, "remove", f, false);
    for (size_t i = 0; i < removed.size(); ++i) {
      if (CheckHeaderName(r, ops["remove"][i], Reader::Index(Reader::Join(f, "remove"), i), removed[i], true)) {
        into.remove.push_back(removed[i]);
      }
    }
  }
  return out;
}

HttpRouteDestination ReadDestination(Reader& r, const YAML::Node& target, const std::string& tf) {
  HttpRouteDestination dest;
  if (!r.IsMap(target, tf)) return dest;
  r.OnlyKeys(target, tf, {"host", "subset", "port"});
  dest.host = r.String(target, "host", tf, true).value_or("");
  // A wildcard names a ServiceEntry's wildcard host, as Istio takes it; "*" alone names none.
  if (dest.host == "*") {
    r.Error(target["host"], Reader::Join(tf, "host"), "must not be \"*\", as Istio validates (it names no host)");
  } else {
    CheckHost(r, target["host"], Reader::Join(tf, "host"), dest.host, /*allow_wildcard=*/true);
  }
  dest.subset = r.String(target, "subset", tf, false).value_or("");
  if (!dest.subset.empty() && !IsDnsLabel(dest.subset)) {
    r.Error(target["subset"], Reader::Join(tf, "subset"), "must be a DNS label (a-z, 0-9, '-')");
  }
  if (target["port"].IsDefined() && r.IsMap(target["port"], Reader::Join(tf, "port"))) {
    r.OnlyKeys(target["port"], Reader::Join(tf, "port"), {"number"});
    dest.port = r.Uint(target["port"], "number", Reader::Join(tf, "port"), true, 1, 65535).value_or(0);
  }
  return dest;
}

// route[] of an http or tcp route: destinations with weights (0-100) that add up to 100 when
// there are several; an HTTP destination may carry headers.
std::vector<HttpRouteDestination> ReadWeightedDestinations(Reader& r, const YAML::Node& h, const std::string& f,
                                                           bool http) {
  std::vector<HttpRouteDestination> out;
  const YAML::Node destinations = h["route"];
  if (!destinations.IsDefined()) {
    r.Error(h, Reader::Join(f, "route"), "is required");
    return out;
  }
  if (!r.IsSeq(destinations, Reader::Join(f, "route"))) return out;
  if (destinations.size() == 0) {
    // Istio refuses it too: a route to nowhere (Envoy would refuse the whole listener for a TCP
    // proxy without a cluster).
    r.Error(destinations, Reader::Join(f, "route"), "must list at least one destination");
    return out;
  }
  uint32_t total = 0;
  bool weights_valid = true;  // a bad weight is reported once, not again in the sum
  for (size_t j = 0; j < destinations.size(); ++j) {
    const std::string df = Reader::Index(Reader::Join(f, "route"), j);
    const YAML::Node d = destinations[j];
    if (!r.IsMap(d, df)) continue;
    if (http) {
      r.OnlyKeys(d, df, {"destination", "weight", "headers"});
    } else {
      r.OnlyKeys(d, df, {"destination", "weight"});
    }
    HttpRouteDestination dest;
    const YAML::Node target = d["destination"];
    if (!target.IsDefined()) {
      r.Error(d, Reader::Join(df, "destination"), "is required");
    } else {
      dest = ReadDestination(r, target, Reader::Join(df, "destination"));
    }
    if (http && d["headers"].IsDefined()) dest.headers = ReadHeaders(r, d["headers"], Reader::Join(df, "headers"));
    std::optional<uint32_t> weight = r.Uint(d, "weight", df, false, 0, 100);
    if (!weight.has_value() && d["weight"].IsDefined()) weights_valid = false;
    dest.weight = weight.value_or(destinations.size() == 1 ? 100 : 0);
    total += dest.weight;
    out.push_back(std::move(dest));
  }
  if (destinations.size() > 1 && weights_valid && total != 100) {
    r.Error(destinations, Reader::Join(f, "route"), StrCat("weights must add up to 100, got ", total));
  }
  return out;
}

// `gateways` of `node` (field `f`) of a VirtualService of namespace `ns`: "mesh", or a Gateway
// as "namespace/name" or "name" (of `ns`), returned as "mesh" and "namespace/name". Istio's
// older "name.namespace" form is refused as not supported (cxds cannot tell it from a name).
std::vector<std::string> ReadGatewayNames(Reader& r, const YAML::Node& node, const std::string& f,
                                          const std::string& ns) {
  std::vector<std::string> out;
  const std::vector<std::string> names = r.Strings(node, "gateways", f, false);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const std::string field = Reader::Index(Reader::Join(f, "gateways"), i);
    const YAML::Node at = node["gateways"][i];
    if (name == "mesh") {
      out.push_back(name);
      continue;
    }
    const size_t slash = name.find('/');
    const std::string gateway_ns = slash == std::string::npos ? ns : name.substr(0, slash);
    const std::string gateway_name = slash == std::string::npos ? name : name.substr(slash + 1);
    if (slash == std::string::npos && name.find('.') != std::string::npos) {
      r.Error(at, field,
              StrCat("gateway \"", name.substr(0, 64),
                     "\": the name.namespace form is not supported by cxds (write namespace/name)"));
    } else if (!IsDnsLabel(gateway_ns)) {
      r.Error(at, field,
              StrCat("gateway \"", name.substr(0, 64), "\": the namespace must be a DNS label (a-z, 0-9, '-')"));
    } else if (std::string problem = HostProblem(gateway_name, false); !problem.empty()) {
      r.Error(at, field, StrCat("gateway \"", name.substr(0, 64), "\": the name: ", problem));
    } else {
      out.push_back(StrCat(gateway_ns, "/", gateway_name));
    }
  }
  return out;
}

// sourceLabels and sourceNamespace of a tcp or tls match. They choose sidecars in the mesh; at a
// Gateway istiod ignores them (its l4SingleMatch reads the port and gateways alone), and so does
// cxds, which says so in analysis (cxds_gateway_source_ignored).
void ReadL4SourceConditions(Reader& r, const YAML::Node& match, const std::string& mf, LabelMap& labels,
                            std::string& namespace_name) {
  labels = r.Labels(match, "sourceLabels", mf);
  for (const auto& [key, value] : labels) {
    if (key.empty()) r.Error(match["sourceLabels"], Reader::Join(mf, "sourceLabels"), "a label name must not be empty");
  }
  namespace_name = r.String(match, "sourceNamespace", mf, false).value_or("");
  if (match["sourceNamespace"].IsDefined() && !IsDnsLabel(namespace_name)) {
    r.Error(match["sourceNamespace"], Reader::Join(mf, "sourceNamespace"),
            "must be a namespace name, a DNS label (a-z, 0-9, '-'; at most 63 characters)");
  }
}

// spec.tcp[]: opaque TCP routes; a match selects by the port and the gateways.
void ReadTcpRoutes(Reader& r, const YAML::Node& spec, VirtualService& vs) {
  const YAML::Node tcp = spec["tcp"];
  if (!tcp.IsDefined() || !r.IsSeq(tcp, "spec.tcp")) return;
  for (size_t i = 0; i < tcp.size(); ++i) {
    const std::string f = Reader::Index("spec.tcp", i);
    if (!r.IsMap(tcp[i], f)) continue;
    r.OnlyKeys(tcp[i], f, {"match", "route"});
    TcpRoute route;
    if (const YAML::Node match = tcp[i]["match"]; match.IsDefined() && r.IsSeq(match, Reader::Join(f, "match"))) {
      for (size_t j = 0; j < match.size(); ++j) {
        const std::string mf = Reader::Index(Reader::Join(f, "match"), j);
        if (!r.IsMap(match[j], mf)) continue;
        r.OnlyKeys(match[j], mf, {"port", "gateways", "sourceLabels", "sourceNamespace"},
                   {"destinationSubnets", "sourceSubnet"});
        TcpRoute::Match m;
        m.port = r.Uint(match[j], "port", mf, false, 1, 65535).value_or(0);
        m.gateways = ReadGatewayNames(r, match[j], mf, vs.meta.namespace_name);
        ReadL4SourceConditions(r, match[j], mf, m.source_labels, m.source_namespace);
        route.match.push_back(std::move(m));
      }
    }
    route.route = ReadWeightedDestinations(r, tcp[i], f, /*http=*/false);
    vs.tcp.push_back(std::move(route));
  }
}

// spec.tls[]: TLS routes by SNI name, with Istio's rules: at least one match, each naming
// sniHosts that are the VirtualService's hosts or under them. Reads after spec.hosts.
void ReadTlsRoutes(Reader& r, const YAML::Node& spec, VirtualService& vs) {
  const YAML::Node tls = spec["tls"];
  if (!tls.IsDefined() || !r.IsSeq(tls, "spec.tls")) return;
  for (size_t i = 0; i < tls.size(); ++i) {
    const std::string f = Reader::Index("spec.tls", i);
    if (!r.IsMap(tls[i], f)) continue;
    r.OnlyKeys(tls[i], f, {"match", "route"});
    TlsRoute route;
    const YAML::Node match = tls[i]["match"];
    if (r.IsSeq(match, Reader::Join(f, "match")) && match.size() == 0) {
      r.Error(match, Reader::Join(f, "match"), "must not be empty (a tls route matches by sniHosts)");
    }
    for (size_t j = 0; match.IsDefined() && match.IsSequence() && j < match.size(); ++j) {
      const std::string mf = Reader::Index(Reader::Join(f, "match"), j);
      if (!r.IsMap(match[j], mf)) continue;
      r.OnlyKeys(match[j], mf, {"sniHosts", "port", "gateways", "sourceLabels", "sourceNamespace"},
                 {"destinationSubnets"});
      TlsRoute::Match m;
      m.gateways = ReadGatewayNames(r, match[j], mf, vs.meta.namespace_name);
      ReadL4SourceConditions(r, match[j], mf, m.source_labels, m.source_namespace);
      m.sni_hosts = r.Strings(match[j], "sniHosts", mf, true);
      for (size_t k = 0; k < m.sni_hosts.size(); ++k) {
        const std::string& sni = m.sni_hosts[k];
        const YAML::Node node = match[j]["sniHosts"][k];
        const std::string sf = Reader::Index(Reader::Join(mf, "sniHosts"), k);
        if (std::string problem = HostProblem(sni, /*allow_wildcard=*/true); !problem.empty()) {
          r.Error(node, sf, problem);
        } else if (!vs.hosts.empty() && std::none_of(vs.hosts.begin(), vs.hosts.end(),
                                                     [&](const auto& h) { return HostSubsetOf(sni, h); })) {
          r.Error(node, sf,
                  StrCat("\"", sni, "\" is not one of the VirtualService's hosts nor under one (spec.hosts: ",
                         absl::StrJoin(vs.hosts, ", ").substr(0, 256), ")"));
        }
      }
      m.port = r.Uint(match[j], "port", mf, false, 1, 65535).value_or(0);
      route.match.push_back(std::move(m));
    }
    route.route = ReadWeightedDestinations(r, tls[i], f, /*http=*/false);
    vs.tls.push_back(std::move(route));
  }
}

// The retry conditions Istio accepts in retryOn (Envoy's x-envoy-retry-on and
// x-envoy-retry-grpc-on policies); a number among them is an HTTP status code to retry on.
constexpr absl::string_view kRetryConditions[] = {"5xx",
                                                  "gateway-error",
                                                  "reset",
                                                  "connect-failure",
                                                  "retriable-4xx",
                                                  "refused-stream",
                                                  "retriable-status-codes",
                                                  "retriable-headers",
                                                  "envoy-ratelimited",
                                                  "http3-post-connect-failure",
                                                  "cancelled",
                                                  "deadline-exceeded",
                                                  "internal",
                                                  "resource-exhausted",
                                                  "unavailable"};

// http[].retries, as istiod converts it: retryOn split into conditions and status codes.
HttpRoute::Retries ReadRetries(Reader& r, const YAML::Node& node, const std::string& f) {
  r.OnlyKeys(node, f,
             {"attempts", "perTryTimeout", "retryOn", "retryRemoteLocalities", "retryIgnorePreviousHosts", "backoff"},
             {});
  HttpRoute::Retries retries;
  // Not required: Istio reads a missing attempts as 0, which turns retries off.
  retries.attempts = r.Uint(node, "attempts", f, false, 0, 100).value_or(0);
  retries.per_try_timeout = r.IstioDuration(node, "perTryTimeout", f);
  retries.backoff = r.IstioDuration(node, "backoff", f);
  std::vector<std::string> conditions;
  const std::string retry_on = r.String(node, "retryOn", f, false).value_or("");
  for (const absl::string_view part : absl::StrSplit(retry_on, ',')) {
    const absl::string_view condition = absl::StripAsciiWhitespace(part);
    if (condition.empty()) continue;
    uint32_t code = 0;
    if (absl::SimpleAtoi(condition, &code)) {
      if (code >= 100 && code <= 599) {
        retries.status_codes.push_back(code);
      } else {
        r.Error(node["retryOn"], Reader::Join(f, "retryOn"),
                StrCat("\"", condition, "\" is not an HTTP status code (100 to 599)"));
      }
    } else if (std::find(std::begin(kRetryConditions), std::end(kRetryConditions), condition) !=
               std::end(kRetryConditions)) {
      conditions.emplace_back(condition);
    } else {
      r.Error(node["retryOn"], Reader::Join(f, "retryOn"),
              StrCat("\"", condition, "\" is not a retry condition (one of ", absl::StrJoin(kRetryConditions, ", "),
                     ", or an HTTP status code)"));
    }
  }
  retries.retry_on = absl::StrJoin(conditions, ",");
  retries.ignore_previous_hosts = r.Bool(node, "retryIgnorePreviousHosts", f);
  retries.remote_localities = r.Bool(node, "retryRemoteLocalities", f).value_or(false);
  return retries;
}

// http[].corsPolicy, as Istio takes it: origins as string matches (or the deprecated exact
// strings), methods and header names, maxAge, allowCredentials.
std::optional<HttpRoute::CorsPolicy> ReadCorsPolicy(Reader& r, const YAML::Node& node, const std::string& f) {
  if (!r.IsMap(node, f)) return std::nullopt;
  r.OnlyKeys(node, f,
             {"allowOrigins", "allowOrigin", "allowMethods", "allowHeaders", "exposeHeaders", "maxAge",
              "allowCredentials", "unmatchedPreflights"});
  HttpRoute::CorsPolicy cors;
  if (const YAML::Node origins = node["allowOrigins"];
      origins.IsDefined() && r.IsSeq(origins, Reader::Join(f, "allowOrigins"))) {
    for (size_t i = 0; i < origins.size(); ++i) {
      if (auto m = ReadStringMatch(r, origins[i], Reader::Index(Reader::Join(f, "allowOrigins"), i))) {
        cors.allow_origins.push_back(*std::move(m));
      }
    }
  }
  // Envoy's CORS filter takes an exact "*" as any origin.
  for (std::string& origin : r.Strings(node, "allowOrigin", f, false)) {
    cors.allow_origins.push_back({StringMatch::Kind::kExact, std::move(origin)});
  }
  if (node["allowOrigins"].IsDefined() && node["allowOrigin"].IsDefined()) {
    r.Error(node["allowOrigin"], Reader::Join(f, "allowOrigin"), "cannot be used with allowOrigins");
  }
  const auto tokens = [&](const char* key, std::vector<std::string>& into) {
    into = r.Strings(node, key, f, false);
    const YAML::Node list = node[key];
    for (size_t i = 0; list.IsDefined() && list.IsSequence() && i < list.size(); ++i) {
      if (!list[i].IsScalar()) continue;  // said by Strings
      // Envoy joins them with commas: a name holding one would be two.
      const std::string& token = list[i].Scalar();
      // An HTTP token (RFC 7230), as Istio's ValidateCORSHTTPHeaderName takes it, or "*".
      if (!(token == "*" || IsHttpToken(token))) {
        r.Error(list[i], Reader::Index(Reader::Join(f, key), i),
                "must be a method or header name (an HTTP token: letters, digits and !#$%&'*+-.^_`|~), or *");
      }
    }
  };
  tokens("allowMethods", cors.allow_methods);
  tokens("allowHeaders", cors.allow_headers);
  tokens("exposeHeaders", cors.expose_headers);
  cors.max_age = r.IstioDuration(node, "maxAge", f);
  if (cors.max_age.has_value() && absl::Trunc(*cors.max_age, absl::Seconds(1)) != *cors.max_age) {
    // As Istio validates it: the Access-Control-Max-Age header counts whole seconds.
    r.Error(node["maxAge"], Reader::Join(f, "maxAge"), "must be a whole number of seconds (Access-Control-Max-Age)");
    cors.max_age.reset();
  }
  cors.allow_credentials = r.Bool(node, "allowCredentials", f);
  const std::string preflights = r.String(node, "unmatchedPreflights", f, false).value_or("UNSPECIFIED");
  if (preflights == "FORWARD" || preflights == "IGNORE") {
    cors.forward_unmatched_preflights = preflights == "FORWARD";
  } else if (preflights != "UNSPECIFIED") {
    r.Error(node["unmatchedPreflights"], Reader::Join(f, "unmatchedPreflights"),
            "must be one of UNSPECIFIED, FORWARD, IGNORE");
  }
  return cors;
}

// http[].redirect and http[].directResponse: what the proxy answers instead of routing. Either
// replaces route[], and with it everything that acts on the request sent upstream.
void ReadRedirectOrDirectResponse(Reader& r, const YAML::Node& h, const std::string& f, HttpRoute& route) {
  const YAML::Node redirect = h["redirect"];
  const YAML::Node direct = h["directResponse"];
  const char* which = redirect.IsDefined() ? "redirect" : "directResponse";
  if (redirect.IsDefined() && direct.IsDefined()) {
    r.Error(direct, Reader::Join(f, "directResponse"), "cannot be used with redirect");
    return;
  }
  // Istio refuses these with either; the rest cxds does not combine with them.
  for (const char* key : {"route", "rewrite", "fault"}) {
    if (h[key].IsDefined()) r.Error(h[key], Reader::Join(f, key), StrCat("cannot be used with ", which));
  }
  for (const char* key :
       {"mirror", "mirrors", "mirrorPercentage", "mirrorPercent", "mirror_percent", "timeout", "retries"}) {
    if (h[key].IsDefined()) {
      r.Error(h[key], Reader::Join(f, key),
              StrCat("with ", which, " is not supported by cxds (nothing goes upstream)"));
    }
  }
  if (redirect.IsDefined()) {
    const std::string rf = Reader::Join(f, "redirect");
    if (!r.IsMap(redirect, rf)) return;
    r.OnlyKeys(redirect, rf, {"uri", "authority", "port", "scheme", "redirectCode", "derivePort"});
    HttpRoute::Redirect out;
    out.uri = r.String(redirect, "uri", rf, false).value_or("");
    out.authority = r.String(redirect, "authority", rf, false).value_or("");
    out.port = r.Uint(redirect, "port", rf, false, 1, 65535).value_or(0);
    out.scheme = r.String(redirect, "scheme", rf, false).value_or("");
    if (redirect["derivePort"].IsDefined()) {
      const std::string derive = r.String(redirect, "derivePort", rf, false).value_or("");
      if (redirect["port"].IsDefined()) {
        r.Error(redirect["derivePort"], Reader::Join(rf, "derivePort"), "give port or derivePort, not both");
      } else if (derive == "FROM_REQUEST_PORT") {
        out.port_from_request = true;
      } else if (derive != "FROM_PROTOCOL_DEFAULT") {
        r.Error(redirect["derivePort"], Reader::Join(rf, "derivePort"),
                "must be one of FROM_PROTOCOL_DEFAULT, FROM_REQUEST_PORT");
      }
    }
    if (!out.uri.empty() && out.uri.front() != '/')
      r.Error(redirect["uri"], Reader::Join(rf, "uri"), "must start with /");
    if (out.uri.empty() && out.authority.empty() && out.port == 0 && out.scheme.empty() &&
        !redirect["derivePort"].IsDefined()) {
      r.Error(redirect, rf, "needs uri, authority, port or scheme");
    }
    if (std::optional<uint32_t> code = r.Uint(redirect, "redirectCode", rf, false, 300, 399)) {
      if (*code != 301 && *code != 302 && *code != 303 && *code != 307 && *code != 308) {
        r.Error(redirect["redirectCode"], Reader::Join(rf, "redirectCode"),
                StrCat(*code, " is not supported by cxds (Envoy redirects with 301, 302, 303, 307 or 308)"));
      }
      out.code = *code;
    }
    route.redirect = out;
    return;
  }
  const std::string df = Reader::Join(f, "directResponse");
  if (!r.IsMap(direct, df)) return;
  r.OnlyKeys(direct, df, {"status", "body"});
  HttpRoute::DirectResponse out;
  out.status = r.Uint(direct, "status", df, true, 200, 599).value_or(200);
  if (const YAML::Node body = direct["body"]; body.IsDefined()) {
    const std::string bf = Reader::Join(df, "body");
    if (!r.IsMap(body, bf)) return;
    r.OnlyKeys(body, bf, {"string", "bytes"});
    if (body["string"].IsDefined() && body["bytes"].IsDefined()) {
      r.Error(body, bf, "has both string and bytes (one of them)");
    } else if (body["bytes"].IsDefined()) {
      // Bytes in YAML are base64, as in protobuf's JSON mapping.
      const std::string encoded = r.String(body, "bytes", bf, true).value_or("");
      if (!absl::Base64Unescape(encoded, &out.body)) r.Error(body["bytes"], Reader::Join(bf, "bytes"), "is not base64");
    } else {
      out.body = r.String(body, "string", bf, true).value_or("");
    }
    if (out.body.size() > HttpRoute::kMaxDirectResponseBody) {
      r.Error(body, bf,
              StrCat("is ", out.body.size(), " bytes: longer than ", HttpRoute::kMaxDirectResponseBody,
                     " bytes is not supported by cxds (Envoy's default max_direct_response_body_size_bytes)"));
    }
  }
  route.direct_response = out;
}

// The chains of a sidecar's opaque (TCP, TLS) listeners are the same for every proxy that sees
// the service (MeshContext::OpaqueChains), so tcp and tls routes cannot differ by the client's
// namespace: a VirtualService with such routes in the mesh and a narrower exportTo is refused
// rather than served to every namespace. (At Gateways and for HTTP routes, exportTo is honoured.)
void RefuseNarrowOpaqueExports(Reader& r, const YAML::Node& spec, const VirtualService& vs) {
  if (vs.export_to.empty() || vs.export_to == std::vector<std::string>{"*"}) return;
  const auto in_mesh = [&](const std::vector<std::string>& match_gateways) {
    const std::vector<std::string>& at = match_gateways.empty() ? vs.gateways : match_gateways;
    return std::find(at.begin(), at.end(), "mesh") != at.end();
  };
  bool opaque_in_mesh = false;
  for (const TcpRoute& route : vs.tcp) {
    if (route.match.empty()) opaque_in_mesh = opaque_in_mesh || in_mesh({});
    for (const TcpRoute::Match& match : route.match) opaque_in_mesh = opaque_in_mesh || in_mesh(match.gateways);
  }
  for (const TlsRoute& route : vs.tls) {
    for (const TlsRoute::Match& match : route.match) opaque_in_mesh = opaque_in_mesh || in_mesh(match.gateways);
  }
  if (opaque_in_mesh) {
    r.Error(spec["exportTo"], "spec.exportTo",
            "exportTo other than \"*\" on a VirtualService with tcp or tls routes for the mesh is not supported by "
            "cxds (sidecars' TCP and TLS listeners are shared by every namespace; HTTP routes and routes bound "
            "only to Gateways may be exported narrowly)");
  }
}

// http[].delegate {name, namespace} of a route of `vs_namespace` (`in_delegate`: of a
// VirtualService without hosts, where Istio refuses it: it delegates one level).
std::optional<HttpRoute::Delegate> ReadDelegate(Reader& r, const YAML::Node& h, const std::string& f,
                                                const std::string& vs_namespace, bool in_delegate) {
  const std::string df = Reader::Join(f, "delegate");
  if (in_delegate) {
    r.Error(h["delegate"], df,
            "cannot be set in a delegate VirtualService (one without spec.hosts): as in Istio, "
            "delegation is one level deep");
    return std::nullopt;
  }
  for (const char* key : {"route", "redirect"}) {
    if (h[key].IsDefined()) r.Error(h[key], Reader::Join(f, key), "cannot be used with delegate");
  }
  if (h["directResponse"].IsDefined()) {
    r.Error(h["directResponse"], Reader::Join(f, "directResponse"),
            "with delegate is not supported by cxds (the delegate's routes give the answer)");
  }
  if (!r.IsMap(h["delegate"], df)) return std::nullopt;
  r.OnlyKeys(h["delegate"], df, {"name", "namespace"});
  HttpRoute::Delegate out{r.String(h["delegate"], "name", df, true).value_or(""),
                          r.String(h["delegate"], "namespace", df, false).value_or(vs_namespace)};
  if (!out.name.empty() && !IsDnsName(out.name)) {
    r.Error(h["delegate"]["name"], Reader::Join(df, "name"), "must be a VirtualService name (a DNS name)");
  }
  if (!IsDnsLabel(out.namespace_name)) {
    r.Error(h["delegate"]["namespace"], Reader::Join(df, "namespace"),
            "must be a namespace name, a DNS label (a-z, 0-9, '-'; at most 63 characters)");
  }
  return out;
}

MeshObject ReadVirtualService(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  VirtualService vs;
  vs.meta = std::move(meta);
  const YAML::Node spec = doc["spec"];
  if (!r.IsMap(spec, "spec")) return vs;
  r.OnlyKeys(spec, "spec", {"hosts", "http", "tcp", "tls", "gateways", "exportTo"});
  vs.export_to = ReadExportTo(r, spec, vs.meta.namespace_name, /*service_entry=*/false);
  if (spec["gateways"].IsDefined() && !spec["gateways"].IsNull()) {  // null: the default, as in Istio
    vs.gateways = ReadGatewayNames(r, spec, "spec", vs.meta.namespace_name);
    if (vs.gateways.empty() && r.IsSeq(spec["gateways"], "spec.gateways") && spec["gateways"].size() == 0) {
      vs.gateways = {"mesh"};  // an empty list is the default, as in Istio
    }
  }
  vs.hosts = r.Strings(spec, "hosts", "spec", false);
  // As Istio validates: "*" would take every host's traffic in the mesh; it is for Gateways.
  // (From the list as written, as Istio decides it: a gateway name refused there still counts.)
  bool applies_to_mesh = true;
  if (const YAML::Node gateways = spec["gateways"];
      gateways.IsDefined() && gateways.IsSequence() && gateways.size() > 0) {
    applies_to_mesh = std::any_of(gateways.begin(), gateways.end(),
                                  [](const YAML::Node& g) { return g.IsScalar() && g.Scalar() == "mesh"; });
  }
  for (size_t i = 0; i < vs.hosts.size(); ++i) {
    CheckHost(r, spec["hosts"][i], Reader::Index("spec.hosts", i), vs.hosts[i], /*allow_wildcard=*/true);
    if (vs.hosts[i] == "*" && applies_to_mesh) {
      r.Error(spec["hosts"][i], Reader::Index("spec.hosts", i),
              "the wildcard host * is not allowed for a VirtualService bound to the mesh (gateways unset or naming "
              "mesh), as Istio validates; it may be bound to Gateways only");
    }
  }
  // Without hosts it is a delegate, whose http routes others' http[].delegate take in; Istio
  // refuses these on one, as they would mean nothing there.
  const bool delegate = vs.hosts.empty();
  if (delegate) {
    if (spec["gateways"].IsDefined() && spec["gateways"].IsSequence() && spec["gateways"].size() > 0) {
      r.Error(spec["gateways"], "spec.gateways",
              "must not be set without spec.hosts (a delegate VirtualService is served at the gateways of the "
              "VirtualServices that delegate to it)");
    }
    for (const char* key : {"tcp", "tls"}) {
      if (spec[key].IsDefined()) {
        r.Error(spec[key], StrCat("spec.", key),
                "must not be set without spec.hosts (a delegate VirtualService has http routes only, as in Istio)");
      }
    }
  }
  ReadTcpRoutes(r, spec, vs);
  ReadTlsRoutes(r, spec, vs);
  RefuseNarrowOpaqueExports(r, spec, vs);
  const YAML::Node http = spec["http"];
  if (!http.IsDefined()) {
    if (delegate) {
      r.Error(spec, "spec.http", "is required without spec.hosts (a delegate VirtualService gives http routes)");
    } else if (!spec["tcp"].IsDefined() && !spec["tls"].IsDefined()) {
      r.Error(spec, "spec.http", "is required (or spec.tcp or spec.tls: cxds serves HTTP, TCP and TLS routes)");
    }
    return vs;
  }
  if (!r.IsSeq(http, "spec.http")) return vs;
  for (size_t i = 0; i < http.size(); ++i) {
    const std::string f = Reader::Index("spec.http", i);
    const YAML::Node h = http[i];
    if (!r.IsMap(h, f)) continue;
    r.OnlyKeys(
        h, f,
        {"name", "match", "route", "timeout", "retries", "fault", "headers", "rewrite", "mirror", "mirrorPercentage",
         "mirrorPercent", "mirror_percent", "mirrors", "redirect", "directResponse", "corsPolicy", "delegate"},
        {});
    HttpRoute route;
    if (h["delegate"].IsDefined()) route.delegate = ReadDelegate(r, h, f, vs.meta.namespace_name, delegate);
    route.name = r.String(h, "name", f, false).value_or("");
    if (h["match"].IsDefined() && r.IsSeq(h["match"], Reader::Join(f, "match"))) {
      for (size_t j = 0; j < h["match"].size(); ++j) {
        const std::string mf = Reader::Index(Reader::Join(f, "match"), j);
        const YAML::Node m = h["match"][j];
        if (!r.IsMap(m, mf)) continue;
        r.OnlyKeys(m, mf,
                   {"name", "uri", "headers", "withoutHeaders", "ignoreUriCase", "method", "authority", "scheme",
                    "queryParams", "port", "sourceLabels", "sourceNamespace", "gateways", "statPrefix"});
        HttpRoute::Match match;
        match.source_labels = r.Labels(m, "sourceLabels", mf);
        for (const auto& [key, value] : match.source_labels) {
          if (key.empty())
            r.Error(m["sourceLabels"], Reader::Join(mf, "sourceLabels"), "a label name must not be empty");
        }
        match.source_namespace = r.String(m, "sourceNamespace", mf, false).value_or("");
        match.stat_prefix = r.String(m, "statPrefix", mf, false).value_or("");
        if (m["sourceNamespace"].IsDefined() && !IsDnsLabel(match.source_namespace)) {
          r.Error(m["sourceNamespace"], Reader::Join(mf, "sourceNamespace"),
                  "must be a namespace name, a DNS label (a-z, 0-9, '-'; at most 63 characters)");
        }
        match.gateways = ReadGatewayNames(r, m, mf, vs.meta.namespace_name);
        if (m["uri"].IsDefined()) match.uri = ReadStringMatch(r, m["uri"], Reader::Join(mf, "uri"));
        match.ignore_uri_case = r.Bool(m, "ignoreUriCase", mf).value_or(false);
        match.headers = ReadMatchMap(r, m["headers"], Reader::Join(mf, "headers"), true);
        match.without_headers = ReadMatchMap(r, m["withoutHeaders"], Reader::Join(mf, "withoutHeaders"), true);
        match.query_params = ReadMatchMap(r, m["queryParams"], Reader::Join(mf, "queryParams"), false);
        match.port = r.Uint(m, "port", mf, false, 1, 65535).value_or(0);
        for (auto [key, into] : {std::pair{"method", &match.method}, std::pair{"authority", &match.authority},
                                 std::pair{"scheme", &match.scheme}}) {
          if (m[key].IsDefined()) *into = ReadStringMatch(r, m[key], Reader::Join(mf, key));
        }
        route.match.push_back(std::move(match));
      }
    }
    if (h["corsPolicy"].IsDefined()) route.cors = ReadCorsPolicy(r, h["corsPolicy"], Reader::Join(f, "corsPolicy"));
    if (h["redirect"].IsDefined() || h["directResponse"].IsDefined()) {
      ReadRedirectOrDirectResponse(r, h, f, route);
      if (h["headers"].IsDefined()) route.headers = ReadHeaders(r, h["headers"], Reader::Join(f, "headers"));
      vs.http.push_back(std::move(route));
      continue;
    }
    if (!h["delegate"].IsDefined()) route.route = ReadWeightedDestinations(r, h, f, /*http=*/true);
    route.timeout = r.IstioDuration(h, "timeout", f);  // at least 1ms, as Istio validates
    if (h["retries"].IsDefined() && r.IsMap(h["retries"], Reader::Join(f, "retries"))) {
      const std::string rf = Reader::Join(f, "retries");
      route.retries = ReadRetries(r, h["retries"], rf);
    }
    if (h["fault"].IsDefined()) route.fault = ReadFault(r, h["fault"], Reader::Join(f, "fault"));
    if (h["headers"].IsDefined()) route.headers = ReadHeaders(r, h["headers"], Reader::Join(f, "headers"));
    if (const YAML::Node rewrite = h["rewrite"]; rewrite.IsDefined() && r.IsMap(rewrite, Reader::Join(f, "rewrite"))) {
      const std::string rf = Reader::Join(f, "rewrite");
      r.OnlyKeys(rewrite, rf, {"uri", "authority", "uriRegexRewrite"});
      HttpRoute::Rewrite rw{r.String(rewrite, "uri", rf, false).value_or(""),
                            r.String(rewrite, "authority", rf, false).value_or("")};
      if (!rw.uri.empty() && rw.uri.front() != '/')
        r.Error(rewrite["uri"], Reader::Join(rf, "uri"), "must start with /");
      if (const YAML::Node regex = rewrite["uriRegexRewrite"];
          regex.IsDefined() && r.IsMap(regex, Reader::Join(rf, "uriRegexRewrite"))) {
        const std::string xf = Reader::Join(rf, "uriRegexRewrite");
        r.OnlyKeys(regex, xf, {"match", "rewrite"});
        rw.regex_match = r.String(regex, "match", xf, true).value_or("");
        rw.regex_rewrite = r.String(regex, "rewrite", xf, true).value_or("");
        if (regex["match"].IsDefined()) CheckRegex(r, regex["match"], Reader::Join(xf, "match"), rw.regex_match);
        // As Istio: one of the two ways to rewrite the path.
        if (rewrite["uri"].IsDefined()) r.Error(regex, xf, "cannot be used with rewrite.uri");
      }
      if (rw.uri.empty() && rw.authority.empty() && !rewrite["uriRegexRewrite"].IsDefined()) {
        r.Error(rewrite, rf, "needs uri, authority or uriRegexRewrite");
      }
      route.rewrite = rw;
    }
    // Istio accepts a percentage without `mirror`: a delegate's route sets it for its delegating
    // route's mirror that way (MergeDelegateRoute); elsewhere it has nothing to apply to.
    route.mirror_percentage = r.Percent(h, "mirrorPercentage", f);
    route.mirror_percent =
        r.Uint(h, h["mirrorPercent"].IsDefined() ? "mirrorPercent" : "mirror_percent", f, false, 0, 100);
    if (const YAML::Node mirror = h["mirror"]; mirror.IsDefined()) {
      route.mirrors.push_back({ReadDestination(r, mirror, Reader::Join(f, "mirror")), route.SingleMirrorPercent(),
                               /*single=*/true, /*in_millionths=*/route.mirror_percentage.has_value()});
      if (h["mirrors"].IsDefined()) r.Error(h["mirrors"], Reader::Join(f, "mirrors"), "cannot be used with mirror");
    } else {
      if (const YAML::Node mirrors = h["mirrors"];
          mirrors.IsDefined() && r.IsSeq(mirrors, Reader::Join(f, "mirrors"))) {
        for (size_t j = 0; j < mirrors.size(); ++j) {
          const std::string mf = Reader::Index(Reader::Join(f, "mirrors"), j);
          if (!r.IsMap(mirrors[j], mf)) continue;
          r.OnlyKeys(mirrors[j], mf, {"destination", "percentage"});
          if (!mirrors[j]["destination"].IsDefined()) {
            r.Error(mirrors[j], Reader::Join(mf, "destination"), "is required");
            continue;
          }
          HttpRoute::Mirror m{ReadDestination(r, mirrors[j]["destination"], Reader::Join(mf, "destination")), 100};
          if (auto percent = r.Percent(mirrors[j], "percentage", mf)) {
            m.percent = *percent;
            m.in_millionths = true;
          }
          route.mirrors.push_back(std::move(m));
        }
      }
    }
    vs.http.push_back(std::move(route));
  }
  return vs;
}

// loadBalancer.consistentHash: exactly one hash key; ring hash (maglev is not supported).
std::optional<TrafficPolicy::ConsistentHash> ReadConsistentHash(Reader& r, const YAML::Node& node,
                                                                const std::string& f) {
  if (!r.IsMap(node, f)) return std::nullopt;
  r.OnlyKeys(node, f,
             {"httpHeaderName", "httpCookie", "useSourceIp", "httpQueryParameterName", "ringHash", "minimumRingSize"},
             {"maglev"});
  TrafficPolicy::ConsistentHash hash;
  int keys = 0;
  using Key = TrafficPolicy::ConsistentHash::Key;
  if (auto header = r.String(node, "httpHeaderName", f, false)) {
    ++keys;
    hash = {Key::kHeader, *header};
  }
  if (const YAML::Node cookie = node["httpCookie"];
      cookie.IsDefined() && r.IsMap(cookie, Reader::Join(f, "httpCookie"))) {
    ++keys;
    const std::string cf = Reader::Join(f, "httpCookie");
    r.OnlyKeys(cookie, cf, {"name", "path", "ttl"}, {"attributes"});
    hash = {Key::kCookie, r.String(cookie, "name", cf, true).value_or("")};
    hash.cookie_path = r.String(cookie, "path", cf, false).value_or("");
    hash.cookie_ttl = r.Duration(cookie, "ttl", cf);
  }
  if (r.Bool(node, "useSourceIp", f).value_or(false)) {
    ++keys;
    hash = {Key::kSourceIp, ""};
  }
  if (auto param = r.String(node, "httpQueryParameterName", f, false)) {
    ++keys;
    hash = {Key::kQueryParameter, *param};
  }
  if (keys != 1 && !node["maglev"].IsDefined()) {
    r.Error(node, f,
            keys == 0 ? "needs one of httpHeaderName, httpCookie, useSourceIp, httpQueryParameterName"
                      : "give one of httpHeaderName, httpCookie, useSourceIp, httpQueryParameterName");
  }
  const auto ring_size = [&](const YAML::Node& parent, const char* key, const std::string& pf) {
    if (auto size = r.Uint(parent, key, pf, false, 1, 8388608)) hash.minimum_ring_size = *size;
  };
  ring_size(node, "minimumRingSize", f);
  if (const YAML::Node ring = node["ringHash"]; ring.IsDefined() && r.IsMap(ring, Reader::Join(f, "ringHash"))) {
    r.OnlyKeys(ring, Reader::Join(f, "ringHash"), {"minimumRingSize"});
    ring_size(ring, "minimumRingSize", Reader::Join(f, "ringHash"));
  }
  return hash;
}

// tls[key] as an absolute file path on the `where` ("proxy", "gateway"), which Envoy reads
// itself; nullopt when absent or refused (reported).
std::optional<std::string> ReadCertificatePath(Reader& r, const YAML::Node& tls, const char* key, const std::string& tf,
                                               const char* where) {
  std::optional<std::string> value = r.String(tls, key, tf, false);
  if (!value.has_value() || value->empty()) return std::nullopt;  // "" is unset, as Istio's proto3 reads it
  if (value->front() != '/' || value->size() > 4096 || value->find('\0') != std::string::npos) {
    r.Error(tls[key], Reader::Join(tf, key),
            StrCat("other than an absolute file path on the ", where,
                   " is not supported by cxds (Envoy reads the file itself, from wherever it runs)"));
    return std::nullopt;
  }
  return value;
}

// What is wrong with a credentialName (a Secret's name, a DNS subdomain: istiod prefixes
// "kubernetes://" to make the SDS name), or "".
std::string CredentialNameProblem(const std::string& credential) {
  if (credential.find("://") != std::string::npos) {
    return "with a scheme (sds://, kubernetes-gateway://, ...) is not supported by cxds: name a Secret of the "
           "gateway's namespace";
  }
  if (!IsDnsName(credential)) {
    return "must be the name of a Secret in the gateway's namespace (lower-case letters, digits, '-' and '.')";
  }
  return "";
}
// A locality pattern of localityLbSetting, as Istio validates it: "region/zone/subzone", at most
// three parts, '*' only as a whole last part ("us-east/*").
std::string LocalityPatternProblem(const std::string& pattern) {
  if (pattern.empty()) return "must not be empty";
  if (std::string problem = LocalityProblem(pattern); !problem.empty()) return problem;
  const std::vector<std::string> parts = absl::StrSplit(pattern, '/');
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].find('*') != std::string::npos && i + 1 != parts.size()) {
      return "may use '*' only at its end (as Istio validates)";
    }
  }
  if (parts.size() > 3) return "with more than three parts is not supported by cxds (region/zone/subzone)";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty()) return "with an empty part is not supported by cxds";
    if (parts[i].find('*') != std::string::npos && parts[i] != "*") {
      return "with '*' inside a part is not supported by cxds (only a whole last part: \"us-east/*\")";
    }
  }
  return "";
}

// loadBalancer.warmup {duration (required, at least 1ms), minimumPercent (0-100), aggression
// (above 0)} or the deprecated warmupDurationSecs (any duration), as Istio validates them; warmup wins, as in
// istiod.
std::optional<PolicyFields::Warmup> ReadWarmup(Reader& r, const YAML::Node& lb, const std::string& lf) {
  std::optional<PolicyFields::Warmup> deprecated;
  // Istio does not validate the deprecated field: any duration, as istiod passes it on.
  if (std::optional<absl::Duration> d = r.Duration(lb, "warmupDurationSecs", lf)) {
    deprecated = PolicyFields::Warmup{.duration = *d};
  }
  const YAML::Node node = lb["warmup"];
  const std::string f = Reader::Join(lf, "warmup");
  if (!node.IsDefined() || node.IsNull() || !r.IsMap(node, f)) return deprecated;
  r.OnlyKeys(node, f, {"duration", "minimumPercent", "aggression"});
  PolicyFields::Warmup warmup{.full_form = true};
  warmup.minimum_percent = r.Number(node, "minimumPercent", f, 0, 100, false, "from 0 to 100").value_or(10);
  warmup.aggression =
      r.Number(node, "aggression", f, 0, std::numeric_limits<double>::max(), true, "above 0").value_or(1);
  if (!node["duration"].IsDefined() || node["duration"].IsNull()) {
    r.Error(node, Reader::Join(f, "duration"), "is required");
    return std::nullopt;
  }
  std::optional<absl::Duration> d = r.IstioDuration(node, "duration", f);
  if (!d.has_value()) return std::nullopt;
  warmup.duration = *d;
  return warmup;
}

// At most this many failoverPriority labels: each costs every endpoint a comparison for every
// proxy the rule reaches. Istio sets no bound; more is refused as not supported.
constexpr size_t kMaxFailoverPriorityLabels = 32;

// loadBalancer.localityLbSetting: enabled, distribute (from -> to weights adding up to 100),
// failover (region -> another region) and failoverPriority, as Istio validates them.
PolicyFields::LocalityLb ReadLocalityLb(Reader& r, const YAML::Node& node, const std::string& f) {
  PolicyFields::LocalityLb out;
  if (!r.IsMap(node, f)) return out;
  r.OnlyKeys(node, f, {"enabled", "distribute", "failover", "failoverPriority"});
  out.failover_priority = r.Strings(node, "failoverPriority", f, false);
  if (out.failover_priority.size() > kMaxFailoverPriorityLabels) {
    r.Error(node["failoverPriority"], Reader::Join(f, "failoverPriority"),
            StrCat("more than ", kMaxFailoverPriorityLabels, " labels is not supported by cxds (there are ",
                   out.failover_priority.size(), ")"));
    out.failover_priority.clear();
  }
  if (node["enabled"].IsDefined()) out.enabled = r.Bool(node, "enabled", f).value_or(true);
  const auto non_empty = [&](const char* key) {
    const YAML::Node list = node[key];
    return list.IsDefined() && list.IsSequence() && list.size() > 0;
  };
  if (non_empty("distribute") && non_empty("failover")) {
    r.Error(node["failover"], Reader::Join(f, "failover"),
            "give distribute or failover, not both (as Istio validates)");
  }
  if (const YAML::Node list = node["distribute"]; list.IsDefined() && r.IsSeq(list, Reader::Join(f, "distribute"))) {
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string df = Reader::Index(Reader::Join(f, "distribute"), i);
      if (!r.IsMap(list[i], df)) continue;
      r.OnlyKeys(list[i], df, {"from", "to"});
      PolicyFields::LocalityLb::Distribute rule;
      rule.from = r.String(list[i], "from", df, true).value_or("");
      if (std::string problem = LocalityPatternProblem(rule.from); !problem.empty() && list[i]["from"].IsDefined()) {
        r.Error(list[i]["from"], Reader::Join(df, "from"), problem);
      }
      uint64_t total = 0;
      if (const YAML::Node to = list[i]["to"]; to.IsDefined() && r.IsMap(to, Reader::Join(df, "to"))) {
        for (const auto& entry : to) {
          const std::string tf = Reader::Join(Reader::Join(df, "to"), entry.first.Scalar());
          if (std::string problem = LocalityPatternProblem(entry.first.Scalar()); !problem.empty()) {
            r.Error(entry.first, tf, problem);
          }
          const std::optional<uint32_t> weight = r.UintValue(entry.second, tf, 1, 100);
          if (!weight.has_value()) continue;
          total += *weight;
          rule.to.emplace_back(entry.first.Scalar(), *weight);
        }
      }
      if (total != 100 && list[i]["to"].IsDefined()) {
        r.Error(list[i]["to"], Reader::Join(df, "to"),
                StrCat("weights must add up to 100 (they add up to ", total, ")"));
      }
      out.distribute.push_back(std::move(rule));
    }
  }
  if (const YAML::Node list = node["failover"]; list.IsDefined() && r.IsSeq(list, Reader::Join(f, "failover"))) {
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string ff = Reader::Index(Reader::Join(f, "failover"), i);
      if (!r.IsMap(list[i], ff)) continue;
      r.OnlyKeys(list[i], ff, {"from", "to"});
      const std::string from = r.String(list[i], "from", ff, true).value_or("");
      const std::string to = r.String(list[i], "to", ff, true).value_or("");
      for (const auto& [key, value] : {std::pair{"from", &from}, std::pair{"to", &to}}) {
        if (!list[i][key].IsDefined()) continue;
        if (value->empty() || value->find('/') != std::string::npos || value->find('*') != std::string::npos ||
            !LocalityProblem(*value).empty()) {
          r.Error(list[i][key], Reader::Join(ff, key), "must be a region (failover is from region to region)");
        }
      }
      if (!from.empty() && from == to) r.Error(list[i], ff, "from and to must be different regions");
      out.failover.emplace_back(from, to);
    }
  }
  // As Istio validates: failover already orders by region, zone and subzone (the entry as
  // written: with "=value" it is not one of these).
  if (!out.failover.empty()) {
    for (size_t i = 0; i < out.failover_priority.size(); ++i) {
      const std::string& label = out.failover_priority[i];
      if (label == "topology.kubernetes.io/region" || label == "topology.kubernetes.io/zone" ||
          label == "topology.istio.io/subzone") {
        r.Error(node["failoverPriority"][i], Reader::Index(Reader::Join(f, "failoverPriority"), i),
                StrCat("topology label ", label, " cannot be given with failover (as Istio validates)"));
        break;
      }
    }
  }
  return out;
}

// loadBalancer, connectionPool, outlierDetection and tls of a traffic policy or a port's settings.
void ReadPolicyFields(Reader& r, const YAML::Node& node, const std::string& f, PolicyFields& p) {
  if (const YAML::Node tls = node["tls"]; tls.IsDefined() && r.IsMap(tls, Reader::Join(f, "tls"))) {
    const std::string tf = Reader::Join(f, "tls");
    const int errors_before = r.error_count();
    r.OnlyKeys(tls, tf,
               {"mode", "clientCertificate", "privateKey", "caCertificates", "caCrl", "subjectAltNames", "sni",
                "insecureSkipVerify", "credentialName"});
    const std::string mode = r.String(tls, "mode", tf, false).value_or("DISABLE");
    PolicyFields::ClientTls client;
    if (mode == "ISTIO_MUTUAL") {
      r.Error(tls["mode"], Reader::Join(tf, "mode"),
              "TLS mode ISTIO_MUTUAL is not supported by cxds (it issues no workload certificates; SIMPLE and MUTUAL "
              "with certificate files are)");
    } else if (mode == "SIMPLE" || mode == "MUTUAL") {
      client.mode = mode == "SIMPLE" ? PolicyFields::ClientTls::Mode::kSimple : PolicyFields::ClientTls::Mode::kMutual;
    } else if (mode != "DISABLE") {
      r.Error(tls["mode"], Reader::Join(tf, "mode"), "must be one of DISABLE, SIMPLE, MUTUAL, ISTIO_MUTUAL");
    }
    // File paths on the proxy: absolute, as Envoy reads them from wherever it runs.
    const auto path = [&](const char* key, std::string& out) {
      if (client.mode == PolicyFields::ClientTls::Mode::kDisable) return;
      out = ReadCertificatePath(r, tls, key, tf, "proxy").value_or("");
    };
    path("clientCertificate", client.client_certificate);
    path("privateKey", client.private_key);
    path("caCertificates", client.ca_certificates);
    path("caCrl", client.ca_crl);
    if (std::optional<std::string> credential = r.String(tls, "credentialName", tf, false);
        credential.has_value() && !credential->empty() && client.mode != PolicyFields::ClientTls::Mode::kDisable) {
      const YAML::Node at = tls["credentialName"];
      const std::string cf = Reader::Join(tf, "credentialName");
      if (std::string problem = CredentialNameProblem(*credential); !problem.empty()) {
        r.Error(at, cf, problem);
      } else if (!client.client_certificate.empty() || !client.private_key.empty() || !client.ca_certificates.empty() ||
                 !client.ca_crl.empty()) {
        // Istio refuses this too: the Secret holds the certificates then.
        r.Error(at, cf,
                "cannot be set with clientCertificate, privateKey, caCertificates or caCrl (the Secret holds them)");
      } else {
        client.credential_name = *credential;
      }
    }
    client.sni = r.String(tls, "sni", tf, false).value_or("");
    if (client.sni.size() > 255)
      r.Error(tls["sni"], Reader::Join(tf, "sni"), "must be at most 255 bytes (a host name)");
    client.subject_alt_names = r.Strings(tls, "subjectAltNames", tf, false);
    client.insecure_skip_verify = r.Bool(tls, "insecureSkipVerify", tf).value_or(false);
    if (client.insecure_skip_verify && (!client.ca_certificates.empty() || !client.subject_alt_names.empty())) {
      // Istio refuses this too: nothing would check the server against them.
      r.Error(tls["insecureSkipVerify"], Reader::Join(tf, "insecureSkipVerify"),
              "cannot be set with caCertificates or subjectAltNames (they would not be checked)");
    }
    if (client.mode == PolicyFields::ClientTls::Mode::kMutual && client.credential_name.empty() &&
        (client.client_certificate.empty() || client.private_key.empty()) && r.error_count() == errors_before) {
      // Istio validates this too.
      r.Error(tls, Reader::Join(tf, client.client_certificate.empty() ? "clientCertificate" : "privateKey"),
              "is required for mode MUTUAL (the proxy's certificate and key files), unless credentialName names a "
              "Secret (at gateways)");
    }
    p.tls = client;  // under DISABLE the other fields mean nothing, as in istiod
  }
  if (node["loadBalancer"].IsDefined() && r.IsMap(node["loadBalancer"], Reader::Join(f, "loadBalancer"))) {
    const std::string lf = Reader::Join(f, "loadBalancer");
    r.OnlyKeys(node["loadBalancer"], lf,
               {"simple", "consistentHash", "localityLbSetting", "warmupDurationSecs", "warmup"});
    p.load_balancer_given = true;
    p.warmup = ReadWarmup(r, node["loadBalancer"], lf);
    if (const YAML::Node locality = node["loadBalancer"]["localityLbSetting"]; locality.IsDefined()) {
      p.locality_lb = ReadLocalityLb(r, locality, Reader::Join(lf, "localityLbSetting"));
    }
    if (const YAML::Node hash = node["loadBalancer"]["consistentHash"]; hash.IsDefined()) {
      if (node["loadBalancer"]["simple"].IsDefined()) {
        r.Error(hash, Reader::Join(lf, "consistentHash"), "give simple or consistentHash, not both");
      }
      p.consistent_hash = ReadConsistentHash(r, hash, Reader::Join(lf, "consistentHash"));
    }
    const std::string simple = r.String(node["loadBalancer"], "simple", lf, false).value_or("");
    if (simple == "ROUND_ROBIN") {
      p.load_balancer = TrafficPolicy::LoadBalancer::kRoundRobin;
    } else if (simple == "LEAST_REQUEST" || simple == "LEAST_CONN") {
      p.load_balancer = TrafficPolicy::LoadBalancer::kLeastRequest;
    } else if (simple == "RANDOM") {
      p.load_balancer = TrafficPolicy::LoadBalancer::kRandom;
    } else if (simple == "PASSTHROUGH") {
      r.Error(node["loadBalancer"]["simple"], Reader::Join(lf, "simple"), "PASSTHROUGH is not supported by cxds");
    } else if (!simple.empty() && simple != "UNSPECIFIED") {
      r.Error(node["loadBalancer"]["simple"], Reader::Join(lf, "simple"),
              "must be one of UNSPECIFIED, ROUND_ROBIN, LEAST_REQUEST, LEAST_CONN, RANDOM, PASSTHROUGH");
    }
  }
  if (node["connectionPool"].IsDefined() && r.IsMap(node["connectionPool"], Reader::Join(f, "connectionPool"))) {
    const std::string cf = Reader::Join(f, "connectionPool");
    const YAML::Node pool = node["connectionPool"];
    r.OnlyKeys(pool, cf, {"tcp", "http"});
    TrafficPolicy::ConnectionPool cp;
    if (pool["tcp"].IsDefined() && r.IsMap(pool["tcp"], Reader::Join(cf, "tcp"))) {
      const std::string tf = Reader::Join(cf, "tcp");
      const YAML::Node tcp = pool["tcp"];
      r.OnlyKeys(tcp, tf, {"maxConnections", "connectTimeout", "tcpKeepalive", "maxConnectionDuration", "idleTimeout"});
      // Istio's int32 limits; 0 is Istio's "unset" (istiod's default, no limit), as for the
      // http limits below.
      cp.max_connections = r.Uint(tcp, "maxConnections", tf, false, 0, INT32_MAX);
      if (cp.max_connections == 0u) cp.max_connections.reset();
      cp.connect_timeout = r.IstioDuration(tcp, "connectTimeout", tf);
      cp.max_connection_duration = r.IstioDuration(tcp, "maxConnectionDuration", tf);
      cp.tcp_idle_timeout = r.IstioDuration(tcp, "idleTimeout", tf, /*unchecked_under_1ms=*/true);
      if (const YAML::Node keepalive = tcp["tcpKeepalive"];
          keepalive.IsDefined() && r.IsMap(keepalive, Reader::Join(tf, "tcpKeepalive"))) {
        const std::string kf = Reader::Join(tf, "tcpKeepalive");
        r.OnlyKeys(keepalive, kf, {"probes", "time", "interval"});
        TrafficPolicy::ConnectionPool::TcpKeepalive k;
        k.probes = r.Uint(keepalive, "probes", kf, false, 1, 1u << 31);
        // Envoy counts whole seconds: generators round.
        k.time = r.IstioDuration(keepalive, "time", kf);
        k.interval = r.IstioDuration(keepalive, "interval", kf);
        cp.tcp_keepalive = k;
      }
    }
    if (pool["http"].IsDefined() && r.IsMap(pool["http"], Reader::Join(cf, "http"))) {
      const std::string hf = Reader::Join(cf, "http");
      r.OnlyKeys(pool["http"], hf,
                 {"http1MaxPendingRequests", "http2MaxRequests", "maxRetries", "maxRequestsPerConnection",
                  "idleTimeout", "h2UpgradePolicy", "useClientProtocol", "maxConcurrentStreams"});
      using H2Upgrade = TrafficPolicy::ConnectionPool::H2Upgrade;
      const std::string upgrade = r.String(pool["http"], "h2UpgradePolicy", hf, false).value_or("DEFAULT");
      if (upgrade == "UPGRADE") {
        cp.h2_upgrade = H2Upgrade::kUpgrade;
      } else if (upgrade == "DO_NOT_UPGRADE") {
        cp.h2_upgrade = H2Upgrade::kDoNotUpgrade;
      } else if (upgrade != "DEFAULT") {
        r.Error(pool["http"]["h2UpgradePolicy"], Reader::Join(hf, "h2UpgradePolicy"),
                "must be one of DEFAULT, DO_NOT_UPGRADE, UPGRADE");
      }
      cp.use_client_protocol = r.Bool(pool["http"], "useClientProtocol", hf).value_or(false);
      // 0 is Istio's "unset" (Envoy's default).
      cp.max_concurrent_streams = r.Uint(pool["http"], "maxConcurrentStreams", hf, false, 0, (1u << 31) - 1);
      if (cp.max_concurrent_streams == 0u) cp.max_concurrent_streams.reset();
      cp.max_retries = r.Uint(pool["http"], "maxRetries", hf, false, 0, INT32_MAX);
      if (cp.max_retries == 0u) cp.max_retries.reset();  // not "no retries": istiod's default
      // 0 is Istio's "unlimited": nothing is set.
      cp.max_requests_per_connection = r.Uint(pool["http"], "maxRequestsPerConnection", hf, false, 0, 1u << 31);
      if (cp.max_requests_per_connection == 0u) cp.max_requests_per_connection.reset();
      cp.idle_timeout = r.IstioDuration(pool["http"], "idleTimeout", hf);
      cp.http1_max_pending_requests = r.Uint(pool["http"], "http1MaxPendingRequests", hf, false, 0, INT32_MAX);
      if (cp.http1_max_pending_requests == 0u) cp.http1_max_pending_requests.reset();
      cp.http2_max_requests = r.Uint(pool["http"], "http2MaxRequests", hf, false, 0, INT32_MAX);
      if (cp.http2_max_requests == 0u) cp.http2_max_requests.reset();
    }
    p.connection_pool = cp;
  }
  if (node["outlierDetection"].IsDefined() && r.IsMap(node["outlierDetection"], Reader::Join(f, "outlierDetection"))) {
    const std::string of = Reader::Join(f, "outlierDetection");
    const YAML::Node od = node["outlierDetection"];
    r.OnlyKeys(
        od, of,
        {"consecutive5xxErrors", "consecutiveGatewayErrors", "interval", "baseEjectionTime", "maxEjectionPercent",
         "splitExternalLocalOriginErrors", "consecutiveLocalOriginFailures", "minHealthPercent"},
        {"consecutiveErrors"});
    TrafficPolicy::OutlierDetection o;
    o.consecutive_5xx_errors = r.Uint(od, "consecutive5xxErrors", of, false, 0, 1u << 31);
    o.consecutive_gateway_errors = r.Uint(od, "consecutiveGatewayErrors", of, false, 0, 1u << 31);
    o.interval = r.IstioDuration(od, "interval", of);
    o.base_ejection_time = r.IstioDuration(od, "baseEjectionTime", of);
    o.max_ejection_percent = r.Uint(od, "maxEjectionPercent", of, false, 0, 100);
    o.split_external_local_origin_errors = r.Bool(od, "splitExternalLocalOriginErrors", of).value_or(false);
    o.consecutive_local_origin_failures = r.Uint(od, "consecutiveLocalOriginFailures", of, false, 0, 1u << 31);
    o.min_health_percent = r.Uint(od, "minHealthPercent", of, false, 0, 100).value_or(0);
    // As Istio validates: the count of local-origin failures means nothing unless they are split.
    if (o.consecutive_local_origin_failures.value_or(0) > 0 && !o.split_external_local_origin_errors) {
      r.Error(od["consecutiveLocalOriginFailures"], Reader::Join(of, "consecutiveLocalOriginFailures"),
              "needs splitExternalLocalOriginErrors: true (local-origin failures are counted apart only then)");
    }
    p.outlier_detection = o;
  }
}

std::optional<TrafficPolicy> ReadTrafficPolicy(Reader& r, const YAML::Node& parent, const std::string& field) {
  const YAML::Node node = parent["trafficPolicy"];
  if (!node.IsDefined()) return std::nullopt;
  const std::string f = Reader::Join(field, "trafficPolicy");
  if (!r.IsMap(node, f)) return std::nullopt;
  r.OnlyKeys(node, f,
             {"loadBalancer", "connectionPool", "outlierDetection", "tls", "portLevelSettings", "proxyProtocol",
              "retryBudget", "tunnel"});
  TrafficPolicy p;
  ReadPolicyFields(r, node, f, p);
  if (const YAML::Node tunnel = node["tunnel"];
      tunnel.IsDefined() && !tunnel.IsNull() && r.IsMap(tunnel, Reader::Join(f, "tunnel"))) {
    const std::string tf = Reader::Join(f, "tunnel");
    r.OnlyKeys(tunnel, tf, {"protocol", "targetHost", "targetPort"});
    TrafficPolicy::Tunnel t;
    // As Istio validates: CONNECT (its default) or POST, as written; the target a DNS name or an
    // IP address, and a port.
    const std::string protocol = r.String(tunnel, "protocol", tf, false).value_or("");
    if (protocol == "POST") {
      t.use_post = true;
    } else if (!protocol.empty() && protocol != "CONNECT") {
      r.Error(tunnel["protocol"], Reader::Join(tf, "protocol"),
              StrCat("must be CONNECT or POST, got \"", protocol.substr(0, 32), "\""));
    }
    // (A value that is no string, or none, has its error already.)
    const std::optional<std::string> host = r.String(tunnel, "targetHost", tf, true);
    t.target_host = host.value_or("");
    if (std::string problem = TunnelTargetProblem(t.target_host); host.has_value() && !problem.empty()) {
      r.Error(tunnel["targetHost"], Reader::Join(tf, "targetHost"), problem);
    }
    t.target_port = r.Uint(tunnel, "targetPort", tf, true, 1, 65535).value_or(0);
    if (node["proxyProtocol"].IsDefined() && !node["proxyProtocol"].IsNull()) {
      r.Error(tunnel, tf, "cannot be set with proxyProtocol, as Istio validates");
    }
    p.tunnel = std::move(t);
  }
  if (const YAML::Node budget = node["retryBudget"];
      budget.IsDefined() && !budget.IsNull() && r.IsMap(budget, Reader::Join(f, "retryBudget"))) {
    const std::string bf = Reader::Join(f, "retryBudget");
    // budgetInterval is Envoy's budget_interval, which the Envoy API cxds is built on lacks.
    r.OnlyKeys(budget, bf, {"percent", "minRetryConcurrency"}, {"budgetInterval"});
    PolicyFields::RetryBudget b;
    if (std::optional<double> percent = r.Number(budget, "percent", bf, 0, 100, false, "from 0 to 100"))
      b.percent = *percent;
    // 0, Istio's unset, is istiod's default of 3.
    if (std::optional<uint32_t> min = r.Uint(budget, "minRetryConcurrency", bf, false, 0, UINT32_MAX);
        min.value_or(0) > 0) {
      b.min_concurrency = *min;
    }
    p.retry_budget = b;
  }
  if (const YAML::Node proxy = node["proxyProtocol"];
      proxy.IsDefined() && !proxy.IsNull() && r.IsMap(proxy, Reader::Join(f, "proxyProtocol"))) {
    const std::string pf = Reader::Join(f, "proxyProtocol");
    r.OnlyKeys(proxy, pf, {"version"});
    const std::string version = r.String(proxy, "version", pf, false).value_or("V1");  // Istio's enum default
    if (version == "V1" || version == "V2") {
      p.proxy_protocol = version == "V1" ? PolicyFields::ProxyProtocol::kV1 : PolicyFields::ProxyProtocol::kV2;
    } else {
      r.Error(proxy["version"], Reader::Join(pf, "version"),
              StrCat("must be V1 or V2, got \"", version.substr(0, 32), "\""));
    }
  }
  if (const YAML::Node ports = node["portLevelSettings"];
      ports.IsDefined() && r.IsSeq(ports, Reader::Join(f, "portLevelSettings"))) {
    for (size_t i = 0; i < ports.size(); ++i) {
      const std::string pf = Reader::Index(Reader::Join(f, "portLevelSettings"), i);
      if (!r.IsMap(ports[i], pf)) continue;
      r.OnlyKeys(ports[i], pf, {"port", "loadBalancer", "connectionPool", "outlierDetection", "tls"});
      TrafficPolicy::PortPolicy port;
      if (const YAML::Node number = ports[i]["port"]; !number.IsDefined()) {
        r.Error(ports[i], Reader::Join(pf, "port"), "is required");
      } else if (r.IsMap(number, Reader::Join(pf, "port"))) {
        r.OnlyKeys(number, Reader::Join(pf, "port"), {"number"});
        port.port = r.Uint(number, "number", Reader::Join(pf, "port"), true, 1, 65535).value_or(0);
      }
      if (std::any_of(p.port_level.begin(), p.port_level.end(), [&](const auto& q) { return q.port == port.port; })) {
        r.Error(ports[i], Reader::Join(pf, "port"), StrCat("port ", port.port, " has settings twice"));
      }
      ReadPolicyFields(r, ports[i], pf, port.policy);
      p.port_level.push_back(std::move(port));
    }
  }
  return p;
}

MeshObject ReadDestinationRule(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  DestinationRule dr;
  dr.meta = std::move(meta);
  const YAML::Node spec = doc["spec"];
  if (!r.IsMap(spec, "spec")) return dr;
  r.OnlyKeys(spec, "spec", {"host", "trafficPolicy", "subsets", "exportTo", "workloadSelector"});
  dr.export_to = ReadExportTo(r, spec, dr.meta.namespace_name, /*service_entry=*/false);
  if (const YAML::Node selector = spec["workloadSelector"];
      selector.IsDefined() && !selector.IsNull() && r.IsMap(selector, "spec.workloadSelector")) {
    r.OnlyKeys(selector, "spec.workloadSelector", {"matchLabels"});
    LabelMap labels = r.Labels(selector, "matchLabels", "spec.workloadSelector");
    for (const auto& [name, value] : labels) {
      // Istio validates these too.
      const std::string lf = StrCat("spec.workloadSelector.matchLabels.", name.substr(0, 64));
      if (name.empty()) r.Error(selector["matchLabels"], lf, "a label name must not be empty");
      if (name.find('*') != std::string::npos || value.find('*') != std::string::npos) {
        r.Error(selector["matchLabels"], lf, "a wildcard (*) is not supported in a selector, as Istio validates");
      }
    }
    dr.workload_selector = std::move(labels);
    // Istio validates this too: such a rule serves its own namespace's workloads alone.
    const bool own_only =
        dr.export_to.empty() ||
        (dr.export_to.size() == 1 && (dr.export_to[0] == "." || dr.export_to[0] == dr.meta.namespace_name));
    if (!own_only) {
      r.Error(spec["exportTo"], "spec.exportTo",
              "with spec.workloadSelector may name only this namespace (\".\"), as Istio validates: the rule applies "
              "to this namespace's workloads alone");
    }
  }
  dr.host = r.String(spec, "host", "spec", true).value_or("");
  CheckHost(r, spec["host"], "spec.host", dr.host, /*allow_wildcard=*/true);
  dr.traffic_policy = ReadTrafficPolicy(r, spec, "spec");
  const YAML::Node subsets = spec["subsets"];
  if (subsets.IsDefined() && r.IsSeq(subsets, "spec.subsets")) {
    std::set<std::string> names;
    for (size_t i = 0; i < subsets.size(); ++i) {
      const std::string f = Reader::Index("spec.subsets", i);
      if (!r.IsMap(subsets[i], f)) continue;
      r.OnlyKeys(subsets[i], f, {"name", "labels", "trafficPolicy"});
      DestinationRule::Subset subset;
      subset.name = r.String(subsets[i], "name", f, true).value_or("");
      if (!subset.name.empty() && !IsDnsLabel(subset.name)) {
        r.Error(subsets[i]["name"], Reader::Join(f, "name"), "must be a DNS label (a-z, 0-9, '-')");
      }
      if (!subset.name.empty() && !names.insert(subset.name).second) {
        r.Error(subsets[i]["name"], Reader::Join(f, "name"), StrCat("subset \"", subset.name, "\" is defined twice"));
      }
      subset.labels = r.Labels(subsets[i], "labels", f);
      subset.traffic_policy = ReadTrafficPolicy(r, subsets[i], f);
      dr.subsets.push_back(std::move(subset));
    }
  }
  return dr;
}

MeshObject ReadSidecar(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  Sidecar sc;
  sc.meta = std::move(meta);
  const YAML::Node spec = doc["spec"];
  if (!r.IsMap(spec, "spec")) return sc;
  r.OnlyKeys(spec, "spec", {"workloadSelector", "egress"},
             {"ingress", "outboundTrafficPolicy", "inboundConnectionPool"});
  sc.workload_selector = Selector(r, spec, "spec");
  const YAML::Node egress = spec["egress"];
  // Istio takes a Sidecar of any one of these fields, each refused above as not served; an
  // empty one it refuses too.
  const bool other_fields = spec["ingress"].IsDefined() || spec["outboundTrafficPolicy"].IsDefined() ||
                            spec["inboundConnectionPool"].IsDefined();
  if (!egress.IsDefined()) {
    if (!other_fields) {
      r.Error(spec, "spec.egress", "is required (an empty Sidecar is refused, as Istio validates; cxds scopes egress)");
    }
    return sc;
  }
  if (!r.IsSeq(egress, "spec.egress")) return sc;
  if (egress.size() == 0 && !other_fields) {
    r.Error(egress, "spec.egress", "must not be empty (an empty Sidecar is refused, as Istio validates)");
    return sc;
  }
  for (size_t i = 0; i < egress.size(); ++i) {
    const std::string f = Reader::Index("spec.egress", i);
    if (!r.IsMap(egress[i], f)) continue;
    r.OnlyKeys(egress[i], f, {"hosts"}, {"port", "bind", "captureMode"});
    for (const std::string& host : r.Strings(egress[i], "hosts", f, true)) {
      if (host.find('/') == std::string::npos) {
        r.Error(egress[i]["hosts"], Reader::Join(f, "hosts"),
                StrCat("\"", host, "\" must be namespace/host (\"*/", host, "\", \"./", host, "\")"));
        continue;
      }
      const std::string ns = host.substr(0, host.find('/'));
      if (ns != "*" && ns != "." && !IsDnsLabel(ns)) {
        r.Error(egress[i]["hosts"], Reader::Join(f, "hosts"), StrCat("\"", ns, "\" must be *, . or a namespace"));
        continue;
      }
      if (std::string problem = HostProblem(host.substr(host.find('/') + 1), true); !problem.empty()) {
        r.Error(egress[i]["hosts"], Reader::Join(f, "hosts"), StrCat("host of \"", host, "\": ", problem));
        continue;
      }
      sc.egress_hosts.push_back(host);
    }
  }
  return sc;
}

// A Gateway server's hosts as Istio validates them: "namespace/host" or "host" ("*/host"),
// the namespace "*", "." or a DNS label, the host a DNS name or wildcard.
std::vector<std::string> ReadServerHosts(Reader& r, const YAML::Node& server, const std::string& f) {
  std::vector<std::string> out;
  const std::vector<std::string> hosts = r.Strings(server, "hosts", f, true);  // required: at least one
  for (size_t i = 0; i < hosts.size(); ++i) {
    const std::string hf = Reader::Index(Reader::Join(f, "hosts"), i);
    const size_t slash = hosts[i].find('/');
    const std::string ns = slash == std::string::npos ? "*" : hosts[i].substr(0, slash);
    const std::string host = slash == std::string::npos ? hosts[i] : hosts[i].substr(slash + 1);
    if (ns != "*" && ns != "." && !IsDnsLabel(ns)) {
      r.Error(server["hosts"][i], hf,
              StrCat("the namespace of \"", hosts[i].substr(0, 64), "\" must be *, . or a namespace"));
    } else if (std::string problem = HostProblem(host, true); !problem.empty()) {
      r.Error(server["hosts"][i], hf, StrCat("host \"", host.substr(0, 64), "\": ", problem));
    } else {
      out.push_back(StrCat(ns, "/", host));
    }
  }
  return out;
}

// The checks of client certificates a MUTUAL or OPTIONAL_MUTUAL server's tls adds to its CA:
// subjectAltNames, verifyCertificateSpki, verifyCertificateHash (each in the form Envoy accepts:
// it refuses the listener for another) and insecureSkipVerify.
void ReadClientChecks(Reader& r, const YAML::Node& tls, const std::string& tf, Gateway::Server& server) {
  for (std::string& name : r.Strings(tls, "subjectAltNames", tf, false)) {
    if (name.empty()) {
      r.Error(tls["subjectAltNames"], Reader::Join(tf, "subjectAltNames"), "must not hold an empty name");
      continue;
    }
    server.client_subject_alt_names.push_back(std::move(name));
  }
  const auto base64 = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/'; };
  for (std::string& spki : r.Strings(tls, "verifyCertificateSpki", tf, false)) {
    // The base64 of a SHA-256: 43 characters and one "=", the last character's two low bits zero
    // (Envoy's decoder refuses other padding bits).
    if (spki.size() != 44 || spki.back() != '=' || !std::all_of(spki.begin(), spki.end() - 1, base64) ||
        std::string_view("AEIMQUYcgkosw048").find(spki[42]) == std::string_view::npos) {
      r.Error(tls["verifyCertificateSpki"], Reader::Join(tf, "verifyCertificateSpki"),
              StrCat("\"", spki.substr(0, 64),
                     "\" is not the base64 of a SHA-256 (44 characters ending in =), which Envoy requires"));
      continue;
    }
    server.client_spki.push_back(std::move(spki));
  }
  for (std::string& hash : r.Strings(tls, "verifyCertificateHash", tf, false)) {
    // 64 hex digits, or 32 pairs of them joined by colons.
    const bool colons = hash.size() == 95;
    bool ok = hash.size() == 64 || colons;
    for (size_t i = 0; ok && i < hash.size(); ++i) {
      ok = colons && i % 3 == 2 ? hash[i] == ':' : std::isxdigit(static_cast<unsigned char>(hash[i])) != 0;
    }
    if (!ok) {
      r.Error(tls["verifyCertificateHash"], Reader::Join(tf, "verifyCertificateHash"),
              StrCat("\"", hash.substr(0, 100),
                     "\" is not the hex of a SHA-256 (64 digits, or 32 pairs joined by colons), which Envoy requires"));
      continue;
    }
    server.client_hashes.push_back(std::move(hash));
  }
  server.accept_untrusted_clients = r.Bool(tls, "insecureSkipVerify", tf).value_or(false);
}

// Certificates one Gateway server may hold (credentialNames, tlsCertificates): a bound on hostile
// config (Istio's documentation speaks of two, RSA and ECDSA).
constexpr size_t kMaxServerCertificates = 8;
constexpr const char* kCaBesideFiles =
    "has no effect beside certificate files: clients are checked against caCertificates, as istiod checks them";

// A Gateway server's tls, as Istio validates and istiod reads it: on an HTTP, HTTP2 or GRPC
// server only httpsRedirect (other fields Istio accepts there are ignored); on HTTPS and TLS
// servers TLS termination (SIMPLE, MUTUAL or OPTIONAL_MUTUAL) with a credentialName Secret, as
// istiod serves it over SDS, or with certificate files on the gateway; or PASSTHROUGH (the mode
// when none is given); on other servers none. Sets the
// server's routes (Gateway::Server::Routes) from its protocol and mode: an HTTPS server that
// terminates serves http routes, another that terminates tcp routes, a passthrough one tls routes.
void ReadServerTls(Reader& r, const YAML::Node& s, const std::string& f, Gateway::Server& server) {
  const std::string& protocol = server.protocol;
  // Istio's IsHTTP (GRPC-WEB, refused as a protocol, counts too) and IsTLS.
  const bool http = protocol == "HTTP" || protocol == "HTTP2" || protocol == "GRPC" || protocol == "GRPC-WEB";
  const bool tls_protocol = protocol == "HTTPS" || protocol == "TLS";
  server.routes = http || protocol == "HTTPS" ? Gateway::Server::Routes::kHttp : Gateway::Server::Routes::kTcp;
  const YAML::Node tls = s["tls"];
  const std::string tf = Reader::Join(f, "tls");
  if (!tls.IsDefined() || tls.IsNull()) {
    // Istio validates this too: an HTTPS or TLS server without TLS settings has nothing to serve with.
    if (tls_protocol) {
      r.Error(s, tf,
              StrCat("is required for ", protocol == "HTTPS" ? "an " : "a ", protocol,
                     " server (mode, and credentialName to terminate)"));
    }
    return;
  }
  if (!r.IsMap(tls, tf)) return;
  // Istio's ServerTLSSettings fields (OnlyKeys below lists them too), in the order said.
  static constexpr const char* kFields[] = {"httpsRedirect",
                                            "mode",
                                            "credentialName",
                                            "serverCertificate",
                                            "privateKey",
                                            "caCertificates",
                                            "caCrl",
                                            "minProtocolVersion",
                                            "maxProtocolVersion",
                                            "cipherSuites",
                                            "credentialNames",
                                            "tlsCertificates",
                                            "subjectAltNames",
                                            "verifyCertificateSpki",
                                            "verifyCertificateHash",
                                            "caCertCredentialName",
                                            "ecdhCurves",
                                            "insecureSkipVerify"};
  r.OnlyKeys(tls, tf,
             {"httpsRedirect", "mode", "credentialName", "serverCertificate", "privateKey", "caCertificates", "caCrl",
              "minProtocolVersion", "maxProtocolVersion", "cipherSuites", "credentialNames", "tlsCertificates",
              "subjectAltNames", "verifyCertificateSpki", "verifyCertificateHash", "caCertCredentialName", "ecdhCurves",
              "insecureSkipVerify"});
  // A field set to "", [] or false is unset, as Istio's proto3 reads it.
  const auto given = [&](const char* key) {
    const YAML::Node node = tls[key];
    const bool boolean = std::string_view(key) == "httpsRedirect" || std::string_view(key) == "insecureSkipVerify";
    return node.IsDefined() && !node.IsNull() &&
           !(node.IsScalar() && (node.Scalar().empty() || (boolean && YamlBool(node) == false))) &&
           !(node.IsSequence() && node.size() == 0);
  };
  // Types and values first, in every mode, as Istio's schema checks them, ignored or not.
  const int errors_before = r.error_count();
  server.https_redirect = r.Bool(tls, "httpsRedirect", tf).value_or(false);
  r.Bool(tls, "insecureSkipVerify", tf);
  const std::optional<std::string> given_mode = r.String(tls, "mode", tf, false);
  const std::string mode = given_mode.value_or("PASSTHROUGH");  // Istio's enum default
  const std::string credential = r.String(tls, "credentialName", tf, false).value_or("");
  for (const char* key : {"serverCertificate", "privateKey", "caCertificates", "caCrl", "caCertCredentialName"}) {
    r.String(tls, key, tf, false);
  }
  static constexpr std::string_view kModes[] = {"PASSTHROUGH",      "SIMPLE",       "MUTUAL",
                                                "AUTO_PASSTHROUGH", "ISTIO_MUTUAL", "OPTIONAL_MUTUAL"};
  if (std::find(std::begin(kModes), std::end(kModes), mode) == std::end(kModes)) {
    r.Error(tls["mode"], Reader::Join(tf, "mode"),
            StrCat("mode \"", mode.substr(0, 32),
                   "\" must be one of PASSTHROUGH, SIMPLE, MUTUAL, AUTO_PASSTHROUGH, ISTIO_MUTUAL, OPTIONAL_MUTUAL"));
  }
  static constexpr std::string_view kVersions[] = {"TLS_AUTO", "TLSV1_0", "TLSV1_1", "TLSV1_2", "TLSV1_3"};
  std::string versions[2];  // min, max; "" for TLS_AUTO or none
  for (int i = 0; i < 2; ++i) {
    const char* key = i == 0 ? "minProtocolVersion" : "maxProtocolVersion";
    std::optional<std::string> version = r.String(tls, key, tf, false);
    if (!version.has_value()) continue;
    if (std::find(std::begin(kVersions), std::end(kVersions), *version) == std::end(kVersions)) {
      r.Error(tls[key], Reader::Join(tf, key), "must be one of TLS_AUTO, TLSV1_0, TLSV1_1, TLSV1_2, TLSV1_3");
      continue;
    }
    versions[i] = *version == "TLS_AUTO" ? "" : *version;
  }
  const std::vector<std::string> suites = r.Strings(tls, "cipherSuites", tf, false);
  for (const char* key :
       {"credentialNames", "subjectAltNames", "verifyCertificateSpki", "verifyCertificateHash", "ecdhCurves"}) {
    r.Strings(tls, key, tf, false);
  }
  if (const YAML::Node certificates = tls["tlsCertificates"]; certificates.IsDefined() && !certificates.IsNull()) {
    if (r.IsSeq(certificates, Reader::Join(tf, "tlsCertificates"))) {
      for (size_t i = 0; i < certificates.size() && i <= kMaxServerCertificates; ++i) {
        r.IsMap(certificates[i], Reader::Index(Reader::Join(tf, "tlsCertificates"), i));
      }
    }
  }
  if (r.error_count() > errors_before) return;
  // Istio validates one source of the server's certificate.
  const int sources = (given("serverCertificate") && given("privateKey") ? 1 : 0) + (credential.empty() ? 0 : 1) +
                      (given("credentialNames") ? 1 : 0) + (given("tlsCertificates") ? 1 : 0);
  if (sources > 1) {
    r.Error(tls, tf,
            "may have only one of credentialName, credentialNames, serverCertificate with privateKey, and "
            "tlsCertificates, as Istio validates (one source of the certificate)");
    return;
  }
  // The Secrets of the certificates: credentialNames, else credentialName (the first also gives
  // the CA, as istiod takes it), each once.
  std::vector<std::string> credentials =
      given("credentialNames") ? r.Strings(tls, "credentialNames", tf, false) : std::vector<std::string>{credential};
  const bool too_many = credentials.size() > kMaxServerCertificates ||
                        (given("tlsCertificates") && tls["tlsCertificates"].size() > kMaxServerCertificates);
  if (too_many) {
    credentials.clear();  // refused below where it matters, not compared name by name
  } else {
    std::vector<std::string> once;
    for (std::string& name : credentials) {
      if (std::find(once.begin(), once.end(), name) == once.end()) once.push_back(std::move(name));
    }
    credentials = std::move(once);
    if (!given("credentialNames") && credentials[0].empty()) credentials.clear();  // credentialName ""
  }
  const bool passthrough = mode == "PASSTHROUGH" || mode == "AUTO_PASSTHROUGH";
  if (passthrough && given("caCrl") && !credential.empty()) {
    r.Error(tls["caCrl"], Reader::Join(tf, "caCrl"),
            "cannot be set with credentialName, as Istio validates (the CRL belongs in the credential)");
    return;
  }
  // What Istio accepts and istiod ignores: kept for analysis to say (cxds_gateway_tls_ignored).
  const auto ignore = [&](std::initializer_list<const char*> keys, const std::string& why) {
    for (const char* key : keys) {
      if (given(key)) server.ignored_tls_fields.emplace_back(key, why);
    }
  };
  const auto ignore_all_but = [&](std::initializer_list<std::string_view> kept, const std::string& why) {
    for (const char* key : kFields) {
      if (std::find(kept.begin(), kept.end(), key) == kept.end() && given(key)) {
        server.ignored_tls_fields.emplace_back(key, why);
      }
    }
  };
  if (http) {
    // A plain HTTP server may only redirect, as Istio validates: its tls may be there for
    // httpsRedirect, in a passthrough mode (the default) and without certificate files.
    if (!passthrough) {
      r.Error(tls["mode"], Reader::Join(tf, "mode"),
              StrCat("cannot be ", mode, " on a server of protocol ", protocol,
                     ", as Istio validates (TLS is terminated on HTTPS and TLS servers; httpsRedirect is what a "
                     "plain-text server may set)"));
      return;
    }
    for (const char* key : {"serverCertificate", "privateKey", "caCertificates"}) {
      if (!given(key)) continue;
      r.Error(tls[key], Reader::Join(tf, key),
              StrCat("cannot be set on a server of protocol ", protocol,
                     ", as Istio validates (TLS is terminated on HTTPS and TLS servers)"));
      return;
    }
    const std::string why = StrCat("has no effect on a plain-text server of protocol ", protocol);
    if (mode == "AUTO_PASSTHROUGH") server.ignored_tls_fields.emplace_back("mode", why);
    // (The certificate files are errors above.)
    ignore_all_but({"httpsRedirect", "mode", "serverCertificate", "privateKey", "caCertificates"}, why);
    return;
  }
  if (!tls_protocol) {
    // Istio validates this too; a protocol that is not Istio's (or that cxds does not serve) is
    // an error of its own already.
    static constexpr std::string_view kOpaque[] = {"TCP", "MONGO", "REDIS", "MYSQL", "UDP"};
    if (std::find(std::begin(kOpaque), std::end(kOpaque), protocol) != std::end(kOpaque)) {
      r.Error(tls, tf,
              StrCat("cannot be set on a server of protocol ", protocol,
                     ", as Istio validates (TLS settings belong to HTTPS and TLS servers)"));
    }
    return;
  }
  if (mode == "PASSTHROUGH") {
    // The client's TLS goes through untouched, routed by its SNI name: nothing to terminate
    // with. Istio warns of certificates here, and istiod ignores them and the rest.
    server.tls_mode = Gateway::Server::TlsMode::kPassthrough;
    server.routes = Gateway::Server::Routes::kTls;
    ignore_all_but({"mode"}, "has no effect with mode PASSTHROUGH, where the gateway does not terminate TLS");
    server.https_redirect = false;
    return;
  }
  if (mode != "SIMPLE" && mode != "MUTUAL" && mode != "OPTIONAL_MUTUAL") {
    r.Error(tls["mode"], Reader::Join(tf, "mode"),
            StrCat("mode ", mode, " is not supported by cxds (SIMPLE, MUTUAL and OPTIONAL_MUTUAL, and PASSTHROUGH",
                   mode == "AUTO_PASSTHROUGH" ? "; it routes to SNI-named clusters that reach only workloads serving "
                                                "Istio mutual TLS, and cxds issues no "
                                                "workload certificates)"
                                              : "; cxds issues no workload certificates)"));
    return;
  }
  // What checks client certificates does nothing on a SIMPLE server, which asks for none; but
  // beside a credentialName istiod still matches subjectAltNames (with no CA to check a
  // certificate against, which cxds does not send).
  static constexpr const char* kClientChecks[] = {"subjectAltNames", "verifyCertificateSpki", "verifyCertificateHash",
                                                  "caCertCredentialName", "insecureSkipVerify"};
  for (const char* key : kClientChecks) {
    if (mode != "SIMPLE" || !given(key)) continue;
    if (!credentials.empty() && std::string_view(key) == "subjectAltNames") {
      r.Error(tls[key], Reader::Join(tf, key),
              "is not supported by cxds with mode SIMPLE (no client certificate is asked for; istiod would check "
              "one for these names without a CA)");
      continue;
    }
    server.ignored_tls_fields.emplace_back(key,
                                           "has no effect with mode SIMPLE, where client certificates are not "
                                           "checked");
  }
  if (r.error_count() > errors_before) return;
  if (mode != "SIMPLE") ReadClientChecks(r, tls, tf, server);
  for (const std::string& curve : r.Strings(tls, "ecdhCurves", tf, false)) {
    // Group names ("X25519", "P-256"); Envoy refuses the listener for one its TLS library does
    // not know, which cxds cannot check beyond the characters.
    if (curve.empty() || curve.size() > 32 || !std::all_of(curve.begin(), curve.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
        })) {
      r.Error(tls["ecdhCurves"], Reader::Join(tf, "ecdhCurves"),
              StrCat("\"", curve.substr(0, 32), "\" is not a curve name (as X25519 or P-256)"));
      continue;
    }
    server.ecdh_curves.push_back(curve);
  }
  if (r.error_count() > errors_before) return;
  // istiod sets require_tls on such a server's virtual hosts, which its connections, TLS
  // already, always meet.
  ignore({"httpsRedirect"}, "has no effect on a server that terminates TLS: its connections are already TLS");
  server.https_redirect = false;
  server.tls_mode = mode == "SIMPLE"   ? Gateway::Server::TlsMode::kSimple
                    : mode == "MUTUAL" ? Gateway::Server::TlsMode::kMutual
                                       : Gateway::Server::TlsMode::kOptionalMutual;
  // A CRL checks client certificates, read from a file as the CA is. Istio refuses it on a
  // SIMPLE server with files (no client certificate is checked); beside a credentialName it
  // accepts it and istiod ignores it, as it ignores the other files there.
  if (given("caCrl") && mode == "SIMPLE" && credentials.empty()) {
    r.Error(tls["caCrl"], Reader::Join(tf, "caCrl"),
            "is not supported with mode SIMPLE, as Istio validates (no client certificate is checked)");
  }
  if (too_many) {
    const char* key = given("credentialNames") ? "credentialNames" : "tlsCertificates";
    r.Error(tls[key], Reader::Join(tf, key),
            StrCat("more than ", kMaxServerCertificates, " certificates on one server are not supported by cxds"));
    return;
  }
  if (credentials.empty() && given("tlsCertificates")) {
    // Files on the gateway, several: each needs both paths; istiod checks clients against the
    // server's caCertificates, not a certificate's own.
    const YAML::Node list = tls["tlsCertificates"];
    const std::string lf = Reader::Join(tf, "tlsCertificates");
    std::vector<std::pair<std::string, std::string>> pairs;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string itf = Reader::Index(lf, i);
      if (!r.IsMap(list[i], itf)) continue;
      r.OnlyKeys(list[i], itf, {"serverCertificate", "privateKey", "caCertificates"});
      std::pair<std::string, std::string> files;
      for (auto [key, out] : {std::pair<const char*, std::string*>{"serverCertificate", &files.first},
                              std::pair<const char*, std::string*>{"privateKey", &files.second}}) {
        const YAML::Node node = list[i][key];
        if (!node.IsDefined() || node.IsNull() || (node.IsScalar() && node.Scalar().empty())) {
          r.Error(list[i], Reader::Join(itf, key), StrCat("is required for mode ", mode, ", as Istio validates"));
        } else {
          *out = ReadCertificatePath(r, list[i], key, itf, "gateway").value_or("");
        }
      }
      if (list[i]["caCertificates"].IsDefined() && r.String(list[i], "caCertificates", itf, false).value_or("") != "") {
        server.ignored_tls_fields.emplace_back(
            StrCat("tlsCertificates[", i, "].caCertificates"),
            "has no effect: clients are checked against the server's caCertificates, as istiod checks them");
      }
      pairs.push_back(std::move(files));
    }
    if (r.error_count() > errors_before) return;
    std::vector<std::pair<std::string, std::string>> once;  // each pair once
    for (auto& pair : pairs) {
      if (std::find(once.begin(), once.end(), pair) == once.end()) once.push_back(std::move(pair));
    }
    pairs = std::move(once);
    ignore({"serverCertificate", "privateKey"}, "has no effect beside tlsCertificates, which hold the certificates");
    server.server_certificate = pairs.front().first;
    server.private_key = pairs.front().second;
    server.more_certificates.assign(pairs.begin() + 1, pairs.end());
    if (server.ChecksClients()) {
      if (!given("caCertificates")) {
        r.Error(
            tls, Reader::Join(tf, "caCertificates"),
            StrCat("is required for mode ", mode, " with tlsCertificates, as Istio validates (a file on the gateway)"));
        return;
      }
      server.ca_certificates = ReadCertificatePath(r, tls, "caCertificates", tf, "gateway").value_or("");
      server.ca_crl = ReadCertificatePath(r, tls, "caCrl", tf, "gateway").value_or("");
      ignore({"caCertCredentialName"}, kCaBesideFiles);
    } else {
      ignore({"caCertificates"}, "has no effect with mode SIMPLE, where client certificates are not checked");
    }
  } else if (credentials.empty()) {
    // Istio's other way: files on the gateway's own disk. istiod hands the paths to its node
    // agent; Envoy reads them itself here.
    const bool checks_clients = server.tls_mode != Gateway::Server::TlsMode::kSimple;
    const auto path = [&](const char* key, bool required, std::string& out) {
      if (required && !given(key)) {
        r.Error(tls, Reader::Join(tf, key),
                StrCat("is required for mode ", mode,
                       " without credentialName (a file on the gateway; or name a Secret of the gateway's namespace "
                       "in credentialName)"));
        return;
      }
      out = ReadCertificatePath(r, tls, key, tf, "gateway").value_or("");
    };
    if (!given("serverCertificate") && !given("privateKey")) {
      r.Error(tls, Reader::Join(tf, "credentialName"),
              StrCat("is required for mode ", mode,
                     ": a Secret of the gateway's namespace with the certificate (or serverCertificate and "
                     "privateKey, files on the gateway)"));
      return;
    }
    path("serverCertificate", true, server.server_certificate);
    path("privateKey", true, server.private_key);
    if (checks_clients) {
      path("caCertificates", true, server.ca_certificates);
      path("caCrl", false, server.ca_crl);
      ignore({"caCertCredentialName"}, kCaBesideFiles);
    } else {
      ignore({"caCertificates"}, "has no effect with mode SIMPLE, where client certificates are not checked");
    }
  } else {
    // caCertCredentialName: the Secret whose CA checks clients, read as istiod reads a CA
    // name (NAME-cacert, else NAME); a ConfigMap, which istiod also reads, is not.
    std::string ca_credential;
    if (server.ChecksClients() && given("caCertCredentialName")) {
      const std::string name = r.String(tls, "caCertCredentialName", tf, false).value_or("");
      const std::string ckf = Reader::Join(tf, "caCertCredentialName");
      if (name.starts_with("configmap://")) {
        r.Error(tls["caCertCredentialName"], ckf,
                "a ConfigMap is not supported by cxds, which reads no ConfigMaps: name a Secret of the gateway's "
                "namespace holding ca.crt");
        return;
      }
      if (std::string problem = CredentialNameProblem(name); !problem.empty()) {
        r.Error(tls["caCertCredentialName"], ckf, problem);
        return;
      }
      ca_credential = std::string(absl::StripSuffix(name, "-cacert"));
      if (ca_credential.empty()) {  // else the first credential's CA would check clients, unasked
        r.Error(tls["caCertCredentialName"], ckf, "\"-cacert\" alone names no Secret");
        return;
      }
    }
    const char* key = given("credentialNames") ? "credentialNames" : "credentialName";
    for (const std::string& name : credentials) {
      if (name.empty()) {
        r.Error(tls[key], Reader::Join(tf, key), "an empty name is not supported by cxds (it names no Secret)");
        return;
      }
      if (server.ChecksClients() &&
          name == StrCat(ca_credential.empty() ? credentials.front() : ca_credential, "-cacert")) {
        r.Error(tls[key], Reader::Join(tf, key),
                StrCat("\"", name, "\" is the name of the CA that checks clients here (kubernetes://", name,
                       "): as a certificate it is not supported by cxds"));
        return;
      }
      if (std::string problem = CredentialNameProblem(name); !problem.empty()) {
        r.Error(tls[key], Reader::Join(tf, key),
                given("credentialNames") ? StrCat("\"", name.substr(0, 64), "\" ", problem) : problem);
        return;
      }
    }
    server.credential_name = credentials.front();
    server.more_credential_names.assign(credentials.begin() + 1, credentials.end());
    server.credentials_listed = given("credentialNames");
    server.ca_credential_name = ca_credential;
    ignore({"serverCertificate", "privateKey", "caCertificates", "caCrl"},
           given("credentialNames") ? "has no effect beside credentialNames, whose Secrets hold the certificates"
                                    : "has no effect beside credentialName, whose Secret holds the certificates");
  }
  server.min_protocol_version = versions[0];
  server.max_protocol_version = versions[1];
  if (!server.min_protocol_version.empty() && !server.max_protocol_version.empty() &&
      server.min_protocol_version > server.max_protocol_version) {
    r.Error(tls["minProtocolVersion"], Reader::Join(tf, "minProtocolVersion"),
            "is above maxProtocolVersion: no version would be left");
  }
  for (const std::string& suite : suites) {
    // OpenSSL/BoringSSL cipher names ("ECDHE-RSA-AES128-GCM-SHA256"); Envoy refuses the listener
    // for one it does not know, which cxds cannot check here beyond the characters.
    if (suite.empty() || suite.size() > 64 || !std::all_of(suite.begin(), suite.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '[' || c == ']' ||
                 c == '|';
        })) {
      r.Error(tls["cipherSuites"], Reader::Join(tf, "cipherSuites"),
              StrCat("\"", suite.substr(0, 64), "\" is not a cipher suite name"));
      continue;
    }
    server.cipher_suites.push_back(suite);
  }
}

MeshObject ReadGateway(Reader& r, const YAML::Node& doc, ObjectMeta meta) {
  Gateway gw;
  gw.meta = std::move(meta);
  const YAML::Node spec = doc["spec"];
  if (!r.IsMap(spec, "spec")) return gw;
  r.OnlyKeys(spec, "spec", {"selector", "servers"});
  gw.selector = r.Labels(spec, "selector", "spec");
  const YAML::Node servers = spec["servers"];
  if (!r.IsSeq(servers, "spec.servers")) return gw;
  if (servers.size() == 0) r.Error(servers, "spec.servers", "must list at least one server");
  std::set<std::string> server_names, port_names;
  for (size_t i = 0; i < servers.size(); ++i) {
    const std::string f = Reader::Index("spec.servers", i);
    const YAML::Node s = servers[i];
    if (!r.IsMap(s, f)) continue;
    r.OnlyKeys(s, f, {"port", "hosts", "tls", "name"}, {"bind", "defaultEndpoint"});
    Gateway::Server server;
    server.name = r.String(s, "name", f, false).value_or("");
    if (!server.name.empty() && !server_names.insert(server.name).second) {
      r.Error(s["name"], Reader::Join(f, "name"),
              StrCat("server name \"", server.name.substr(0, 64), "\" is used twice"));
    }
    const std::string pf = Reader::Join(f, "port");
    if (r.IsMap(s["port"], pf)) {
      const YAML::Node port = s["port"];
      r.OnlyKeys(port, pf, {"number", "protocol", "name", "targetPort"});
      if (port["targetPort"].IsDefined()) {
        r.Error(port["targetPort"], Reader::Join(pf, "targetPort"),
                "has no effect at a Gateway (Istio refuses it too)");
      }
      server.port = r.Uint(port, "number", pf, true, 1, 65535).value_or(0);
      server.port_name = r.String(port, "name", pf, true).value_or("");
      if (!server.port_name.empty() && !port_names.insert(server.port_name).second) {
        r.Error(port["name"], Reader::Join(pf, "name"),
                StrCat("port name \"", server.port_name.substr(0, 64), "\" is used by another server"));
      }
      const std::string protocol = absl::AsciiStrToUpper(r.String(port, "protocol", pf, true).value_or(""));
      server.protocol = protocol;
      static constexpr std::string_view kIstioProtocols[] = {"HTTP",  "HTTPS", "GRPC", "GRPC-WEB", "HTTP2", "MONGO",
                                                             "REDIS", "MYSQL", "TCP",  "TLS",      "UDP"};
      if (protocol.empty()) {
        // reported as required
      } else if (std::find(std::begin(kIstioProtocols), std::end(kIstioProtocols), protocol) ==
                 std::end(kIstioProtocols)) {
        r.Error(port["protocol"], Reader::Join(pf, "protocol"),
                StrCat("protocol \"", protocol.substr(0, 32),
                       "\" must be one of HTTP, HTTPS, GRPC, GRPC-WEB, HTTP2, MONGO, REDIS, MYSQL, TCP, TLS, UDP"));
      } else if (protocol == "UDP" || protocol == "GRPC-WEB") {
        r.Error(port["protocol"], Reader::Join(pf, "protocol"),
                StrCat("protocol ", protocol,
                       " at a Gateway is not supported by cxds (HTTP, HTTP2, GRPC, HTTPS, TCP, MONGO, REDIS, MYSQL "
                       "and TLS servers are)"));
      }
    }
    server.hosts = ReadServerHosts(r, s, f);
    ReadServerTls(r, s, f, server);
    gw.servers.push_back(std::move(server));
  }
  return gw;
}

struct KindInfo {
  const char* kind;
  std::vector<std::string> api_versions;
  std::function<MeshObject(Reader&, const YAML::Node&, ObjectMeta)> read;
  std::vector<const char*> top_level;
};

const std::vector<KindInfo>& Kinds() {
  static const std::vector<std::string> kIstio = {"networking.istio.io/v1", "networking.istio.io/v1beta1",
                                                  "networking.istio.io/v1alpha3"};
  static const std::vector<KindInfo> kinds = {
      {"Service", {"v1"}, ReadService, {"apiVersion", "kind", "metadata", "spec", "status"}},
      {"EndpointSlice",
       {"discovery.k8s.io/v1"},
       ReadEndpointSlice,
       {"apiVersion", "kind", "metadata", "addressType", "ports", "endpoints"}},
      // status is written by the API server and istiod: accepted, not read (ServerSetFree).
      {"ServiceEntry", kIstio, ReadServiceEntry, {"apiVersion", "kind", "metadata", "spec", "status"}},
      {"WorkloadEntry", kIstio, ReadWorkloadEntry, {"apiVersion", "kind", "metadata", "spec", "status"}},
      {"VirtualService", kIstio, ReadVirtualService, {"apiVersion", "kind", "metadata", "spec", "status"}},
      {"DestinationRule", kIstio, ReadDestinationRule, {"apiVersion", "kind", "metadata", "spec", "status"}},
      {"Sidecar", kIstio, ReadSidecar, {"apiVersion", "kind", "metadata", "spec", "status"}},
      {"Pod", {"v1"}, ReadPod, {"apiVersion", "kind", "metadata", "spec", "status"}},
      {"Gateway", kIstio, ReadGateway, {"apiVersion", "kind", "metadata", "spec", "status"}},
      // Only a Secret of TLS material (CarriesTlsMaterial) is read; any other is skipped.
      {"Secret", {"v1"}, ReadSecret, {"apiVersion", "kind", "metadata", "type", "data", "stringData", "immutable"}},
      {"Endpoints", {"v1"}, ReadEndpoints, {"apiVersion", "kind", "metadata", "subsets"}},
  };
  return kinds;
}

// The kind cxds reads by that name, or null.
const KindInfo* FindKind(std::string_view kind) {
  for (const KindInfo& k : Kinds()) {
    if (k.kind == kind) return &k;
  }
  return nullptr;
}

// The apiVersion error of a document of `kind` (shown as `shown`, a list's own kind for a list of
// it) under `api_version`, which `info` does not read. A group istiod never reads may hold another
// product's kind of the same name (Knative's Service, Gloo's Gateway) rather than a misspelling.
std::string ApiVersionError(const KindInfo& info, std::string_view shown, const std::string& api_version) {
  return StrCat("must be ", info.api_versions.front(), " for ", shown, ", got \"", api_version.substr(0, 64), "\"",
                IsApiGroupWithoutXdsMeaning(api_version)
                    ? StrCat(" (if this is another API group's ", info.kind,
                             ", cxds does not read it: keep it out of the config it reads)")
                    : "");
}

// An upper-bound-ish count of the nodes a YAML text can produce, from its lines and flow
// separators; cheap, and taken before yaml-cpp allocates anything.
size_t EstimateNodes(std::string_view content) {
  size_t n = 1;
  for (char c : content) n += (c == '\n' || c == ',' || c == '[' || c == '{' || c == ':');
  return n;
}

// Walks `node` with aliases expanded, within a budget of visits, of scalar bytes and a depth:
// false if any runs out (a billion-laughs file, a cyclic alias, or a few aliases of one huge
// scalar), so later passes, which expand aliases (the canonical text does), never meet such a tree.
bool WithinBudget(const YAML::Node& node, int depth, size_t& budget, size_t& byte_budget, const ParseLimits& limits) {
  if (budget == 0 || depth > limits.max_depth) return false;
  budget--;
  if (node.IsMap()) {
    for (const auto& entry : node) {
      if (!WithinBudget(entry.first, depth + 1, budget, byte_budget, limits) ||
          !WithinBudget(entry.second, depth + 1, budget, byte_budget, limits)) {
        return false;
      }
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      if (!WithinBudget(item, depth + 1, budget, byte_budget, limits)) return false;
    }
  } else if (node.IsScalar()) {
    if (node.Scalar().size() > byte_budget) return false;
    byte_budget -= node.Scalar().size();
  }
  return true;
}

// Counts the documents the parser delimits and where the last one starts, building nothing.
class DocumentCounter final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    documents++;
    line = mark.line;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  size_t documents = 0;
  int line = 0;
};

// yaml-cpp 0.7's LoadAll never returns, adding a null document per turn until memory runs out,
// when a document starts with a token its parser does not consume: a file that starts with ","
// hangs the loader (yaml-cpp issue 1040; fixed upstream after 0.8, found here by
// yaml_loader_fuzzer). A stream has at most one document more than it has "---" and "..."
// markers at line starts, so a dry run of the same parser that delimits more documents than
// that is stuck: the file is refused before LoadAll is called. Returns the 0-based line where
// the parser stopped progressing, or -1 if it finished.
int StuckParserLine(const std::string& text) {
  size_t max_documents = 1;
  for (size_t at = 0;;) {
    const std::string_view line = std::string_view(text).substr(at, 3);
    if (line == "---" || line == "...") max_documents++;
    const size_t newline = text.find('\n', at);
    if (newline == std::string::npos) break;
    at = newline + 1;
  }
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentCounter counter;
  while (parser.HandleNextDocument(counter)) {
    if (counter.documents > max_documents) return counter.line;
  }
  return -1;
}

std::string ScalarAt(const YAML::Node& map, const char* key) {
  const YAML::Node value = map.IsMap() ? map[key] : YAML::Node();
  return value.IsDefined() && value.IsScalar() ? value.Scalar().substr(0, 253) : "";
}

// Emits `node` as yaml-cpp would, except that a quoted scalar which would read back as a boolean,
// a number or null without its quotes keeps them: yaml-cpp's emitter drops the quotes of "yes"
// and "80", so the stored text (what `cxds apply` writes to etcd) would no longer load. Aliases
// are emitted expanded; the tree was already checked to expand within the parse limits.
void EmitCanonical(YAML::Emitter& out, const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      if (node.Style() == YAML::EmitterStyle::Flow) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& entry : node) {
        out << YAML::Key;
        EmitCanonical(out, entry.first);
        out << YAML::Value;
        EmitCanonical(out, entry.second);
      }
      out << YAML::EndMap;
      return;
    case YAML::NodeType::Sequence:
      if (node.Style() == YAML::EmitterStyle::Flow) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& item : node) EmitCanonical(out, item);
      out << YAML::EndSeq;
      return;
    case YAML::NodeType::Scalar: {
      const std::string& tag = node.Tag();
      if (!tag.empty() && tag != "?" && tag != "!") out << YAML::VerbatimTag(tag);
      const std::string& text = node.Scalar();
      const bool ambiguous =
          text.empty() || text == "~" || absl::EqualsIgnoreCase(text, "null") || !PlainScalarKind(text).empty();
      if (tag == "!" && ambiguous) out << YAML::DoubleQuoted;
      out << text;
      return;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      out << YAML::Null;
      return;
  }
}

// `doc` without what the API server rewrites on every read (status, uid, resourceVersion, ...):
// the same object exported twice has the same canonical text. A copy: `doc` is left whole.
// An item of a KIND-List gets the `listed_kind` and `listed_api_version` it takes from its list
// (DocumentToRead), so that its text stands alone (`cxds apply` stores it as an object of its own)
// and a Pod's IPs are kept.
YAML::Node ServerSetFree(const YAML::Node& doc, const std::string& listed_kind = "",
                         const std::string& listed_api_version = "") {
  YAML::Node copy = YAML::Clone(doc);
  if (!listed_kind.empty()) copy["kind"] = listed_kind;
  if (!listed_api_version.empty()) copy["apiVersion"] = listed_api_version;
  // A Pod's IPs are in its status and are what its endpoints are matched by: kept.
  if (YAML::Node status = copy["status"]; status.IsMap() && ScalarAt(copy, "kind") == "Pod") {
    YAML::Node ips;
    for (const char* key : {"podIP", "podIPs"}) {
      if (status[key].IsDefined()) ips[key] = status[key];
    }
    copy["status"] = ips;
    if (ips.size() == 0) copy.remove("status");
  } else {
    copy.remove("status");
  }
  if (YAML::Node metadata = copy["metadata"]; metadata.IsMap()) {
    for (const char* key : kVolatileMetadata) metadata.remove(key);
  }
  return copy;
}

// One step of the path down to a node: a map key (viewing the document's own text) or a list index.
struct TagPathStep {
  std::string_view key;
  size_t index = 0;
  bool is_index = false;
};

// Refuses a scalar whose explicit YAML tag (!!bool, !!int, !!float) does not fit its text, such
// as `!!int abc`: go-yaml v2 fails to decode the document ("cannot decode !!str `abc` as a
// !!int"), so Kubernetes and Istio refuse it, and cxds would otherwise read the text as if
// untagged. `!!float` also takes an integer within int64, as there (go-yaml converts only a
// signed integer). `!!binary` (base64, which they decode) and a `!!timestamp` that fits (which
// they decode as a time and write back as RFC 3339 text) are not supported by cxds. Keys are
// checked too. As go-yaml stops at the first failure, so does this: one error per document,
// and `path` (the steps down to `node`, nothing copied) is made a field name only then. The
// walk is bounded: WithinBudget ran first. Returns whether it reported.
bool CheckScalarTags(Reader& r, const YAML::Node& node, std::vector<TagPathStep>& path) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      for (const auto& entry : node) {
        if (CheckScalarTags(r, entry.first, path)) return true;
        path.push_back({.key = entry.first.IsScalar() ? std::string_view(entry.first.Scalar()).substr(0, 64) : "?"});
        const bool reported = CheckScalarTags(r, entry.second, path);
        path.pop_back();
        if (reported) return true;
      }
      return false;
    case YAML::NodeType::Sequence: {
      size_t index = 0;
      for (const auto& item : node) {
        path.push_back({.index = index++, .is_index = true});
        const bool reported = CheckScalarTags(r, item, path);
        path.pop_back();
        if (reported) return true;
      }
      return false;
    }
    case YAML::NodeType::Scalar: {
      static constexpr std::string_view kCoreTag = "tag:yaml.org,2002:";
      const std::string& tag = node.Tag();
      if (!tag.starts_with(kCoreTag)) return false;
      const std::string_view want = std::string_view(tag).substr(kCoreTag.size());
      if (want != "binary" && want != "bool" && want != "int" && want != "float" && want != "timestamp") return false;
      const std::string& text = node.Scalar();
      const std::string_view got = want == "binary"                               ? ""
                                   : want == "timestamp" && IsYamlTimestamp(text) ? "timestamp"
                                                                                  : ResolvedYamlType(text);
      if ((got == want && want != "timestamp") ||
          (want == "float" && got == "int" && YamlInteger(text, /*plain=*/true).has_value())) {
        return false;
      }
      std::string field;
      for (const TagPathStep& step : path) {
        field = step.is_index ? Reader::Index(field, step.index) : Reader::Join(field, std::string(step.key));
      }
      if (want == "binary") {
        r.Error(node, field,
                "a !!binary (base64) scalar is not supported by cxds: write the decoded text, quoted, without the tag");
        return true;
      }
      if (got == "timestamp") {
        r.Error(node, field,
                "a !!timestamp scalar is not supported by cxds (Kubernetes and Istio decode it as a time and write it "
                "back as RFC 3339 text): write that text, quoted, without the tag");
        return true;
      }
      r.Error(node, field,
              StrCat("is tagged !!", want, " but ",
                     text.size() <= 64 ? StrCat("\"", text, "\"") : StrCat("its value (", text.size(), " characters)"),
                     " reads as !!", got, want == "float" ? " past int64 (go-yaml converts only a signed integer)" : "",
                     ": Kubernetes and Istio cannot decode it; remove the tag or fix the value"));
      return true;
    }
    default:
      return false;
  }
}

// Whether `kind` is one of the kinds a list of that kind ("ServiceList") may hold: one cxds
// reads or skips.
bool IsListedKind(std::string_view kind) { return IsKindWithoutXdsMeaning(kind) || FindKind(kind) != nullptr; }

// The Kubernetes Gateway API (its Gateway shares a kind name with Istio's): valid input cxds
// does not read, refused as a whole, as an unknown kind is.
bool IsGatewayApiVersion(const std::string& api_version) {
  return api_version.starts_with("gateway.networking.k8s.io/") ||
         api_version.starts_with("gateway.networking.x-k8s.io/");
}
std::string GatewayApiError(const std::string& api_version, const std::string& kind) {
  return StrCat("the Kubernetes Gateway API (", api_version.substr(0, 64), ", kind ", kind.substr(0, 64),
                ") is not supported by cxds: write Istio's Gateway and VirtualService (networking.istio.io)");
}

// A document to read: a node as written, and for an item of a KIND-List without its own kind
// the kind (and apiVersion) it takes from the list, read as if written in it.
struct DocumentToRead {
  YAML::Node node;
  std::string listed_kind;
  std::string listed_api_version;
};

// The documents of `docs` with every list replaced by its items, in order, so that a dump is read
// as the objects it holds: `kubectl get -o yaml` prints a v1 List whose items carry their own
// kind and apiVersion; the API server prints a KIND-List (a ServiceList) whose items omit them.
// An item without them takes the list's kind, and, for a kind cxds reads, its apiVersion, which
// must then be one the kind is read under (a list of another group's kind of that name is one
// error on the list, not one per item; the Gateway API's GatewayList is refused as not
// supported, as its Gateways are). Nothing is written
// into the items (one may be an alias of a node another object holds): what an item takes from
// its list travels beside it (DocumentToRead). Each item is read, and its errors placed, where it
// is written.
// A list with a stray field, or an item that is no map, refuses the whole list: the file's last
// good state keeps serving. Lists do not nest in Kubernetes: a list among the items is an error.
std::vector<DocumentToRead> ExpandLists(const std::string& path, const std::vector<YAML::Node>& docs, ParsedFile& out) {
  std::vector<DocumentToRead> expanded;
  expanded.reserve(docs.size());
  const auto list_of = [](const std::string& kind) {
    return kind.size() > 4 && kind.ends_with("List") && IsListedKind(kind.substr(0, kind.size() - 4))
               ? kind.substr(0, kind.size() - 4)
               : std::string();
  };
  for (const YAML::Node& doc : docs) {
    const std::string kind = ScalarAt(doc, "kind");
    const std::string item_kind = list_of(kind);
    if (kind != "List" && item_kind.empty()) {
      expanded.push_back({doc, "", ""});
      continue;
    }
    Reader r(path, out.errors);
    r.set_document_line(doc.Mark().line + 1);
    r.set_object(kind);
    const std::string api_version = ScalarAt(doc, "apiVersion");
    const YAML::Node api_node = doc["apiVersion"].IsDefined() ? doc["apiVersion"] : doc;
    const KindInfo* read = FindKind(item_kind);
    const int before = r.error_count();
    if (kind == "List" && api_version != "v1") {
      r.Error(api_node, "apiVersion", StrCat("must be v1 for List, got \"", api_version.substr(0, 64), "\""));
    } else if (IsGatewayApiVersion(api_version)) {
      r.Error(api_node, "apiVersion", GatewayApiError(api_version, kind));
    } else if (read != nullptr && std::find(read->api_versions.begin(), read->api_versions.end(), api_version) ==
                                      read->api_versions.end()) {
      r.Error(api_node, "apiVersion", ApiVersionError(*read, kind, api_version));
    }
    r.OnlyKeys(doc, "", {"apiVersion", "kind", "metadata", "items"});
    const YAML::Node items = doc["items"];
    if (items.IsDefined() && !items.IsNull()) r.IsSeq(items, "items");
    const size_t count = items.IsDefined() && items.IsSequence() ? items.size() : 0;
    for (size_t i = 0; i < count; ++i) {
      if (!items[i].IsMap()) {
        r.Error(items[i], Reader::Index("items", i),
                kind == "List" ? "must be a map with apiVersion, kind, metadata"
                               : StrCat("must be a map (a ", item_kind, ")"));
      }
    }
    if (r.error_count() > before) {
      out.unidentified_failure = true;
      continue;
    }
    for (size_t i = 0; i < count; ++i) {
      const YAML::Node written = items[i];
      const std::string own_kind = ScalarAt(written, "kind");
      if (own_kind == "List" || !list_of(own_kind).empty()) {
        r.Error(written["kind"], Reader::Join(Reader::Index("items", i), "kind"),
                "a list inside a list is not read (Kubernetes lists do not nest)");
        out.unidentified_failure = true;
        continue;
      }
      const bool takes_kind = !item_kind.empty() && !written["kind"].IsDefined();
      expanded.push_back({written, takes_kind ? item_kind : "",
                          takes_kind && read != nullptr && !written["apiVersion"].IsDefined() ? api_version : ""});
    }
  }
  return expanded;
}

// Reads one document (a list's item, or one written alone) into `out`.
void ReadDocument(const std::string& path, const DocumentToRead& document, ParsedFile& out) {
  const YAML::Node& doc = document.node;
  if (doc.IsNull()) return;  // an empty document ("---" at the end)
  Reader r(path, out.errors);
  r.set_document_line(doc.Mark().line + 1);
  if (!doc.IsMap()) {
    r.Error(doc, "", "a document must be a map with apiVersion, kind, metadata");
    out.unidentified_failure = true;
    return;
  }
  const std::string kind = !document.listed_kind.empty() ? document.listed_kind : ScalarAt(doc, "kind");
  const std::string api_version =
      !document.listed_api_version.empty() ? document.listed_api_version : ScalarAt(doc, "apiVersion");
  const KindInfo* info = FindKind(kind);
  if ((IsKindWithoutXdsMeaning(kind) && !(kind == "Secret" && CarriesTlsMaterial(doc))) ||
      (info == nullptr && !kind.empty() && IsApiGroupWithoutXdsMeaning(api_version))) {
    const YAML::Node metadata = doc["metadata"];
    const std::string ns = ScalarAt(metadata, "namespace");
    // The kind's line (a list item given its list's kind has none of its own: the item's).
    const int kind_line = doc["kind"].IsDefined() ? doc["kind"].Mark().line : doc.Mark().line;
    out.skipped.push_back(
        SkippedDocument{kind, StrCat(ns.empty() ? "" : ns + "/", ScalarAt(metadata, "name")), kind_line + 1});
    return;
  }
  if (IsGatewayApiVersion(api_version)) {
    r.Error(doc["apiVersion"], "apiVersion", GatewayApiError(api_version, kind));
    out.unidentified_failure = true;
    return;
  }
  if (info == nullptr) {
    r.Error(doc["kind"].IsDefined() ? doc["kind"] : doc, "kind",
            kind.empty() ? "is required"
                         : StrCat("kind \"", kind.substr(0, 64),
                                  "\" is not supported by cxds (supported: Service, EndpointSlice, "
                                  "Endpoints, Pod, ServiceEntry, WorkloadEntry, VirtualService, DestinationRule, "
                                  "Sidecar, Gateway, and Secrets of TLS material)"));
    out.unidentified_failure = true;
    return;
  }
  const int before = r.error_count();
  ObjectMeta meta = ReadMeta(r, doc);
  r.set_object(StrCat(kind, " ", meta.namespace_name, "/", meta.name));
  if (std::find(info->api_versions.begin(), info->api_versions.end(), api_version) == info->api_versions.end()) {
    r.Error(doc["apiVersion"].IsDefined() ? doc["apiVersion"] : doc, "apiVersion",
            ApiVersionError(*info, kind, api_version));
  }
  for (const auto& entry : doc) {
    const std::string key = entry.first.Scalar();
    if (std::find_if(info->top_level.begin(), info->top_level.end(), [&](const char* k) { return key == k; }) ==
        info->top_level.end()) {
      r.Error(entry.first, key, "unknown field");
    }
  }
  std::vector<TagPathStep> tag_path;
  // A document go-yaml cannot decode is not read further (its fields would only add errors).
  MeshObject object = CheckScalarTags(r, doc, tag_path) ? MeshObject{} : info->read(r, doc, meta);
  if (r.error_count() > before) {
    if (meta.name.empty()) {
      out.unidentified_failure = true;
    } else {
      out.failed.push_back({kind, meta.namespace_name, meta.name});
    }
    return;
  }
  YAML::Emitter canonical;
  EmitCanonical(canonical, ServerSetFree(doc, document.listed_kind, document.listed_api_version));
  std::string text = canonical.c_str();
  std::string hash = ContentHash(text);
  out.documents.push_back(
      ConfigDocument{std::move(object), {path, doc.Mark().line + 1}, std::move(hash), std::move(text)});
}

void ParseDocuments(const std::string& path, const std::vector<YAML::Node>& docs, ParsedFile& out) {
  // A document at a time, a list with its items, so that errors come in the order written.
  for (const YAML::Node& written : docs) {
    for (const DocumentToRead& document : ExpandLists(path, {written}, out)) ReadDocument(path, document, out);
  }
}

}  // namespace

ParsedFile ParseConfigFile(const std::string& path, std::string_view content, const ParseLimits& limits) {
  ParsedFile out;
  // The whole file is refused for any of these; nothing in it changes what is served.
  const auto refuse = [&](int line, std::string message) {
    out.documents.clear();
    out.failed.clear();
    out.errors.push_back(ConfigError{path, line, "", "", std::move(message)});
    out.unidentified_failure = true;
    return out;
  };
  if (content.size() > limits.max_file_bytes) {
    return refuse(0, StrCat("the file has ", content.size(), " bytes; the limit is ", limits.max_file_bytes,
                            " (--max-config-file-bytes)"));
  }
  if (size_t nodes = EstimateNodes(content); nodes > limits.max_nodes) {
    return refuse(0, StrCat("the file has about ", nodes, " YAML nodes; the limit is ", limits.max_nodes));
  }
  try {
    const std::string text(content);
    if (const int line = StuckParserLine(text); line >= 0) {
      return refuse(line + 1,
                    "the YAML parser cannot read past this point (a document starts with a token it does "
                    "not accept, such as ',')");
    }
    std::vector<YAML::Node> docs = YAML::LoadAll(text);
    size_t budget = limits.max_expanded_nodes;
    size_t byte_budget = limits.max_file_bytes;  // what the file could hold without aliases
    for (const YAML::Node& doc : docs) {
      if (!WithinBudget(doc, 0, budget, byte_budget, limits)) {
        return refuse(doc.Mark().line + 1,
                      StrCat("the file expands (through anchors and aliases) to more than ", limits.max_expanded_nodes,
                             " nodes or ", limits.max_file_bytes, " bytes of text, or nests deeper than ",
                             limits.max_depth, " levels"));
      }
    }
    ParseDocuments(path, docs, out);
  } catch (const YAML::Exception& e) {
    // A syntax error (e.g. a half-written file): the whole file is rejected.
    return refuse(e.mark.line >= 0 ? e.mark.line + 1 : 0, e.msg);
  } catch (const std::exception& e) {
    // Not expected (every field is checked before use), but a parser bug must cost one file,
    // never the process.
    return refuse(0, StrCat("cannot read the file: ", e.what()));
  }
  return out;
}

bool IsKindWithoutXdsMeaning(std::string_view kind) {
  static constexpr std::string_view kKinds[] = {"Deployment",
                                                "StatefulSet",
                                                "DaemonSet",
                                                "ReplicaSet",
                                                "ReplicationController",
                                                "Job",
                                                "CronJob",
                                                "ConfigMap",
                                                "Secret",
                                                "ServiceAccount",
                                                "Namespace",
                                                "Role",
                                                "RoleBinding",
                                                "ClusterRole",
                                                "ClusterRoleBinding",
                                                "HorizontalPodAutoscaler",
                                                "PodDisruptionBudget",
                                                "PersistentVolumeClaim",
                                                "PersistentVolume",
                                                "StorageClass",
                                                "LimitRange",
                                                "ResourceQuota",
                                                "PriorityClass",
                                                "NetworkPolicy",
                                                "CustomResourceDefinition",
                                                "Lease",
                                                "Event",
                                                "PodTemplate",
                                                "ControllerRevision",
                                                "MutatingWebhookConfiguration",
                                                "ValidatingWebhookConfiguration",
                                                "ValidatingAdmissionPolicy",
                                                "ValidatingAdmissionPolicyBinding",
                                                "APIService",
                                                "CertificateSigningRequest",
                                                "CSIDriver",
                                                "CSINode",
                                                "VolumeAttachment",
                                                "RuntimeClass",
                                                "IngressClass",
                                                "PodSecurityPolicy"};
  return std::find(std::begin(kKinds), std::end(kKinds), kind) != std::end(kKinds);
}

bool IsApiGroupWithoutXdsMeaning(std::string_view api_version) {
  const size_t slash = api_version.find('/');
  if (slash == std::string_view::npos || slash == 0) return false;
  const std::string_view group = api_version.substr(0, slash);
  // The groups of istiod's config schema (pkg/config/schema/metadata.yaml), and Kubernetes's
  // multi-cluster services, which istiod reads when told to.
  static constexpr std::string_view kReadByIstiod[] = {"networking.istio.io",
                                                       "security.istio.io",
                                                       "telemetry.istio.io",
                                                       "extensions.istio.io",
                                                       "gateway.networking.k8s.io",
                                                       "gateway.networking.x-k8s.io",
                                                       "inference.networking.k8s.io",
                                                       "networking.k8s.io",
                                                       "discovery.k8s.io",
                                                       "multicluster.x-k8s.io",
                                                       "apps",
                                                       "autoscaling",
                                                       "policy",
                                                       "admissionregistration.k8s.io",
                                                       "apiextensions.k8s.io",
                                                       "certificates.k8s.io",
                                                       "coordination.k8s.io"};
  return std::find(std::begin(kReadByIstiod), std::end(kReadByIstiod), group) == std::end(kReadByIstiod);
}

std::string SkippedDocument::ToString() const { return StrCat(kind, " ", name, " (line ", line, ")"); }

}  // namespace cxds
