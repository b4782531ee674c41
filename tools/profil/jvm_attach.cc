// HotSpot's attach mechanism, asked from outside (jvm_attach.h).
#include "jvm_attach.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "errno_text.h"
#include "outside/proc_process.h"

namespace profiling::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string proc(pid_t pid, const char* what) { return "/proc/" + std::to_string(pid) + "/" + what; }

// The value of a "Name:\tvalue" line of /proc/PID/status, "" without one.
std::string status_field(const std::string& status, const std::string& name) {
  const size_t at = status.find("\n" + name + ":");
  if (at == std::string::npos) return "";
  const size_t from = at + name.size() + 2, eol = status.find('\n', from);
  std::string value = status.substr(from, eol == std::string::npos ? std::string::npos : eol - from);
  value.erase(0, value.find_first_not_of(" \t"));
  return value;
}

// Its pid in its own pid namespace (the last of NSpid), the names it uses.
std::string namespace_pid(pid_t pid) {
  const std::string nspid = status_field(outside::read_text(proc(pid, "status")), "NSpid");
  const size_t last = nspid.find_last_of(" \t");
  const std::string own = last == std::string::npos ? nspid : nspid.substr(last + 1);
  return own.empty() ? std::to_string(pid) : own;
}

bool is_socket(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// A connected socket, -1 when the listener refuses (or is not there).
int connect_to(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) return fd;
  ::close(fd);
  return -1;
}

bool stopping(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(std::memory_order_relaxed); }

// The trigger file, in its /tmp, else its working directory (HotSpot looks
// in both; /tmp first leaves nothing, even for a moment, in the user's
// directory); owned by its user (HotSpot ignores one of another user's but
// root's). "" when neither can be written.
std::string write_trigger(pid_t pid, const std::string& nspid, uid_t uid, gid_t gid) {
  for (const std::string& dir : {proc(pid, "root") + "/tmp", proc(pid, "cwd")}) {
    const std::string path = dir + "/.attach_pid" + nspid;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) continue;
    if (::geteuid() == 0) (void)::fchown(fd, uid, gid);
    ::close(fd);
    return path;
  }
  return "";
}

}  // namespace

bool is_jvm(pid_t pid) {
  const std::string maps = outside::read_text(proc(pid, "maps"));
  return maps.find("/libjvm.so\n") != std::string::npos;
}

std::string jvm_not_askable(pid_t pid) {
  const std::string status = outside::read_text(proc(pid, "status"));
  if (status.empty()) return "it has ended";
  // SigCgt: the signals it has handlers for, a hex mask; SIGQUIT is bit 2.
  const unsigned long long caught = std::strtoull(status_field(status, "SigCgt").c_str(), nullptr, 16);
  if ((caught & (1ULL << (SIGQUIT - 1))) == 0)
    return "it does not catch SIGQUIT (still starting, or run with -Xrs): the signal that starts its attach listener would end it";
  for (const char* file : {"cmdline", "environ"}) {
    std::string words = outside::read_text(proc(pid, file));
    if (words.find("-XX:+DisableAttachMechanism") != std::string::npos)
      return "its attach mechanism is disabled (-XX:+DisableAttachMechanism)";
  }
  return "";
}

JvmAnswer ask_jvm(pid_t pid, const std::string& command, int timeout_ms, const std::atomic<bool>* stop) {
  JvmAnswer answer;
  if (std::string why = jvm_not_askable(pid); !why.empty()) {
    answer.problem = why;
    return answer;
  }
  const std::string nspid = namespace_pid(pid);
  const std::string socket_path = proc(pid, "root") + "/tmp/.java_pid" + nspid;
  const auto deadline = [&] { return Clock::now() + std::chrono::milliseconds(timeout_ms); };
  // A socket left by an earlier JVM of the same pid (one that crashed)
  // refuses: this one's listener is then started as if there were none,
  // and HotSpot makes its socket anew.
  int fd = is_socket(socket_path) ? connect_to(socket_path) : -1;
  if (fd < 0) {
    struct stat st;
    if (::stat(proc(pid, "").c_str(), &st) != 0) {
      answer.problem = "it has ended";
      return answer;
    }
    const std::string trigger = write_trigger(pid, nspid, st.st_uid, st.st_gid);
    if (trigger.empty()) {
      answer.problem = "no .attach_pid file could be written in its /tmp or working directory";
      return answer;
    }
    if (::kill(pid, SIGQUIT) != 0) {
      answer.problem = "SIGQUIT: " + errno_text(errno);
      ::unlink(trigger.c_str());
      return answer;
    }
    for (const auto until = deadline(); fd < 0 && Clock::now() < until && !stopping(stop);) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (is_socket(socket_path)) fd = connect_to(socket_path);
    }
    ::unlink(trigger.c_str());
    if (fd < 0) {
      answer.problem = "its attach listener did not answer within " + std::to_string(timeout_ms) + " ms";
      return answer;
    }
    answer.started_listener = true;
  }
  // Protocol 1, "jcmd", and its three arguments: the command line, two empty.
  std::string request = "1";
  request += '\0';
  request += "jcmd";
  request += '\0';
  request += command;
  request += std::string(3, '\0');
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      answer.problem = "the request could not be sent: " + errno_text(errno);
      ::close(fd);
      return answer;
    }
    sent += static_cast<size_t>(n);
  }
  std::string reply;
  for (const auto until = deadline(); Clock::now() < until && !stopping(stop);) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;  // the listener closes the connection after its answer
    reply.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t eol = reply.find('\n');
  const std::string status = reply.substr(0, eol);
  answer.output = eol == std::string::npos ? "" : reply.substr(eol + 1);
  answer.done = status == "0";
  if (!answer.done)
    answer.problem = reply.empty() ? "no answer" : "it answered " + status + (answer.output.empty() ? "" : ": " + answer.output);
  return answer;
}

}  // namespace profiling::cli
