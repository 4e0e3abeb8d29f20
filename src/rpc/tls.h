// TLS credentials for the parameter-server service from PEM files. Without them the service runs
// in plaintext, which is fine on loopback and trusted networks (the token still authenticates).
//
// Thread safety: pure functions that read files. Blocking: file reads only.
#pragma once

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

namespace gradwire::rpc {

// The whole content of a PEM file; ConfigError naming `what` and the file when it cannot be read
// or is empty.
std::string read_pem_file(const std::string& path, const std::string& what);

// Server credentials: TLS with `cert_file` (certificate chain) and `key_file` (private key) when
// both are given, insecure when both are empty. Only one of them: ConfigError.
std::shared_ptr<grpc::ServerCredentials> make_server_credentials(const std::string& cert_file,
                                                                 const std::string& key_file);

// Channel credentials: TLS trusting the roots in `root_cert_file`, or insecure when it is empty.
std::shared_ptr<grpc::ChannelCredentials> make_channel_credentials(
    const std::string& root_cert_file);

}  // namespace gradwire::rpc
