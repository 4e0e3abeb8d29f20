// What a call carries, for the timeline (call_summary.h).
#include "ps/messages/call_summary.h"

namespace gradwire::ps {
namespace {

// The rows of an ids tensor as its message states them (its first dimension).
int64_t rows_of_ids(const v1::Tensor& ids) { return ids.shape_size() > 0 ? ids.shape(0) : 0; }

}  // namespace

CallSummary summarize(const v1::BatchRequest& request) {
  CallSummary summary;
  summary.method = "Batch";
  summary.parts = request.pushes_size() + request.steps_size() + request.lookups_size();
  for (const v1::PushRequest& push : request.pushes()) summary.ids += rows_of_ids(push.ids());
  for (const v1::LookupRequest& lookup : request.lookups()) {
    summary.ids += rows_of_ids(lookup.ids());
  }
  if (request.steps_size() > 0) {
    summary.name = "step";
    summary.table = request.steps(0).table();
  } else if (request.lookups_size() > 0) {
    summary.name = "lookup";
    summary.table = request.lookups(0).table();
  } else {
    summary.name = "push";
    if (request.pushes_size() > 0) summary.table = request.pushes(0).table();
  }
  return summary;
}

CallSummary summarize(const v1::CreateTableRequest& request) {
  CallSummary summary;
  summary.name = "create table";
  summary.method = "CreateTable";
  summary.table = request.config().name();
  return summary;
}

CallSummary summarize(const v1::ResumeRequest& request) {
  CallSummary summary;
  summary.name = "resume";
  summary.method = "Resume";
  summary.table = request.table();
  return summary;
}

CallSummary summarize(const v1::AssignRequest& request) {
  CallSummary summary;
  summary.name = "assign";
  summary.method = "Assign";
  summary.table = request.table();
  summary.ids = rows_of_ids(request.ids());
  return summary;
}

CallSummary summarize(const v1::CheckpointRequest& /*request*/) {
  CallSummary summary;
  summary.name = "checkpoint";
  summary.method = "Checkpoint";
  return summary;
}

}  // namespace gradwire::ps
