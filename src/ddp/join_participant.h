// The Join side of one DistributedDataParallel (include/gradwire/ddp/join.h): owned by its
// DdpCore while a Join is attached. A training rank asks it for each forward that communicates;
// a joined rank runs its shadow loop. See docs/ddp.md, "Join: uneven inputs".
#pragma once

#include <ATen/Tensor.h>

#include <optional>
#include <vector>

#include "gradwire/comm/communicator.h"
#include "gradwire/ddp/join.h"
#include "join_round.h"
#include "reducer.h"

namespace gradwire::ddp {

// What the DDP it serves lends it; every reference outlives the participant.
struct JoinedModel {
  Communicator& comm;
  Reducer& reducer;
  // Broadcast at every forward (empty when broadcast_buffers is off or there are no buffers).
  const std::vector<at::Tensor>& forward_buffers;
  // Every parameter and buffer: the final model, taken from the last rank to join.
  const std::vector<at::Tensor>& state;
};

class JoinParticipant {
 public:
  JoinParticipant(const JoinOptions& options, JoinedModel model);

  // How a training rank's forward goes on after its round.
  struct ForwardPlan {
    int buffer_root = 0;  // the rank whose buffers are broadcast
    int divisor = 1;      // for the reducer's arm()
  };
  // A training rank's forward that communicates (synchronised, or broadcasting buffers): its
  // round. Blocks (one small allreduce).
  ForwardPlan on_forward(bool synchronising);

  // This rank has joined: shadows every round of the others until all have joined, then
  // broadcasts the final model from the lowest rank of the last round with training ranks (if
  // some rank was missing from it). Blocks; collective.
  JoinResult shadow_until_all_joined();

 private:
  void note(const JoinRound& round);

  const JoinOptions options_;
  JoinedModel model_;
  std::optional<JoinRound> last_training_round_;  // the last round in which some rank trained
};

}  // namespace gradwire::ddp
