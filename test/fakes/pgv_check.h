// Checks a message against the protoc-gen-validate rules written in its .proto files (the
// `(validate.rules)` options Envoy's API carries, which Envoy enforces when it loads config): what
// a generated resource must satisfy for Envoy to accept it. Test-only, by reflection.
//
// Checked: message.required; oneof required; string min_len/max_len/min_bytes/max_bytes/prefix/
// in/not_in/well_known HTTP header name and value (ignore_empty honoured); the numeric kinds'
// const/lt/lte/gt/gte/in/not_in (also through wrapper types); enum defined_only/in/not_in;
// repeated min_items/max_items and their items; map min_pairs/max_pairs; duration required/
// lt/lte/gt/gte; any required/in. Any fields whose type is linked in are unpacked and checked
// too. Not checked (reported by Unchecked()): string patterns (RE2), timestamps, bytes rules.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/message.h"
#include "validate/validate.pb.h"

namespace cxds::testing {

class PgvChecker {
 public:
  // Every violation in `message`, as "path: rule (value)"; empty when it satisfies all rules.
  std::vector<std::string> Check(const google::protobuf::Message& message) {
    violations_.clear();
    CheckMessage(message, message.GetDescriptor()->name());
    return violations_;
  }
  // Rules met but not evaluated (patterns): so a test can say what was not covered.
  const std::vector<std::string>& unchecked() const { return unchecked_; }

 private:
  using FD = google::protobuf::FieldDescriptor;

  void Fail(const std::string& path, const std::string& what) { violations_.push_back(absl::StrCat(path, ": ", what)); }

  void CheckMessage(const google::protobuf::Message& m, const std::string& path) {
    const auto* d = m.GetDescriptor();
    if (d->options().GetExtension(validate::disabled)) return;
    if (d->full_name() == "google.protobuf.Any") {
      CheckAny(static_cast<const google::protobuf::Any&>(m), path);
      return;
    }
    const auto* r = m.GetReflection();
    for (int i = 0; i < d->oneof_decl_count(); ++i) {
      const auto* oneof = d->oneof_decl(i);
      if (oneof->options().GetExtension(validate::required) && r->GetOneofFieldDescriptor(m, oneof) == nullptr) {
        Fail(absl::StrCat(path, ".", oneof->name()), "oneof required, none set");
      }
    }
    for (int i = 0; i < d->field_count(); ++i) CheckField(m, d->field(i), absl::StrCat(path, ".", d->field(i)->name()));
  }

  void CheckAny(const google::protobuf::Any& any, const std::string& path) {
    const std::string& url = any.type_url();
    const std::string name = url.substr(url.rfind('/') + 1);
    const auto* type = google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(name);
    if (type == nullptr) return;  // a type this binary does not link: opaque here
    std::unique_ptr<google::protobuf::Message> inner(
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(type)->New());
    if (!any.UnpackTo(inner.get())) {
      Fail(path, absl::StrCat("Any of ", name, " does not parse"));
      return;
    }
    CheckMessage(*inner, absl::StrCat(path, "<", name, ">"));
  }

  void CheckField(const google::protobuf::Message& m, const FD* f, const std::string& path) {
    const auto* r = m.GetReflection();
    const validate::FieldRules& rules = f->options().GetExtension(validate::rules);
    if (f->is_map()) {
      const int n = r->FieldSize(m, f);
      if (rules.has_map()) {
        if (rules.map().has_min_pairs() && static_cast<uint64_t>(n) < rules.map().min_pairs())
          Fail(path, "map min_pairs");
        if (rules.map().has_max_pairs() && static_cast<uint64_t>(n) > rules.map().max_pairs())
          Fail(path, "map max_pairs");
      }
      const FD* value = f->message_type()->map_value();
      if (value->cpp_type() == FD::CPPTYPE_MESSAGE) {
        for (int i = 0; i < n; ++i) {
          const auto& entry = r->GetRepeatedMessage(m, f, i);
          CheckMessage(entry.GetReflection()->GetMessage(entry, value), absl::StrCat(path, "[", i, "]"));
        }
      }
      return;
    }
    if (f->is_repeated()) {
      const int n = r->FieldSize(m, f);
      const validate::FieldRules* items = nullptr;
      if (rules.has_repeated()) {
        const auto& rep = rules.repeated();
        if (rep.has_min_items() && static_cast<uint64_t>(n) < rep.min_items()) {
          Fail(path, absl::StrCat("repeated min_items ", rep.min_items(), " (", n, ")"));
        }
        if (rep.has_max_items() && static_cast<uint64_t>(n) > rep.max_items()) Fail(path, "repeated max_items");
        if (rep.has_items()) items = &rep.items();
      }
      for (int i = 0; i < n; ++i) CheckValue(m, f, i, items, absl::StrCat(path, "[", i, "]"));
      return;
    }
    // A oneof member's rules apply only when it is the one set.
    if (f->containing_oneof() != nullptr && !r->HasField(m, f)) return;
    const bool set = f->has_presence() ? r->HasField(m, f) : true;
    if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
      const bool required = (rules.has_message() && rules.message().required()) ||
                            (rules.has_duration() && rules.duration().required()) ||
                            (rules.has_any() && rules.any().required());
      if (!r->HasField(m, f)) {
        if (required) Fail(path, "message required, not set");
        return;
      }
    } else if (!set) {
      return;
    }
    CheckValue(m, f, -1, &rules, path);
  }

