#include "report/debuginfod.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace profiling::report {

namespace {

// libdebuginfod's functions, looked up in the library libdwfl loads itself
// (libdwfl/debuginfod-client.c dlopens libdebuginfod.so.1): linking it
// would load libcurl and its TLS and Kerberos libraries into every profil
// command, 24 ms of CPU at start-up, for the few runs that set
// DEBUGINFOD_URLS.
struct Library {
  decltype(&debuginfod_set_progressfn) set_progressfn = nullptr;
  decltype(&debuginfod_set_user_data) set_user_data = nullptr;
  decltype(&debuginfod_get_user_data) get_user_data = nullptr;
  decltype(&debuginfod_get_url) get_url = nullptr;
  decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
};

const Library* library() {
  static const Library* loaded = [] () -> const Library* {
    void* handle = dlopen("libdebuginfod.so.1", RTLD_LAZY);
    if (handle == nullptr) return nullptr;
    static Library functions;
    functions.set_progressfn =
        reinterpret_cast<decltype(functions.set_progressfn)>(dlsym(handle, "debuginfod_set_progressfn"));
    functions.set_user_data =
        reinterpret_cast<decltype(functions.set_user_data)>(dlsym(handle, "debuginfod_set_user_data"));
    functions.get_user_data =
        reinterpret_cast<decltype(functions.get_user_data)>(dlsym(handle, "debuginfod_get_user_data"));
    functions.get_url = reinterpret_cast<decltype(functions.get_url)>(dlsym(handle, "debuginfod_get_url"));
    functions.find_debuginfo =
        reinterpret_cast<decltype(functions.find_debuginfo)>(dlsym(handle, "debuginfod_find_debuginfo"));
    const bool all = functions.set_progressfn && functions.set_user_data && functions.get_user_data &&
                     functions.get_url && functions.find_debuginfo;
    return all ? &functions : nullptr;
  }();
  return loaded;
}

}  // namespace

bool debuginfod_enabled() {
  // debuginfod_find_*(3): an unset or empty DEBUGINFOD_URLS means no server.
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  return urls != nullptr && urls[strspn(urls, " ")] != '\0';
}

void DebuginfodLookup::attach(Dwfl* dwfl) {
  if (!debuginfod_enabled() || library() == nullptr) return;
  // The client libdwfl itself asks.
  client_ = dwfl_get_debuginfod_client(dwfl);
  if (client_ == nullptr) return;
  library()->set_user_data(client_, this);
  library()->set_progressfn(client_, &DebuginfodLookup::progress);
}

void DebuginfodLookup::begin(const std::string& object) {
  object_ = object;
  printed_ = false;
  last_done_ = -1;
}

void DebuginfodLookup::end(bool found) {
  if (!printed_) return;
  std::fprintf(stderr, isatty(STDERR_FILENO) ? "\r\033[K%s\n" : "%s\n",
               ("profil: debuginfod: " + object_ + (found ? ": debug file found" : ": no server has its debug file"))
                   .c_str());
  printed_ = false;
}

int DebuginfodLookup::find_debuginfo(const std::string& object, const std::string& build_id, std::string* path) {
  if (client_ == nullptr || build_id.empty()) return -1;
  begin(object);
  char* found = nullptr;
  // A build id length of 0 says it is given as hex text.
  const int fd = library()->find_debuginfo(client_, reinterpret_cast<const unsigned char*>(build_id.c_str()), 0, &found);
  end(fd >= 0);
  if (found) {
    *path = found;
    std::free(found);
  }
  return fd;
}

// Called while a transfer runs (done and total bytes; total 0 or less when
// the server has not said). Returning nonzero would cancel the download.
int DebuginfodLookup::progress(debuginfod_client* client, long done, long total) {
  auto* self = static_cast<DebuginfodLookup*>(library()->get_user_data(client));
  if (self == nullptr) return 0;
  const bool terminal = isatty(STDERR_FILENO);
  if (!self->printed_) {
    const char* url = library()->get_url(client);
    std::fprintf(stderr, "profil: debuginfod: fetching the debug file of %s%s%s%s", self->object_.c_str(),
                 url ? " from " : "", url ? url : "", terminal ? "" : "\n");
    self->printed_ = true;
  }
  // On a terminal the line counts the bytes as they come, at most once per
  // 64 KiB; elsewhere (a log) the first line is all.
  if (terminal && done >= self->last_done_ + 65536) {
    self->last_done_ = done;
    if (total > 0)
      std::fprintf(stderr, "\r\033[Kprofil: debuginfod: fetching the debug file of %s: %ld of %ld KiB",
                   self->object_.c_str(), done / 1024, total / 1024);
    else
      std::fprintf(stderr, "\r\033[Kprofil: debuginfod: fetching the debug file of %s: %ld KiB", self->object_.c_str(),
                   done / 1024);
  }
  return 0;
}

}  // namespace profiling::report
