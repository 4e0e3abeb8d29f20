#include "test_certificates.h"

#include <cstdlib>

namespace gradwire::rpc::testing {

std::optional<TestCertificate> make_self_signed_certificate(const std::string& dir) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) return std::nullopt;
  TestCertificate certificate{dir + "/cert.pem", dir + "/key.pem"};
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1"
      " -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost"
      " -keyout '" +
      certificate.key_file + "' -out '" + certificate.cert_file + "' >'" + dir +
      "/openssl.log' 2>&1";
  if (std::system(command.c_str()) != 0) return std::nullopt;
  return certificate;
}

}  // namespace gradwire::rpc::testing
