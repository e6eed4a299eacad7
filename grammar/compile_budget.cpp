// CompileBudget: the cancellation and deadline checks of grammar and schema compilation.
#include <chrono>

#include "grammar/grammar.h"

namespace anelm::grammar {

void CompileBudget::poll() {
  ticks_ = 0;
  const Clock::time_point now = Clock::now();
  if (now > deadline_) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(max_time_).count();
    throw Error("grammar too costly: compilation took longer than the limit of " + std::to_string(ms) + " ms");
  }
  // The callback may be a system call (a poll of the client socket): asked at most every 2 ms.
  if (cancelled_ && now - last_ask_ >= std::chrono::milliseconds(2)) {
    last_ask_ = now;
    if (cancelled_()) throw Cancelled("grammar compilation cancelled: the client closed the connection");
  }
}

}  // namespace anelm::grammar
