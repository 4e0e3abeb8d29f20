// The job token: every parameter-server call carries it in the "authorization" metadata as
// "Bearer TOKEN", and the server compares it in constant time before doing anything else. The
// token only proves membership of the job; use TLS (tls.h) to keep it secret on untrusted nets.
//
// Thread safety: pure functions (load_token reads a file). Blocking: none.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <string>
#include <string_view>

#include "gradwire/common/env.h"

namespace gradwire::rpc {

inline constexpr char kAuthorizationMetadataKey[] = "authorization";
inline constexpr char kBearerPrefix[] = "Bearer ";

// The token, from the first source that is set: `explicit_token`, the file `token_file` (its
// content without trailing whitespace), GRADWIRE_TOKEN, GRADWIRE_JOB_TOKEN. ConfigError naming
// all four sources when none gives a non-empty token, or naming the file when it cannot be read,
// is empty, or group or others may read or write it (mode & 077; the message gives the mode in
// octal and the fix, chmod 600 FILE, as ssh does for private keys).
std::string load_token(const std::string& explicit_token, const std::string& token_file,
                       const EnvMap& env);

// Whether a == b, in time that depends only on the lengths (not on where they first differ).
bool tokens_equal(std::string_view a, std::string_view b);

// "Bearer TOKEN".
std::string authorization_value(const std::string& token);
// Adds the token metadata to a client call.
void add_token(grpc::ClientContext& context, const std::string& token);

// The server-side check: OK, or UNAUTHENTICATED with "missing token" / "wrong token" (the
// received token is never echoed back).
grpc::Status check_token(const grpc::ServerContext& context, const std::string& expected);

}  // namespace gradwire::rpc
