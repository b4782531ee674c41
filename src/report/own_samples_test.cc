// Profil's own samples set apart (issue 22): which frames make a sample
// profil's, on a synthetic profile whose libprofil.so cannot be read (so
// none of its functions is known as exported: every frame in it counts).
#include "report/own_samples.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace profiling::report {
namespace {

constexpr uint64_t kProgram = 0x400000, kLibc = 0x7f0000000000, kProfil = 0x7f1000000000;

format::Profile profile_with_objects() {
  format::Profile p;
  p.mappings = {{kProgram, kProgram + 0x10000, 0, "/usr/bin/app", ""},
                {kLibc, kLibc + 0x10000, 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", ""},
                {kProfil, kProfil + 0x10000, 0, "/nonexistent/lib/libprofil.so.0.1.0", ""}};
  return p;
}

void add(format::Profile* p, uint64_t leaf, std::vector<uint64_t> callers, uint64_t count) {
  p->samples.push_back({leaf, count, 0, p->stacks.intern(callers, false), 0});
}

TEST(OwnSamples, ProfilsWorkIsCountedApartAndTheProgramsIsKept) {
  format::Profile p = profile_with_objects();
  add(&p, kProfil + 0x10, {kLibc + 0x20, kProgram + 0x30}, 3);   // its handler, over __restore_rt
  add(&p, kLibc + 0x40, {kProfil + 0x50, kLibc + 0x60}, 5);      // memcpy called by its dump at exit
  add(&p, format::kKernelAddress, {kLibc + 0x70, kProfil + 0x80}, 7);  // write(2) of its dump
  add(&p, kProgram + 0x90, {kProfil + 0xa0, kLibc + 0xb0}, 11);  // a thread under its trampoline
  add(&p, kLibc + 0xc0, {kProgram + 0xd0, kProfil + 0xa0}, 13);  // the thread's malloc
  add(&p, kLibc + 0xe0, {}, 17);                                 // libc, callers unknown
  add(&p, kProgram + 0xf0, {}, 19);
  EXPECT_EQ(set_apart_own_samples(&p), 3u + 5 + 7);
  EXPECT_EQ(p.own_samples, 15u);
  EXPECT_EQ(p.total_count(), 11u + 13 + 17 + 19);
  for (const format::Sample& s : p.samples) {
    EXPECT_FALSE(p.mappings[2].contains(s.address));
    EXPECT_NE(s.address, format::kKernelAddress);
    // The program's stacks lose libprofil's frames (the trampoline).
    for (const uint64_t frame : p.stacks.callers(s.stack)) EXPECT_FALSE(p.mappings[2].contains(frame));
  }
  // The chains left are the kept samples' own: {libc} and {program}.
  EXPECT_EQ(p.stacks.size(), 2u);
  const auto thread = std::find_if(p.samples.begin(), p.samples.end(),
                                   [](const format::Sample& s) { return s.address == kProgram + 0x90; });
  ASSERT_NE(thread, p.samples.end());
  EXPECT_EQ(std::vector<uint64_t>(p.stacks.callers(thread->stack).begin(), p.stacks.callers(thread->stack).end()),
            std::vector<uint64_t>{kLibc + 0xb0});
  // Again: nothing more is profil's, the count stays.
  EXPECT_EQ(set_apart_own_samples(&p), 0u);
  EXPECT_EQ(p.own_samples, 15u);
}

TEST(OwnSamples, AProfileWithoutLibprofilIsUntouched) {
  format::Profile p = profile_with_objects();
  p.mappings.pop_back();
  add(&p, kLibc + 0x40, {kProfil + 0x50}, 5);  // an address no mapping holds
  const format::Profile before = p;
  EXPECT_EQ(set_apart_own_samples(&p), 0u);
  EXPECT_EQ(p, before);
}

}  // namespace
}  // namespace profiling::report
