// Detects that an HTTP client hung up while its non-streamed request is still being generated.
#pragma once

#include <string>

namespace anelm::server {

// cpp-httplib 0.11 gives handlers no socket, and a non-streamed response writes nothing until the
// end, so a hang-up would go unnoticed until max_tokens. This finds the accepted socket by its
// addresses and polls it for EOF/hang-up. Identity is re-checked on every poll (getpeername), so a
// reused descriptor is never mistaken for the request's connection.
class PeerSocketWatch {
 public:
  PeerSocketWatch(std::string remote_addr, int remote_port, int local_port);
  // True once the peer closed or reset the connection (never for an unidentifiable socket).
  bool closed();

 private:
  bool matches(int fd) const;
  int find() const;

  std::string remote_addr_;
  int remote_port_;
  int local_port_;
  int fd_ = -1;
};

}  // namespace anelm::server
