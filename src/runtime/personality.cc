#include "runtime/personality.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/io.h"
#include "base/unique_fd.h"
#include "runtime/export.h"

namespace profiling::runtime {
namespace {
std::atomic<int> g_personality{-1};
}  // namespace

PersonalityRules rules_for(profil_personality personality) {
  using sampler::BinArithmetic;
  using sampler::BinLimit;
  switch (personality) {
    case PROFIL_PERSONALITY_SOLARIS:
      // OmniOS profil(2): scale 0x0002..0xffff, off at 0 or 1; illumos
      // computes (pc - off) * scale >> 17; a count reaching 32767 stops it.
      return {true, 0xffff, BinArithmetic::illumos, BinLimit::stop_at_32767, false};
    case PROFIL_PERSONALITY_OSF1:
      // OSF/1 profil(2): "Profiling is turned off by giving a scale
      // parameter of 1"; 0x10000 is the 1-1 mapping.
      return {true, 65536, BinArithmetic::printed, BinLimit::saturate, false};
    case PROFIL_PERSONALITY_OPENBSD:
      return {false, 65536, BinArithmetic::printed, BinLimit::saturate, true};
    case PROFIL_PERSONALITY_BSD:
    default:
      return {false, 65536, BinArithmetic::printed, BinLimit::saturate, false};
  }
}

profil_personality current_personality() {
  int p = g_personality.load(std::memory_order_acquire);
  if (p < 0) {
    const char* name = ::secure_getenv("PROFIL_PERSONALITY");
    p = name ? profil_personality_from_name(name) : -1;
    if (p < 0) p = PROFIL_PERSONALITY_BSD;
    int expected = -1;
    g_personality.compare_exchange_strong(expected, p);
    p = g_personality.load(std::memory_order_acquire);
  }
  return static_cast<profil_personality>(p);
}

WritableMemory::WritableMemory() {
  base::UniqueFd fd(::open("/proc/self/maps", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return;
  std::string maps;
  char chunk[8192];
  for (;;) {
    ssize_t n = base::read_full(fd.get(), chunk, sizeof chunk);
    if (n <= 0) break;
    maps.append(chunk, static_cast<size_t>(n));
  }
  // Lines are sorted by address; adjacent writable mappings are one range.
  size_t pos = 0;
  while (pos < maps.size()) {
    size_t eol = maps.find('\n', pos);
    if (eol == std::string::npos) eol = maps.size();
    const char* line = maps.c_str() + pos;
    char* rest = nullptr;
    uintptr_t lo = std::strtoull(line, &rest, 16);
    uintptr_t hi = (*rest == '-') ? std::strtoull(rest + 1, &rest, 16) : 0;
    bool writable = rest && rest[0] == ' ' && rest[1] == 'r' && rest[2] == 'w';
    if (writable && hi > lo) {
      if (!ranges_.empty() && ranges_.back().second == lo)
        ranges_.back().second = hi;
      else
        ranges_.emplace_back(lo, hi);
    }
    pos = eol + 1;
  }
}

bool WritableMemory::covers(const void* address, size_t size) const {
  if (size == 0) return true;
  const auto begin = reinterpret_cast<uintptr_t>(address);
  if (begin + size < begin) return false;
  // The last range starting at or below begin must reach the end.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), begin,
                             [](uintptr_t a, const std::pair<uintptr_t, uintptr_t>& r) { return a < r.first; });
  if (it == ranges_.begin()) return false;
  --it;
  return begin < it->second && begin + size <= it->second;
}

bool memory_is_writable(const void* address, size_t size) {
  if (size == 0) return true;
  return WritableMemory().covers(address, size);
}

void set_personality(profil_personality personality) {
  g_personality.store(personality, std::memory_order_release);
}

}  // namespace profiling::runtime

extern "C" {

PROFIL_EXPORT int profil_set_personality(profil_personality personality) {
  if (personality < PROFIL_PERSONALITY_BSD || personality > PROFIL_PERSONALITY_OPENBSD) {
    errno = EINVAL;
    return -1;
  }
  profiling::runtime::set_personality(personality);
  return 0;
}

PROFIL_EXPORT profil_personality profil_get_personality(void) {
  return profiling::runtime::current_personality();
}

PROFIL_EXPORT int profil_personality_from_name(const char* name) {
  if (name == nullptr) return -1;
  if (std::strcmp(name, "bsd") == 0 || std::strcmp(name, "netbsd") == 0 || std::strcmp(name, "glibc") == 0)
    return PROFIL_PERSONALITY_BSD;
  if (std::strcmp(name, "solaris") == 0 || std::strcmp(name, "omnios") == 0 || std::strcmp(name, "illumos") == 0)
    return PROFIL_PERSONALITY_SOLARIS;
  if (std::strcmp(name, "osf1") == 0 || std::strcmp(name, "tru64") == 0) return PROFIL_PERSONALITY_OSF1;
  if (std::strcmp(name, "openbsd") == 0) return PROFIL_PERSONALITY_OPENBSD;
  return -1;
}

}  // extern "C"
