// A self-signed TLS certificate for 127.0.0.1 / localhost made with the openssl command, for
// tests of TLS servers and channels. Shared by the rpc and ps server tests.
#pragma once

#include <optional>
#include <string>

namespace gradwire::rpc::testing {

struct TestCertificate {
  std::string cert_file;  // PEM certificate (also the root a client trusts)
  std::string key_file;   // PEM private key
};

// Writes cert.pem and key.pem into `dir`; nullopt when openssl is not installed or fails.
std::optional<TestCertificate> make_self_signed_certificate(const std::string& dir);

}  // namespace gradwire::rpc::testing
