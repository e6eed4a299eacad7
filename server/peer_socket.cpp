// Finds a connection's socket by its addresses and polls it for hang-up (Linux/POSIX).
#include "server/peer_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>

namespace anelm::server {

namespace {

// Address and port of a sockaddr as text, for IPv4 and IPv6.
bool describe(const sockaddr_storage& ss, std::string* addr, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    *port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    *port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  *addr = buf;
  return true;
}

}  // namespace

PeerSocketWatch::PeerSocketWatch(std::string remote_addr, int remote_port, int local_port)
    : remote_addr_(std::move(remote_addr)), remote_port_(remote_port), local_port_(local_port) {}

bool PeerSocketWatch::matches(int fd) const {
  sockaddr_storage peer{}, self{};
  socklen_t n = sizeof peer, m = sizeof self;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &n) != 0) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &m) != 0) return false;
  std::string pa, sa;
  int pp = 0, sp = 0;
  if (!describe(peer, &pa, &pp) || !describe(self, &sa, &sp)) return false;
  return pp == remote_port_ && sp == local_port_ && pa == remote_addr_;
}

int PeerSocketWatch::find() const {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    if (matches(static_cast<int>(fd))) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

bool PeerSocketWatch::closed() {
  if (remote_port_ <= 0 || local_port_ <= 0) return false;
  if (fd_ < 0 || !matches(fd_)) fd_ = find();
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  if (p.revents & POLLIN) {
    char c;
    return recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // EOF; pipelined bytes are not a hang-up
  }
  return false;
}

}  // namespace anelm::server
