#include "outside/lost_share.h"

namespace profiling::outside {

void LostShare::counted() {
  if (++records_ < kRecent) return;
  records_ /= 2;
  samples_ /= 2;
  carry_ = 0;
}

void LostShare::tree_sample(uint32_t pid, uint32_t tid) {
  ++samples_;
  pid_ = pid, tid_ = tid;
  counted();
}

void LostShare::other_record() { counted(); }

perf::Lost LostShare::samples_of(perf::Lost l) {
  if (samples_ == 0) {  // no recent sample of the tree (records_ >= samples_)
    l.lost = 0;
    return l;
  }
  const unsigned __int128 scaled = static_cast<unsigned __int128>(l.lost) * samples_ + carry_;
  l.lost = static_cast<uint64_t>(scaled / records_);
  carry_ = static_cast<uint64_t>(scaled % records_);
  l.who.pid = pid_, l.who.tid = tid_;
  return l;
}

}  // namespace profiling::outside
