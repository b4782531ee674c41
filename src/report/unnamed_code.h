// Names for code no symbol table names (a stripped program whose debug
// file is not installed): "<object>+0x<address>", one per function as the
// object's call frame information delimits them, instead of one [unknown]
// row for the whole object.
//
// The grouping: perf report shows each unresolved sample address as its
// own row ("[.] 0x000000000001a2b3", one per instruction sampled); that
// scatters one hot function of xz over hundreds of rows. strip(1) keeps
// .eh_frame (unwinding needs it), and each of its FDEs covers one function
// (the compiler emits one per function, gcc's -fasynchronous-unwind-tables,
// on by default on x86-64): the row is the FDE's start, so all the samples
// of one function share one row, named with the link-time address objdump
// --start-address and addr2line -e take. An address no FDE covers gets a
// row of its own, as perf gives it.
#ifndef PROFIL_REPORT_UNNAMED_CODE_H
#define PROFIL_REPORT_UNNAMED_CODE_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace profiling::report {

struct Symbol;

class UnnamedCode {
 public:
  UnnamedCode();
  ~UnnamedCode();
  UnnamedCode(const UnnamedCode&) = delete;
  UnnamedCode& operator=(const UnnamedCode&) = delete;

  // symbol: an address of the readable object at path (its link-time
  // address in symbol->file_address) that no symbol table named. Sets its
  // function to "<basename>+0x<start>" and function_address to the start
  // of the FDE covering it (the address itself without one); the size
  // stays 0 and known false: nothing here is a name from the object.
  void name(const std::string& path, Symbol* symbol);

 private:
  struct Object;
  std::map<std::string, std::unique_ptr<Object>> objects_;  // by path
};

}  // namespace profiling::report

#endif  // PROFIL_REPORT_UNNAMED_CODE_H
