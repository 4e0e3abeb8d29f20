// What one call to a parameter server carries, in a few words for the timeline (docs/timeline.md,
// category "ps"), read alike by the client and the server: its kind, the first table it names,
// the ids it carries and its parts.
//
// Thread safety: pure. Blocking: none.
#pragma once

#include <cstdint>
#include <string_view>

#include "rpc/proto/ps.pb.h"

namespace gradwire::ps {

struct CallSummary {
  // A Batch by its parts: "step" when it ends steps (it may carry pushes too), else "lookup" (it
  // may carry deferred pushes), else "push". The other methods: "create table", "resume",
  // "assign", "checkpoint".
  const char* name = "";
  // The gRPC method: "Batch", "CreateTable", "Resume", "Assign", "Checkpoint".
  const char* method = "";
  // The first table the call names (a Batch: its first step's, else lookup's, else push's); a
  // view into the request; empty for a Checkpoint.
  std::string_view table;
  int64_t ids = 0;  // ids looked up, pushed or assigned (rows), all parts together
  int parts = 1;    // a Batch's lookups, pushes and steps together; 1 for the other methods
};

CallSummary summarize(const v1::BatchRequest& request);
CallSummary summarize(const v1::CreateTableRequest& request);
CallSummary summarize(const v1::ResumeRequest& request);
CallSummary summarize(const v1::AssignRequest& request);
CallSummary summarize(const v1::CheckpointRequest& request);

}  // namespace gradwire::ps
