// Streaming read bandwidth with T threads: each thread sums its half of a buffer (512 MiB by default,
// transparent huge pages asked for) with 256-bit loads, four accumulators, no prefetch hints; the best
// and median of `reps` passes, as JSON. The decode ceilings in docs/performance.md divide by this figure;
// ../shared/peers/bin/peer-membw's read loop reports less on the same machine (the README says by how much).
// Usage: bench_membw [threads=2] [mib=512] [reps=10]
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

#if defined(__x86_64__)
__attribute__((target("avx2"))) double sum_avx2(const char* p, const char* end) {
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  for (; p < end; p += 128) {
    a0 = _mm256_add_pd(a0, _mm256_load_pd(reinterpret_cast<const double*>(p)));
    a1 = _mm256_add_pd(a1, _mm256_load_pd(reinterpret_cast<const double*>(p + 32)));
    a2 = _mm256_add_pd(a2, _mm256_load_pd(reinterpret_cast<const double*>(p + 64)));
    a3 = _mm256_add_pd(a3, _mm256_load_pd(reinterpret_cast<const double*>(p + 96)));
  }
  double out[4];
  _mm256_storeu_pd(out, _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
  return out[0] + out[1] + out[2] + out[3];
}
#endif

double sum_portable(const char* p, const char* end) {
  double a[8] = {};
  for (; p < end; p += 64) {
    const auto* d = reinterpret_cast<const double*>(p);
    for (int i = 0; i < 8; ++i) a[i] += d[i];
  }
  return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

double sum(const char* p, const char* end) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) return sum_avx2(p, end);
#endif
  return sum_portable(p, end);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t mib = argc > 2 ? std::atoll(argv[2]) : 512;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 10;
  if (threads < 1 || threads > 256 || mib < 1 || mib > 65536 || reps < 1 || reps > 1000) {
    std::fprintf(stderr, "usage: bench_membw [threads 1-256] [mib 1-65536] [reps 1-1000]\n");
    return 2;
  }
  constexpr size_t kAlign = size_t{2} << 20;
  const size_t share = (static_cast<size_t>(mib) << 20) / threads / 128 * 128;  // whole 128-byte steps
  const size_t bytes = (share * threads + kAlign - 1) / kAlign * kAlign;
  auto* buf = static_cast<char*>(std::aligned_alloc(kAlign, bytes));
  if (buf == nullptr) {
    std::fprintf(stderr, "bench_membw: cannot allocate %zu bytes\n", bytes);
    return 1;
  }
  madvise(buf, bytes, MADV_HUGEPAGE);
  std::memset(buf, 1, bytes);  // touch every page before timing

  std::vector<double> gb_s;
  std::vector<double> sums(static_cast<size_t>(threads));
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] { sums[t] = sum(buf + share * t, buf + share * (t + 1)); });
    }
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gb_s.push_back(static_cast<double>(share * threads) / s / 1e9);
  }
  std::free(buf);
  std::vector<double> sorted = gb_s;
  std::sort(sorted.begin(), sorted.end());
  double checksum = 0;
  for (double x : sums) checksum += x;
  nlohmann::json out = {{"tool", "bench_membw"}, {"threads", threads}, {"mib", mib}, {"reps", reps},
                        {"read_gb_s", sorted.back()}, {"read_gb_s_median", sorted[sorted.size() / 2]},
                        {"read_gb_s_all", gb_s}, {"checksum", checksum}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
