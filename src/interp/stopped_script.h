// For the interp tests (python_test.cc, ruby_test.cc): an interpreter run
// on a script that stops where the test reads it from outside. The script
// writes "ready\n" to its stdout when it has reached its stop, and blocks
// reading its stdin, which the test keeps open and never writes.
//
// NOT async-signal-safe: test code.
#ifndef PROFIL_INTERP_STOPPED_SCRIPT_H
#define PROFIL_INTERP_STOPPED_SCRIPT_H

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

extern char** environ;

namespace profiling::interp {

class StoppedScript {
 public:
  // Writes script to a file of a new temporary folder (named name), runs
  // program on it and waits for its "ready". false when any of it failed.
  bool start(const char* program, const std::string& name, const char* script) {
    char dir_template[] = "/tmp/profil_interp_XXXXXX";
    if (::mkdtemp(dir_template) == nullptr) return false;
    dir_ = dir_template;
    path_ = dir_ + "/" + name;
    std::ofstream(path_) << script;
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return false;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    char* argv[] = {const_cast<char*>(program), const_cast<char*>(path_.c_str()), nullptr};
    const bool spawned = ::posix_spawn(&pid_, program, &actions, nullptr, argv, environ) == 0;
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    char ready[6] = {};
    const bool ok = spawned && ::read(out[0], ready, 6) == 6;
    ::close(out[0]);
    return ok;
  }
  ~StoppedScript() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (stdin_ >= 0) ::close(stdin_);
    if (!path_.empty()) ::unlink(path_.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  pid_t pid() const { return pid_; }
  const std::string& path() const { return path_; }

 private:
  pid_t pid_ = 0;
  int stdin_ = -1;
  std::string dir_, path_;
};

}  // namespace profiling::interp

#endif  // PROFIL_INTERP_STOPPED_SCRIPT_H
