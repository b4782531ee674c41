// dlopen, interposed: code loaded at run time joins the unwinder's list of
// objects (src/unwind/code_table.h) before its first sample is unwound (a
// dl_iterate_phdr walk; no CFI is read); without a stack table installed this is
// one load and a branch.
//
// A known cost of interposing dlopen: glibc searches a bare name in the
// DT_RUNPATH of the object that called dlopen, found from the return
// address, which is now inside libprofil.so (no RUNPATH), so a library that
// dlopens a bare name found only through its own RUNPATH would not find it.
// Names with a '/' (python's extension modules, most plugins) and names in
// LD_LIBRARY_PATH, the executable's DT_RPATH or the system directories are
// unaffected. (A static program has no interposers: the unwinder notes a PC
// in no known object and sampler::unwind_tables_stale() says a refresh is
// due.)
#include <dlfcn.h>

#include "runtime/export.h"
#include "sampler/sampler.h"

extern "C" PROFIL_EXPORT void* dlopen(const char* file, int mode) {
  using dlopen_fn = void* (*)(const char*, int);
  static auto real = reinterpret_cast<dlopen_fn>(::dlsym(RTLD_NEXT, "dlopen"));
  if (real == nullptr) return nullptr;
  void* handle = real(file, mode);
  if (handle != nullptr) profiling::sampler::refresh_unwind_tables();
  return handle;
}
