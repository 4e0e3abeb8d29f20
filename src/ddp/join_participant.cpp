#include "join_participant.h"

#include "coalesced.h"
#include "gradwire/common/error.h"

namespace gradwire::ddp {

JoinParticipant::JoinParticipant(const JoinOptions& options, JoinedModel model)
    : options_(options), model_(model) {}

void JoinParticipant::note(const JoinRound& round) {
  if (!round.all_joined()) last_training_round_ = round;
}

JoinParticipant::ForwardPlan JoinParticipant::on_forward(bool synchronising) {
  JoinRound round = exchange_join_round(model_.comm, /*training=*/true, synchronising);
  GRADWIRE_CHECK(!round.all_joined());  // this rank trains
  note(round);
  ForwardPlan plan;
  plan.buffer_root = round.root();
  plan.divisor = options_.divide_by_initial_world_size ? model_.comm.size()
                                                       : static_cast<int>(round.training.size());
  return plan;
}

// Each round mirrors one forward of the ranks still training (ddp_core.cpp, before_forward):
// the round itself, the bucket rebuild when due, the buffer broadcast, then, if they synchronise,
// their backward (join_shadow.cpp, Note [shadowed backward]).
JoinResult JoinParticipant::shadow_until_all_joined() {
  JoinResult result;
  for (;;) {
    JoinRound round = exchange_join_round(model_.comm, /*training=*/false, false);
    if (round.all_joined()) break;
    note(round);
    ++result.shadowed_forwards;
    if (round.synchronising) model_.reducer.rebuild_buckets_if_due();
    broadcast_coalesced(model_.comm, model_.forward_buffers, round.root());
    if (round.synchronising) {
      model_.reducer.shadow_backward();
      ++result.shadowed_backwards;
    }
  }
  const int world = model_.comm.size();
  if (last_training_round_ && static_cast<int>(last_training_round_->training.size()) < world) {
    // The ranks of the last round trained every iteration alike; the others stopped early.
    result.final_model_root = last_training_round_->root();
    broadcast_coalesced(model_.comm, model_.state, result.final_model_root);
  }
  return result;
}

}  // namespace gradwire::ddp
