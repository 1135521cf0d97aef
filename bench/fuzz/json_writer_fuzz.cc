// libFuzzer target for unet_perf's JSON writer, checked with the unit tests' strict RFC 8259 reader
// (tests/perf/json_check.h: quotes around a string, no raw control character in it, a backslash
// only before " \ / b f n r t or u and four hex digits). json_quote() of any bytes must be one
// string literal that reads back as exactly those bytes. A JsonWriter document driven by the
// input (any legal sequence of containers, keys and values) must parse, with every finite double
// reading back exactly.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "json_check.h"
#include "json_writer.h"

using namespace unet::perf;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
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
  unet::test::JsonReader reader;
  const auto quoted = reader.parse(json_quote(raw));
  require(quoted && quoted->kind == unet::test::Json::Kind::kString && quoted->string == raw);

  JsonWriter w;
  std::vector<double> doubles;
  write_document(in, w, doubles);
  if (w.str().empty()) return 0;
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
