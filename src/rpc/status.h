// gRPC statuses -> gradwire errors (docs/errors.md). Each message names the operation, the
// server's address, how long the call waited and what to do next, then "Server said: ..." with
// the status message.
//
//   UNAVAILABLE        PeerLostError (no dead ranks: the peer is a server) "server A is
//   unreachable" DEADLINE_EXCEEDED  TimeoutError INVALID_ARGUMENT   InvalidArgument UNAUTHENTICATED
//   ConfigError (the job token) anything else      BackendError (NOT_FOUND, RESOURCE_EXHAUSTED,
//   FAILED_PRECONDITION say why)
//
// Thread safety: pure functions. Blocking: none.
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <string>

namespace gradwire::rpc {

// "UNAVAILABLE", "DEADLINE_EXCEEDED", ...; "CODE_42" for codes gRPC does not define.
std::string status_code_name(grpc::StatusCode code);

// Throws the gradwire error for a failed call. `operation` reads as a noun phrase ("lookup of
// table 'emb'"), `address` is the server's HOST:PORT, `waited` how long the caller waited in all
// (retries included). Precondition: !status.ok().
[[noreturn]] void throw_rpc_error(const grpc::Status& status, const std::string& operation,
                                  const std::string& address, std::chrono::milliseconds waited);

}  // namespace gradwire::rpc
