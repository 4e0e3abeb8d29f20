// pick_free_port: asks the kernel for an unused TCP port on an address.
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "gradwire/launch/launcher.h"

namespace gradwire::launch {

int pick_free_port(const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int status =
      ::getaddrinfo(address.empty() ? nullptr : address.c_str(), "0", &hints, &found);
  if (status != 0) {
    throw InvalidArgument("gradwire-run: cannot resolve address '" + address +
                          "': " + ::gai_strerror(status) + " (check --master-addr)");
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);

  std::string last_error = "no usable address";
  for (addrinfo* entry = addresses.get(); entry != nullptr; entry = entry->ai_next) {
    UniqueFd socket(
        ::socket(entry->ai_family, entry->ai_socktype | SOCK_CLOEXEC, entry->ai_protocol));
    if (!socket.valid() || ::bind(socket.get(), entry->ai_addr, entry->ai_addrlen) != 0) {
      last_error = std::strerror(errno);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (::getsockname(socket.get(), reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
      last_error = std::strerror(errno);
      continue;
    }
    if (bound.ss_family == AF_INET) {
      return ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
    }
    if (bound.ss_family == AF_INET6) {
      return ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port);
    }
  }
  throw Error("gradwire-run: cannot find a free port on '" + address + "': " + last_error +
              " (is it an address of this machine? pass --master-port explicitly)");
}

}  // namespace gradwire::launch