  // One value of `f` (element `index` if repeated, else the field) against `rules`.
  void CheckValue(const google::protobuf::Message& m, const FD* f, int index, const validate::FieldRules* rules,
                  const std::string& path) {
    const auto* r = m.GetReflection();
    const bool rep = index >= 0;
    switch (f->cpp_type()) {
      case FD::CPPTYPE_MESSAGE: {
        const auto& sub = rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f);
        if (rules != nullptr) CheckWellKnown(sub, *rules, path);
        CheckMessage(sub, path);
        return;
      }
      case FD::CPPTYPE_STRING:
        if (rules != nullptr && rules->has_string()) {
          CheckString(rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f), rules->string(), path);
        }
        return;
      case FD::CPPTYPE_ENUM:
        if (rules != nullptr && rules->has_enum_()) {
          const int value = rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f);
          const auto& e = rules->enum_();
          if (e.defined_only() && f->enum_type()->FindValueByNumber(value) == nullptr) Fail(path, "enum defined_only");
          if (e.has_const_() && value != e.const_()) Fail(path, "enum const");
          if (e.in_size() > 0 && std::find(e.in().begin(), e.in().end(), value) == e.in().end()) Fail(path, "enum in");
          if (std::find(e.not_in().begin(), e.not_in().end(), value) != e.not_in().end()) Fail(path, "enum not_in");
        }
        return;
      case FD::CPPTYPE_UINT32:
        if (rules != nullptr && rules->has_uint32()) {
          Numeric(rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f), rules->uint32(), path);
        }
        return;
      case FD::CPPTYPE_UINT64:
        if (rules != nullptr && rules->has_uint64()) {
          Numeric(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f), rules->uint64(), path);
        }
        return;
      case FD::CPPTYPE_INT32:
        if (rules != nullptr && rules->has_int32()) {
          Numeric(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f), rules->int32(), path);
        }
        return;
      case FD::CPPTYPE_INT64:
        if (rules != nullptr && rules->has_int64()) {
          Numeric(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f), rules->int64(), path);
        }
        return;
      case FD::CPPTYPE_DOUBLE:
        if (rules != nullptr && rules->has_double_()) {
          Numeric(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f), rules->double_(), path);
        }
        return;
      default:
        return;
    }
  }

  // Rules written on a wrapper or Duration field apply to the value inside.
  void CheckWellKnown(const google::protobuf::Message& sub, const validate::FieldRules& rules,
                      const std::string& path) {
    const std::string& type = sub.GetDescriptor()->full_name();
    const auto* value = sub.GetDescriptor()->FindFieldByName("value");
    const auto* r = sub.GetReflection();
    if (type == "google.protobuf.Duration" && rules.has_duration()) {
      const auto& d = static_cast<const google::protobuf::Duration&>(sub);
      const auto nanos = [](const google::protobuf::Duration& x) { return x.seconds() * 1000000000 + x.nanos(); };
      const auto& dr = rules.duration();
      if (dr.has_gt() && !(nanos(d) > nanos(dr.gt()))) Fail(path, "duration gt");
      if (dr.has_gte() && !(nanos(d) >= nanos(dr.gte()))) Fail(path, "duration gte");
      if (dr.has_lt() && !(nanos(d) < nanos(dr.lt()))) Fail(path, "duration lt");
      if (dr.has_lte() && !(nanos(d) <= nanos(dr.lte()))) Fail(path, "duration lte");
    } else if (type == "google.protobuf.Any" && rules.has_any() && rules.any().in_size() > 0) {
      const auto& url = static_cast<const google::protobuf::Any&>(sub).type_url();
      if (std::find(rules.any().in().begin(), rules.any().in().end(), url) == rules.any().in().end())
        Fail(path, "any in");
    } else if (value != nullptr && type.starts_with("google.protobuf.")) {
      if (type == "google.protobuf.UInt32Value" && rules.has_uint32())
        Numeric(r->GetUInt32(sub, value), rules.uint32(), path);
      if (type == "google.protobuf.UInt64Value" && rules.has_uint64())
        Numeric(r->GetUInt64(sub, value), rules.uint64(), path);
      if (type == "google.protobuf.Int32Value" && rules.has_int32())
        Numeric(r->GetInt32(sub, value), rules.int32(), path);
      if (type == "google.protobuf.Int64Value" && rules.has_int64())
        Numeric(r->GetInt64(sub, value), rules.int64(), path);
      if (type == "google.protobuf.DoubleValue" && rules.has_double_())
        Numeric(r->GetDouble(sub, value), rules.double_(), path);
      if (type == "google.protobuf.StringValue" && rules.has_string())
        CheckString(r->GetString(sub, value), rules.string(), path);
    }
  }

  template <typename V, typename R>
  void Numeric(V v, const R& rule, const std::string& path) {
    const auto show = [&](const char* what) { Fail(path, absl::StrCat(what, " (", v, ")")); };
    if (rule.has_const_() && v != rule.const_()) show("const");
    if (rule.has_lt() && !(v < rule.lt())) show("lt");
    if (rule.has_lte() && !(v <= rule.lte())) show("lte");
    if (rule.has_gt() && !(v > rule.gt())) show("gt");
    if (rule.has_gte() && !(v >= rule.gte())) show("gte");
    if (rule.in_size() > 0 && std::find(rule.in().begin(), rule.in().end(), v) == rule.in().end()) show("in");
    if (std::find(rule.not_in().begin(), rule.not_in().end(), v) != rule.not_in().end()) show("not_in");
  }

  void CheckString(const std::string& s, const validate::StringRules& rule, const std::string& path) {
    if (rule.ignore_empty() && s.empty()) return;
    const auto show = [&](const char* what) {
      Fail(path, absl::StrCat("string ", what, " (\"", s.substr(0, 64), "\")"));
    };
    const size_t chars =
        static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
    if (rule.has_min_len() && chars < rule.min_len()) show("min_len");
    if (rule.has_max_len() && chars > rule.max_len()) show("max_len");
    if (rule.has_min_bytes() && s.size() < rule.min_bytes()) show("min_bytes");
    if (rule.has_max_bytes() && s.size() > rule.max_bytes()) show("max_bytes");
    if (rule.has_prefix() && !s.starts_with(rule.prefix())) show("prefix");
    if (rule.in_size() > 0 && std::find(rule.in().begin(), rule.in().end(), s) == rule.in().end()) show("in");
    if (std::find(rule.not_in().begin(), rule.not_in().end(), s) != rule.not_in().end()) show("not_in");
    if (rule.has_pattern()) unchecked_.push_back(absl::StrCat(path, ": pattern"));
    if (rule.has_well_known_regex()) {
      const bool strict = !rule.has_strict() || rule.strict();
      if (rule.well_known_regex() == validate::HTTP_HEADER_NAME) {
        // RFC 7230 token, optionally a pseudo-header.
        const std::string_view name = s.starts_with(':') ? std::string_view(s).substr(1) : std::string_view(s);
        const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) ||
                 std::string_view("!#$%&'*+-.^_|~`").find(c) != std::string_view::npos;
        });
        if (!ok && strict) show("well_known HTTP_HEADER_NAME");
      } else if (rule.well_known_regex() == validate::HTTP_HEADER_VALUE) {
        const bool ok = std::none_of(s.begin(), s.end(), [](char c) { return c == '\0' || c == '\r' || c == '\n'; });
        if (!ok && strict) show("well_known HTTP_HEADER_VALUE");
      }
    }
  }

  std::vector<std::string> violations_;
  std::vector<std::string> unchecked_;
};

}  // namespace cxds::testing
