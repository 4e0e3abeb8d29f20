// The message of the error a call throws, for tests that check what an error says.
#pragma once

#include <string>

namespace gradwire::ps::testing {

// The what() of the `Exception` that `call` throws; "" when it throws none (another exception
// type propagates).
template <typename Exception, typename Call>
std::string message_of(Call call) {
  try {
    call();
  } catch (const Exception& error) {
    return error.what();
  }
  return "";
}

}  // namespace gradwire::ps::testing
