// The program `make demo` profiles with `profil run`: an ordinary C++
// program (no -pg, not linked with libprofil) with a few hot functions, a
// worker thread and a shared library of its own, running for about 1.5 s
// of CPU time in all (bounded by CPU time, not wall time).
#include <time.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

extern "C" uint64_t demo_checksum(const unsigned char* data, size_t size, int rounds);

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

template <typename Work>
void for_cpu_seconds(double seconds, Work work) {
  const double start = thread_cpu_seconds();
  while (thread_cpu_seconds() - start < seconds) work();
}

__attribute__((noinline)) uint64_t count_primes(uint64_t limit) {
  uint64_t count = 0;
  for (uint64_t n = 2; n < limit; ++n) {
    bool prime = true;
    for (uint64_t d = 2; d * d <= n; ++d)
      if (n % d == 0) {
        prime = false;
        break;
      }
    count += prime;
  }
  return count;
}

__attribute__((noinline)) double integrate_sine(int steps) {
  double sum = 0, dx = M_PI / steps;
  for (int i = 0; i < steps; ++i) sum += std::sin(i * dx) * dx;
  return sum;
}

__attribute__((noinline)) void multiply_matrices(std::vector<double>& c, const std::vector<double>& a,
                                                 const std::vector<double>& b, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += a[i * n + k] * b[k * n + j];
      c[i * n + j] = s;
    }
}

}  // namespace

int main() {
  volatile uint64_t sink = 0;
  // A worker thread: matrix products for 0.4 s of its CPU time.
  std::thread worker([&sink] {
    const int n = 64;
    std::vector<double> a(n * n, 1.5), b(n * n, 0.5), c(n * n);
    for_cpu_seconds(0.4, [&] {
      multiply_matrices(c, a, b, n);
      sink = sink + static_cast<uint64_t>(c[7]);
    });
  });
  // The main thread: primes (0.5 s), the library's checksum (0.3 s), sine (0.3 s).
  for_cpu_seconds(0.5, [&] { sink = sink + count_primes(20000); });
  std::vector<unsigned char> buffer(1 << 16, 7);
  for_cpu_seconds(0.3, [&] { sink = sink + demo_checksum(buffer.data(), buffer.size(), 4); });
  for_cpu_seconds(0.3, [&] { sink = sink + static_cast<uint64_t>(integrate_sine(200000) * 1000); });
  worker.join();
  std::printf("run_demo: done (%llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}
