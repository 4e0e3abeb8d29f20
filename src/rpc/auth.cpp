#include "rpc/auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "gradwire/common/settings.h"

namespace gradwire::rpc {
namespace {

constexpr char kSources[] =
    "an explicit token, a token file (--token-file / token_file), GRADWIRE_TOKEN or "
    "GRADWIRE_JOB_TOKEN";

[[noreturn]] void unreadable(const std::string& path, const std::string& why) {
  throw ConfigError("gradwire: cannot read the token file '" + path + "': " + why +
                    ". Check the path and its permissions, or pass the token through "
                    "GRADWIRE_TOKEN.");
}

// Like ssh with a private key: a token others may read is no secret, and one others may write
// lets them choose it.
void check_private(const std::string& path, mode_t mode) {
  if ((mode & 077) == 0) return;
  char octal[8];
  std::snprintf(octal, sizeof(octal), "%04o", static_cast<unsigned>(mode & 07777));
  throw ConfigError("gradwire: the token file '" + path + "' has mode " + octal +
                    ": group or others can read or write it, so the token is not the job's "
                    "secret. Make it the owner's alone with: chmod 600 " +
                    path);
}

std::string read_token_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) unreadable(path, errno_text(errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) unreadable(path, errno_text(errno));
  check_private(path, info.st_mode);
  if (info.st_uid != ::geteuid()) {
    // ssh's rule too: whoever owns the file can change the token or its mode.
    throw ConfigError("gradwire: the token file '" + path + "' belongs to uid " +
                      std::to_string(info.st_uid) + ", not to this process's user (uid " +
                      std::to_string(::geteuid()) +
                      "), who could then not keep it secret. Use a token file of your own.");
  }
  std::string token;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) unreadable(path, errno_text(errno));
    if (got == 0) break;
    token.append(buffer, static_cast<size_t>(got));
  }
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t')) {
    token.pop_back();
  }
  if (token.empty()) {
    throw ConfigError("gradwire: the token file '" + path +
                      "' is empty. Write the job's token into it (any non-empty string).");
  }
  return token;
}

}  // namespace

std::string load_token(const std::string& explicit_token, const std::string& token_file,
                       const EnvMap& env) {
  if (!explicit_token.empty()) return explicit_token;
  if (!token_file.empty()) return read_token_file(token_file);
  for (const char* name : {settings::kToken.name, settings::kJobToken.name}) {
    const std::optional<std::string> value = env.get(name);
    if (value && !value->empty()) return *value;
  }
  throw ConfigError(std::string("gradwire: no job token; looked at ") + kSources +
                    ", and none is set or non-empty. Start the job with gradwire-run (which "
                    "hands out a fresh token), or set GRADWIRE_TOKEN to the same secret on "
                    "servers and trainers.");
}

bool tokens_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer string is visited whatever the content, so the time taken says
  // nothing about where the strings differ.
  const size_t length = a.size() > b.size() ? a.size() : b.size();
  volatile unsigned char difference = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < length; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference = difference | static_cast<unsigned char>(x ^ y);
  }
  return difference == 0;
}

std::string authorization_value(const std::string& token) { return kBearerPrefix + token; }

void add_token(grpc::ClientContext& context, const std::string& token) {
  context.AddMetadata(kAuthorizationMetadataKey, authorization_value(token));
}

grpc::Status check_token(const grpc::ServerContext& context, const std::string& expected) {
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find(kAuthorizationMetadataKey);
  if (found == metadata.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing token: every call must carry the job token in the "
                        "'authorization' metadata");
  }
  const std::string_view value(found->second.data(), found->second.size());
  const std::string_view prefix(kBearerPrefix);
  const bool has_prefix = value.size() >= prefix.size() && value.substr(0, prefix.size()) == prefix;
  const std::string_view token = has_prefix ? value.substr(prefix.size()) : std::string_view();
  if (!has_prefix || token.empty()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing token: the 'authorization' metadata is not 'Bearer TOKEN'");
  }
  if (!tokens_equal(token, expected)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "wrong token: the call's token is not this job's token");
  }
  return grpc::Status::OK;
}

}  // namespace gradwire::rpc
