// Reading the profiles `profil report`, `merge` and `diff` are given, whatever
// wrote them: pprof (gzip'd profile.proto), gmon.out (GNU or BSD layout) and
// the runtime's raw dump (*.profraw). The type is found from the content, not
// the file name. Merging sums profiles as `gprof -s` does (binutils
// gprof/gprof.texi, "-s"): objects matched by build id (else path), samples
// moved into one address layout, inputs of different sampling periods refused.
#ifndef PROFIL_REPORT_INPUT_H
#define PROFIL_REPORT_INPUT_H

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "format/profile.h"

namespace profiling::report {

// A problem with one named input; what() is the problem, file() the name.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, const std::string& problem)
      : std::runtime_error(problem), file_(std::move(file)) {}
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

enum class InputKind { pprof, gmon, profraw };
const char* input_kind_name(InputKind kind);

struct LoadedProfile {
  std::string path;
  InputKind kind = InputKind::pprof;
  format::Profile profile;
};

// Which reader the bytes belong to; throws InputError(path, ...) when none.
InputKind detect_input_kind(std::string_view bytes, const std::string& path);

// Reads and decodes one file. gmon files carry no program name: `exe` names
// the executable (gprof's a.out when empty). Throws InputError.
LoadedProfile load_profile(const std::string& path, const std::string& exe = {});
// Decodes bytes already read (for tests); `path` only names them in errors.
LoadedProfile decode_profile(std::string_view bytes, const std::string& path, const std::string& exe = {});

// Sums profiles (ProfileMerger, report/merge.h, folds them one at a time:
// `profil merge` and `report` sum their files as they read them). Throws
// InputError naming the input whose sampling period differs from the first
// one's. Counts that would pass 2^64-1 stay there and set *saturated (when
// given). The samples come out sorted by address, one per address, process
// and stack: of several inputs, each sample keeps the pid of the process it
// came from (Sample::pid, else its profile's pid), `programs` says which
// programs ran how many of the processes and `program` describes them
// ("python3.11 (3 processes), sh (1)"). One input comes out as it was.
format::Profile merge_profiles(const std::vector<LoadedProfile>& inputs, bool* saturated = nullptr);
// The same, moving the inputs' samples, stacks and names instead of copying
// them (their profiles are left without them): a large profile is never
// held twice.
format::Profile merge_profiles(std::vector<LoadedProfile>&& inputs, bool* saturated = nullptr);

// gmon histograms hold link-time addresses; gives each mapping of `profile`
// the file offset that makes runtime == link-time through the object's
// PT_LOAD headers, so the symbolizer needs no special case.
void anchor_link_time_mappings(format::Profile* profile);

}  // namespace profiling::report

#endif  // PROFIL_REPORT_INPUT_H
