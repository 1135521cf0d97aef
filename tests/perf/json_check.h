// A small strict JSON reader for the tests: enough to prove that unet_perf's --json output parses
// (RFC 8259 grammar, no extensions) and to look values up in it. bench/fuzz/json_writer_fuzz
// checks the writer's output with it too.
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace unet::test {

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;

  const Json* get(const std::string& key) const {
    auto it = object.find(key);
    return kind == Kind::kObject && it != object.end() ? &it->second : nullptr;
  }
};

class JsonReader {
 public:
  // The document, or nullopt (and error() says where) when `text` is not exactly one JSON value.
  std::optional<Json> parse(std::string_view text) {
    s_ = text;
    pos_ = 0;
    Json v;
    if (!value(v)) return std::nullopt;
    ws();
    if (pos_ != s_.size()) return fail("trailing characters");
    return v;
  }
  const std::string& error() const { return error_; }

 private:
  std::nullopt_t fail(const std::string& why) {
    error_ = why + " at offset " + std::to_string(pos_);
    return std::nullopt;
  }
  void ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  bool value(Json& v) {
    ws();
    if (pos_ >= s_.size()) return fail("unexpected end"), false;
    const char c = s_[pos_];
    if (c == '{') return object(v);
    if (c == '[') return array(v);
    if (c == '"') return v.kind = Json::Kind::kString, string(v.string);
    if (literal("true")) return v.kind = Json::Kind::kBool, v.boolean = true, true;
    if (literal("false")) return v.kind = Json::Kind::kBool, v.boolean = false, true;
    if (literal("null")) return v.kind = Json::Kind::kNull, true;
    return number(v);
  }
  bool number(Json& v) {
    const std::size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') return fail("bad value"), false;
    if (s_[pos_] == '0')
      ++pos_;
    else
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') return fail("bad fraction"), false;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') return fail("bad exponent"), false;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    v.kind = Json::Kind::kNumber;
    v.number = std::strtod(std::string(s_.substr(start, pos_ - start)).c_str(), nullptr);
    return true;
  }
  bool string(std::string& out) {
    ++pos_;  // the opening quote
    while (pos_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return fail("raw control character in a string"), false;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= s_.size()) break;
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return fail("short \\u escape"), false;
          unsigned long cp = 0;
          for (std::size_t end = pos_ + 4; pos_ < end; ++pos_) {  // exactly four hex digits
            const char h = s_[pos_];
            const int d = h >= '0' && h <= '9'   ? h - '0'
                          : h >= 'a' && h <= 'f' ? h - 'a' + 10
                          : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                 : -1;
            if (d < 0) return fail("bad \\u escape"), false;
            cp = cp << 4 | static_cast<unsigned long>(d);
          }
          if (cp >= 0x80) return fail("\\u escape above ASCII (not needed by these tests)"), false;
          out += static_cast<char>(cp);
          break;
        }
        default:
          return fail("bad escape"), false;
      }
    }
    return fail("unterminated string"), false;
  }
  bool array(Json& v) {
    v.kind = Json::Kind::kArray;
    ++pos_;
    ws();
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
    for (;;) {
      v.array.emplace_back();
      if (!value(v.array.back())) return false;
      ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      return fail("expected , or ]"), false;
    }
  }
  bool object(Json& v) {
    v.kind = Json::Kind::kObject;
    ++pos_;
    ws();
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
    for (;;) {
      ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected a key"), false;
      std::string k;
      if (!string(k)) return false;
      ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("expected :"), false;
      ++pos_;
      if (v.object.count(k)) return fail("duplicate key " + k), false;
      if (!value(v.object[k])) return false;
      ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      return fail("expected , or }"), false;
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::string error_;
};

}  // namespace unet::test
