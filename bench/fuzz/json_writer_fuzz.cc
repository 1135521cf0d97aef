// libFuzzer target for unet_perf's JSON writer. json_quote() of any bytes must be a valid JSON
// string literal (quotes around it, no raw control character, every backslash a valid escape)
// that reads back as exactly those bytes. A JsonWriter document driven by the input (any legal
// sequence of containers, keys and values) must parse as JSON (tests/perf/json_check.h), with
// every finite double reading back exactly.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "json_check.h"
#include "json_writer.h"

using namespace unet::perf;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The bytes a JSON string literal stands for, or nullopt when it is not one (RFC 8259: quoted,
// no raw control character or quote inside, backslash only before " \ / b f n r t or u+4 hex).
// \u escapes above 0xff are refused: json_quote() has no reason to write them.
std::optional<std::string> unquote(std::string_view lit) {
  if (lit.size() < 2 || lit.front() != '"' || lit.back() != '"') return std::nullopt;
  lit = lit.substr(1, lit.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < lit.size(); ++i) {
    const auto c = static_cast<unsigned char>(lit[i]);
    if (c < 0x20 || c == '"') return std::nullopt;
    if (c != '\\') {
      out += static_cast<char>(c);
      continue;
    }
    if (++i == lit.size()) return std::nullopt;
    switch (lit[i]) {
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
        if (lit.size() - i - 1 < 4) return std::nullopt;
        int cp = 0;
        for (std::size_t k = 1; k <= 4; ++k) {
          const int d = hex_digit(lit[i + k]);
          if (d < 0) return std::nullopt;
          cp = cp << 4 | d;
        }
        if (cp > 0xff) return std::nullopt;
        out += static_cast<char>(cp);
        i += 4;
        break;
      }
      default:
        return std::nullopt;
    }
  }
  return out;
}

// Writes one document from the input: containers open and close in order, object members get a
// key first (unique, so the strict reader accepts the object), and the document is one value.
void write_document(FuzzedDataProvider& in, JsonWriter& w, std::vector<double>& doubles) {
  std::vector<bool> in_object;  // per open container
  bool done = false;
  int keys = 0;
  while (!done && in.remaining_bytes() > 0) {
    const int op = in.ConsumeIntegralInRange(0, 8);
    if (op == 0 && !in_object.empty()) {
      in_object.back() ? w.end_object() : w.end_array();
      in_object.pop_back();
      done = in_object.empty();
      continue;
    }
    if (!in_object.empty() && in_object.back())
      w.key(in.ConsumeRandomLengthString(16) + "#" + std::to_string(keys++));
    switch (op) {
      case 1:
        w.begin_object();
        in_object.push_back(true);
        continue;
      case 2:
        w.begin_array();
        in_object.push_back(false);
        continue;
      case 3:
        w.value(in.ConsumeRandomLengthString(32));
        break;
      case 4: {
        const double d = in.ConsumeFloatingPoint<double>();
        w.value(d);
        if (std::isfinite(d)) doubles.push_back(d);
        break;
      }
      case 5:
        w.value(in.ConsumeIntegral<std::int64_t>());
        break;
      case 6:
        w.value(in.ConsumeIntegral<std::uint64_t>());
        break;
      case 7:
        w.value(in.ConsumeBool());
        break;
      default:
        w.null();
        break;
    }
    done = in_object.empty();
  }
  while (!in_object.empty()) {
    in_object.back() ? w.end_object() : w.end_array();
    in_object.pop_back();
  }
}

// Every number of the document (members come back in key order, not in the order written).
void numbers(const unet::test::Json& j, std::multiset<double>& out) {
  using Kind = unet::test::Json::Kind;
  if (j.kind == Kind::kNumber) out.insert(j.number);
  for (const auto& e : j.array) numbers(e, out);
  for (const auto& [k, v] : j.object) numbers(v, out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string raw = in.ConsumeRandomLengthString(256);
  const auto back = unquote(json_quote(raw));
  require(back && *back == raw);

  JsonWriter w;
  std::vector<double> doubles;
  write_document(in, w, doubles);
  if (w.str().empty()) return 0;
  unet::test::JsonReader reader;
  const auto doc = reader.parse(w.str());
  require(doc.has_value());
  // Every double written is among the numbers read back (as doubles, the integers may round).
  std::multiset<double> read;
  numbers(*doc, read);
  for (double d : doubles) {
    const auto it = read.find(d);
    require(it != read.end());
    read.erase(it);
  }
  return 0;
}
