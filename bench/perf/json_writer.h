// JsonWriter: a tiny streaming JSON writer (objects, arrays, strings, numbers, booleans, null),
// enough for unet_perf's --json report without a JSON library. It inserts the commas itself and
// escapes strings as RFC 8259 requires; non-finite numbers become null.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace unet::perf {

// `s` as a JSON string literal, quotes included: '"' and '\' escaped, control characters as
// \n \t \r \b \f or \u00XX; other bytes (UTF-8 included) unchanged.
std::string json_quote(std::string_view s);

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // Inside an object: the next value's name.
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(double d);
  JsonWriter& value(std::int64_t i);
  JsonWriter& value(std::uint64_t u);
  JsonWriter& value(std::uint32_t u) { return value(std::uint64_t{u}); }
  JsonWriter& value(int i) { return value(std::int64_t{i}); }
  JsonWriter& value(bool b);
  JsonWriter& null();

  // The document so far (complete once every begin has its end).
  const std::string& str() const noexcept { return out_; }

 private:
  void before_value();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace unet::perf
