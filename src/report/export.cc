#include "report/export.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "format/gmon.h"
#include "format/pprof.h"
#include "report/report.h"

namespace profiling::report {

std::string export_pprof(const format::Profile& profile, Symbolizer& symbolizer) {
  return format::encode_pprof(profile, [&](const format::Mapping& mapping, uint64_t address) {
    // Frames the profile carried go out as they came (encode_pprof writes
    // them when this gives none); passing them lets the warning say so.
    // Inlined functions become lines of the location, innermost first.
    return symbolizer.frames(&mapping, symbolizer.symbolize(&mapping, address, profile.frames_for(address)));
  });
}

std::string export_gmon(const format::Profile& profile, Symbolizer& symbolizer, uint64_t* left_out) {
  const format::Mapping* program = nullptr;
  for (const format::Mapping& m : profile.mappings)
    if (!profile.program.empty() && m.path == profile.program) {
      program = &m;
      break;
    }
  if (!program && !profile.mappings.empty()) program = &profile.mappings.front();
  if (!program) throw std::runtime_error("the profile maps no executable");
  // gprof reads link-time addresses: the load bias is what the mapping adds
  // to them (runtime = link-time + bias). The histogram spans the object's
  // executable PT_LOAD segment.
  uint64_t link = 0;
  if (!symbolizer.file_address(*program, program->start, &link))
    throw std::runtime_error(program->path + ": cannot read its program headers");
  uint64_t bias = program->start - link;
  uint64_t text_low = UINT64_MAX, text_high = 0;
  for (const LoadSegment& segment : symbolizer.segments(*program)) {
    if (!segment.executable) continue;
    text_low = std::min(text_low, segment.vaddr);
    text_high = std::max(text_high, segment.vaddr + segment.mem_size);
  }
  if (text_low >= text_high) throw std::runtime_error(program->path + ": no executable segment");
  uint32_t rate = profile.period_ns ? static_cast<uint32_t>((1'000'000'000 + profile.period_ns / 2) / profile.period_ns) : 100;
  format::GmonData data;
  data.histograms.push_back(format::histogram_from_samples(profile, bias, text_low, text_high, rate));
  if (left_out) {
    *left_out = 0;
    for (const format::Sample& s : profile.samples)
      if (s.address - bias < text_low || s.address - bias >= text_high || !program->contains(s.address))
        *left_out += s.count;
  }
  return format::encode_gmon(data, format::GmonFlavor::gnu);
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  std::string temp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw std::runtime_error(std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) {
      int saved = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      throw std::runtime_error(std::strerror(saved));
    }
    done += static_cast<size_t>(wrote);
  }
  bool synced = ::fsync(fd) == 0;
  int saved = errno;
  bool closed = ::close(fd) == 0;
  if (synced && !closed) saved = errno;
  if (!synced || !closed || ::rename(temp.c_str(), path.c_str()) != 0) {
    if (synced && closed) saved = errno;
    ::unlink(temp.c_str());
    throw std::runtime_error(std::strerror(saved));
  }
}

}  // namespace profiling::report
