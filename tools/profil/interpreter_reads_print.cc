#include "interpreter_reads_print.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace profiling::cli {

void print_interpreter_reads(const std::vector<const outside::Sampler*>& samplers, bool at_sample_asked) {
  if (samplers.empty()) return;
  // Python's and Ruby's (issues 31, 34) alike, summed over each event's
  // sampler: how many samples got frames and which way they were read.
  // "did not fit": the frames read are not those of the sample's native
  // stack; the sample has the frame "[python: the stack moved before it
  // was read]" (outside/python_frames.h) or Ruby's (outside/ruby_frames.h).
  outside::RubyReads ruby;
  outside::PythonReads r;
  for (const outside::Sampler* sampler : samplers) {
    const outside::RubyReads one_ruby = sampler->ruby_reads();
    ruby.read_at_sample += one_ruby.read_at_sample;
    ruby.read_late += one_ruby.read_late;
    ruby.misfits_at_sample += one_ruby.misfits_at_sample;
    ruby.misfits_late += one_ruby.misfits_late;
    if (ruby.not_read.empty()) ruby.not_read = one_ruby.not_read;
    const outside::PythonReads one = sampler->python_reads();
    r.read_at_sample += one.read_at_sample;
    r.read_late += one.read_late;
    r.misfits_at_sample += one.misfits_at_sample;
    r.misfits_late += one.misfits_late;
    r.no_thread_state += one.no_thread_state;
  }
  const auto print = [&](const char* runtime, uint64_t at_sample, uint64_t late, uint64_t misfits_at_sample,
                         uint64_t misfits_late, uint64_t no_thread_state = 0) {
    if (at_sample + late == 0) return;
    const auto misfits = [](uint64_t n) { return std::to_string(n) + " did not fit"; };
    std::string how;
    if (at_sample != 0)
      how = std::to_string(at_sample) + " read at the sample by BPF (" + misfits(misfits_at_sample) + "), " +
            std::to_string(late) + " after the fact, a thread's first (" + misfits(misfits_late) + ")";
    else if (const std::string refused = samplers.front()->python_reads_refused(); !refused.empty())
      how = "read after the fact, BPF refused: " + refused + " (" + misfits(misfits_late) + ")";
    else
      how = std::string(at_sample_asked ? "read after the fact" : "read after the fact (--no-bpf)") +
            " (" + misfits(misfits_late) + ")";
    if (no_thread_state != 0) how += ", " + std::to_string(no_thread_state) + " whose thread's state was not found";
    std::fprintf(stderr, "profil: %s frames in %llu samples: %s\n", runtime,
                 static_cast<unsigned long long>(at_sample + late), how.c_str());
  };
  print("Ruby", ruby.read_at_sample, ruby.read_late, ruby.misfits_at_sample, ruby.misfits_late);
  if (!ruby.not_read.empty()) std::fprintf(stderr, "profil: %s\n", ruby.not_read.c_str());
  // Read after the fact, a thread no longer in the interpreter's list:
  // "[python: the thread's state was not found when read]".
  print("Python", r.read_at_sample, r.read_late, r.misfits_at_sample, r.misfits_late, r.no_thread_state);
}

}  // namespace profiling::cli
