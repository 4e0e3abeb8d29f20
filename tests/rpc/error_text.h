// What the rpc tests check of an error: its message, and whether it says something.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gradwire/common/error.h"

namespace gradwire::rpc::testing {

// The what() of the InvalidArgument that `fn` throws; a test failure and "" when it throws none.
template <typename Fn>
std::string invalid_argument_message(Fn&& fn) {
  try {
    fn();
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected InvalidArgument";
  return "";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace gradwire::rpc::testing
