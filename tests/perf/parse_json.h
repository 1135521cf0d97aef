// parse_json(): unet_perf's --json report read back with nlohmann::json, for the unit and device
// tests of tests/perf.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace unet::test {

// `text` as JSON (RFC 8259, no extensions). When it is not, a test failure shows the parser's
// error and the text, and the parser's exception ends the test.
inline nlohmann::json parse_json(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    ADD_FAILURE() << e.what() << "\n" << text;
    throw;
  }
}

}  // namespace unet::test
