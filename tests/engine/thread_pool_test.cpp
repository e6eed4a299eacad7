// ThreadPool: every index covered exactly once, chunk boundaries respect the grain, thread indices
// are in range, many back-to-back calls (the decode pattern) work, and one thread runs inline.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/thread_pool.h"

namespace anelm::engine {
namespace {

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {1, 2, 7, 64, 1000, 12345}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> bad_thread{0};
      pool.parallel_for(n, [&](int64_t b, int64_t e, int t) {
        if (t < 0 || t >= threads) bad_thread++;
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n=" << n << " i=" << i;
      EXPECT_EQ(bad_thread.load(), 0);
    }
  }
}

TEST(ThreadPool, ChunksAreMultiplesOfGrain) {
  ThreadPool pool(3);
  std::atomic<int> misaligned{0};
  pool.parallel_for(1000, [&](int64_t b, int64_t e, int) {
    if (b % 16 != 0 || (e % 16 != 0 && e != 1000)) misaligned++;
  }, 16);
  EXPECT_EQ(misaligned.load(), 0);
}

// A tapering job: every index once, claims on the grain, each no larger than a plain chunk and no
// smaller than an eighth of one (but the remainder), shrinking as the range runs out.
TEST(ThreadPool, TaperedClaimsShrinkAndCoverEveryIndexOnce) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {17, 1000, 151936}) {
      std::mutex m;
      std::vector<std::pair<int64_t, int64_t>> claims;
      pool.parallel_for(n, [&](int64_t b, int64_t e, int) {
        std::lock_guard lock(m);
        claims.emplace_back(b, e);
      }, 16, 2, /*taper=*/true);
      std::sort(claims.begin(), claims.end());
      const int64_t chunk = ((n + 2 * threads - 1) / (2 * threads) + 15) / 16 * 16;
      const int64_t min_chunk = std::max<int64_t>(16, (chunk / 8 + 15) / 16 * 16);
      int64_t next = 0, last = chunk;
      for (const auto& [b, e] : claims) {
        ASSERT_EQ(b, next) << "n=" << n;
        const int64_t size = e - b;
        EXPECT_EQ(b % 16, 0);
        EXPECT_LE(size, last) << "n=" << n << " at " << b;
        if (e != n) {
          EXPECT_GE(size, min_chunk) << "n=" << n << " at " << b;
        }
        last = size;
        next = e;
      }
      EXPECT_EQ(next, n);
      if (chunk > min_chunk) {
        EXPECT_GT(claims.size(), static_cast<size_t>(2 * threads)) << "n=" << n;
      }
    }
  }
}

TEST(ThreadPool, ManyBackToBackCalls) {
  ThreadPool pool(2);
  int64_t total = 0;
  std::vector<int64_t> partial(2, 0);
  for (int call = 0; call < 5000; ++call) {
    pool.parallel_for(10, [&](int64_t b, int64_t e, int t) { partial[static_cast<size_t>(t)] += e - b; });
  }
  total = partial[0] + partial[1];
  EXPECT_EQ(total, 50000);
}

TEST(ThreadPool, SleepsAndWakesAfterIdle) {
  ThreadPool pool(2);
  std::atomic<int> sum{0};
  pool.parallel_for(4, [&](int64_t b, int64_t e, int) { sum += static_cast<int>(e - b); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // workers go past the spin and wait
  pool.parallel_for(4, [&](int64_t b, int64_t e, int) { sum += static_cast<int>(e - b); });
  EXPECT_EQ(sum.load(), 8);
}

TEST(ThreadPool, EmptyRangeDoesNothing) {
  ThreadPool pool(2);
  bool called = false;
  pool.parallel_for(0, [&](int64_t, int64_t, int) { called = true; });
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace anelm::engine
