#include "interp/python_stack.h"

#include "interp/python_walk.h"

namespace profiling::interp {

std::unique_ptr<PythonStackReader> PythonStackReader::open(pid_t pid, std::string* why) {
  std::optional<PythonTarget> target = find_python(pid, why);
  if (!target) return nullptr;
  return std::unique_ptr<PythonStackReader>(new PythonStackReader(*target));
}

PythonStack PythonStackReader::read(pid_t tid, uint64_t thread_state, uint32_t depth) {
  PythonStack stack;
  stack.tid = tid;
  stack.thread_state = thread_state;
  std::vector<RawFrame> raw(depth);
  const WalkResult walked = walk_python_frames(target_.layout, memory_, thread_state, raw.data(), depth);
  stack.status = walked.status;
  for (uint32_t i = 0; i < walked.count; ++i) {
    PythonFrame frame;
    frame.entry = (raw[i].flags & kEntryFrame) != 0;
    const uint32_t id = namer_.identify(raw[i].code);
    if (id != PythonCodeNamer::kNoCode) {
      const PythonCode& code = namer_.code(id);
      frame.named = true;
      frame.name = code.name;
      frame.file = code.file;
      frame.first_line = code.first_line;
      frame.line = namer_.line(code, raw[i].instruction);
    }
    stack.frames.push_back(std::move(frame));
  }
  return stack;
}

std::optional<PythonStack> PythonStackReader::thread(pid_t tid, uint32_t depth) {
  const uint64_t thread_state = threads_.thread_state(tid);
  if (thread_state == 0) return std::nullopt;
  return read(tid, thread_state, depth);
}

std::vector<PythonStack> PythonStackReader::all_threads(uint32_t depth) {
  std::vector<PythonStack> stacks;
  for (const auto& [tid, thread_state] : threads_.all()) stacks.push_back(read(tid, thread_state, depth));
  return stacks;
}

}  // namespace profiling::interp
