// What ties a State to the generation run() is in (elastic-internal).
#pragma once

#include <cstdint>
#include <stdexcept>

#include "gradwire/comm/communicator.h"
#include "gradwire/elastic/elastic.h"
#include "membership.h"

namespace gradwire::elastic {

struct State::Binding {
  detail::Membership* membership = nullptr;
  int64_t generation = 0;
  Communicator* communicator = nullptr;
};

namespace detail {

// Thrown by State::commit() inside run() when workers wait to join: every member leaves the
// training function at the same commit and run() takes them in. Not an error.
struct MembershipChange {};

}  // namespace detail
}  // namespace gradwire::elastic
