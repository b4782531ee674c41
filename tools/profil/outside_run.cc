#include "outside_run.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "interpreter_reads_print.h"

namespace profiling::cli {

void print_unreadable_threads(size_t threads) {
  if (threads == 0) return;
  std::fprintf(stderr,
               "profil: the blocked time of %zu thread%s is not sampled: profil may not read %s /proc/PID/task/TID/syscall "
               "(a non-dumpable or set-ID process; tracing it needs CAP_SYS_PTRACE)\n",
               threads, threads == 1 ? "" : "s", threads == 1 ? "its" : "their");
}

void print_source_notes(const std::vector<std::string>& notes) {
  for (const std::string& line : notes) std::fprintf(stderr, "profil: %s\n", line.c_str());
}

OutsideRun::OutsideRun(const OutsideRunOptions& options) : options_(options) {
  if (options_.events.empty()) options_.events.emplace_back();
  for (const outside::Event& event : options_.events)
    samplers_.push_back({event, std::make_unique<outside::Sampler>(outside::SamplerOptions{
                                    .hz = options.hz, .event = event, .stacks = options.stacks,
                                    .wall = options.wall && event.is_time(), .interpreter_frames = options.interpreter_frames,
                                    .interpreter_frames_at_sample = options.interpreter_frames_at_sample,
                                    .kernel_frames = options.kernel_frames})});
}

uint64_t OutsideRun::samples() const {
  uint64_t n = 0;
  for (const EventSampler& e : samplers_) n += e.sampler->samples();
  return n;
}

uint64_t OutsideRun::lost() const {
  uint64_t n = 0;
  for (const EventSampler& e : samplers_) n += e.sampler->lost();
  return n;
}

std::vector<std::string> OutsideRun::notes() const {
  // Each event's sampler says what concerns it; a line two say is said once.
  std::vector<std::string> notes;
  for (const EventSampler& e : samplers_)
    for (std::string& line : e.sampler->notes())
      if (std::find(notes.begin(), notes.end(), line) == notes.end()) notes.push_back(std::move(line));
  return notes;
}

void OutsideRun::print_python_reads() const {
  std::vector<const outside::Sampler*> samplers;
  for (const EventSampler& e : samplers_) samplers.push_back(e.sampler.get());
  print_interpreter_reads(samplers, options_.interpreter_frames_at_sample);
}

OutsideRun::~OutsideRun() { clock_.stop(); }

// Each event's sampler in turn: the first refusal is the answer (one
// line naming the event's setting at fault).
std::string OutsideRun::open_before_exec(pid_t pid) {
  root_pid_ = pid;
  for (EventSampler& e : samplers_)
    if (std::string why = e.sampler->open_before_exec(pid); !why.empty()) return why;
  return "";
}

std::string OutsideRun::attach(pid_t pid) {
  root_pid_ = pid;
  for (EventSampler& e : samplers_)
    if (std::string why = e.sampler->attach(pid); !why.empty()) return why;
  return "";
}

std::string OutsideRun::attach_all() {
  for (EventSampler& e : samplers_)
    if (std::string why = e.sampler->attach_all(); !why.empty()) return why;
  return "";
}

void OutsideRun::stop_sampling() {
  for (EventSampler& e : samplers_) e.sampler->stop();
}

void OutsideRun::start() {
  for (EventSampler& e : samplers_) e.sampler->start();
  // The duration counts from the events' start, once start() has returned
  // (issue 32: among 1,000 busy threads the reader took seconds to enable
  // them, and a 2-second attach had sampled for 0.2 s, or not at all).
  started_ = std::chrono::steady_clock::now();
  // steady_clock is CLOCK_MONOTONIC (libstdc++ on Linux), perf's clock.
  const auto end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      started_.time_since_epoch() + std::chrono::duration<double>(options_.duration_s));
  if (options_.duration_s > 0)
    for (EventSampler& e : samplers_) e.sampler->end_at(static_cast<uint64_t>(end_ns.count()));
  start_clock();
}

bool OutsideRun::duration_over() const {
  std::lock_guard<std::mutex> hold(lock_);
  return sampling_over_;
}

// From the start of sampling (a copy that samples on after --no-wait
// keeps the run's clock): a snapshot every --every, and at --duration the
// sampling ends here; the program runs on unprofiled.
void OutsideRun::start_clock() {
  clock_.start(started_, options_.every_s, options_.duration_s, [this] { write(false); },
               [this] {
                 {
                   std::lock_guard<std::mutex> hold(lock_);
                   sampling_over_ = true;
                 }
                 stop_sampling();
                 write(true);
               });
}

Conversion OutsideRun::finish() {
  clock_.stop();
  bool over;
  {
    std::lock_guard<std::mutex> hold(lock_);
    over = sampling_over_;
  }
  if (!over) {
    stop_sampling();
    write(true);
  }
  return std::move(conversion_);
}

namespace {

// A process of the run still there (a zombie not yet reaped is: its
// parent may still be reading its last output). EPERM: there, and
// another user's now (a server that dropped its privileges).
bool alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

std::vector<pid_t> still_running(const std::vector<pid_t>& pids) {
  std::vector<pid_t> out;
  for (pid_t pid : pids)
    if (alive(pid)) out.push_back(pid);
  return out;
}

}  // namespace

Conversion OutsideRun::finish_leaving_running(std::vector<pid_t>* left) {
  left->clear();
  clock_.stop();
  if (duration_over()) return finish();  // sampling has ended: all is written
  std::vector<pid_t> running;
  for (EventSampler& e : samplers_) {
    e.sampler->pause();
    for (pid_t pid : still_running(e.sampler->running()))
      if (std::find(running.begin(), running.end(), pid) == running.end()) running.push_back(pid);
  }
  if (running.empty()) return finish();
  // Every ring was read past the ends (the program's exit came before its
  // wait returned), so the ended images are whole.
  std::vector<std::vector<outside::ImageProfile>> ended;
  for (EventSampler& e : samplers_) ended.push_back(e.sampler->take_ended());
  const auto write_ended = [&] {
    for (size_t i = 0; i < samplers_.size(); ++i) write_images(std::move(ended[i]), samplers_[i].event);
  };
  std::fflush(nullptr);
  // The copy maps the rings again before this process lets go of them
  // (outside/sampler.h, map_rings_again): it says so on this pipe, or
  // closes it by ending.
  int mapped[2];
  if (::pipe2(mapped, O_CLOEXEC) != 0) mapped[0] = mapped[1] = -1;
  const pid_t copy = mapped[0] >= 0 ? ::fork() : -1;
  if (copy == 0) {
    ::close(mapped[0]);
    sample_until_ended(mapped[1]);
  }
  if (mapped[1] >= 0) ::close(mapped[1]);
  char ready = 0;
  if (copy > 0)
    while (::read(mapped[0], &ready, 1) < 0 && errno == EINTR) {
    }
  if (mapped[0] >= 0) ::close(mapped[0]);
  if (copy > 0 && ready != 'm') {
    // It could not map them (and has ended): sample on here instead.
    std::fprintf(stderr, "profil: the copy that would sample on could not take the rings: what is left running is profiled until now\n");
    for (EventSampler& e : samplers_) e.sampler->start();
    write_ended();
    return finish();
  }
  if (copy < 0) {
    std::fprintf(stderr, "profil: cannot leave the sampling running (fork: %s): what is left running is profiled until now\n",
                 std::strerror(errno));
    write_ended();
    return finish();
  }
  for (EventSampler& e : samplers_) e.sampler->abandon();
  write_ended();
  *left = std::move(running);
  return std::move(conversion_);
}

void OutsideRun::sample_until_ended(int mapped) {
  // Its own session, so the terminal's ^C and hangup are not its; standard
  // streams on /dev/null, so a pipe the caller reads ends with the tool.
  ::setsid();
  if (const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC); null >= 0) {
    for (int fd = 0; fd <= 2; ++fd) ::dup2(null, fd);
    if (null > 2) ::close(null);
  }
  for (EventSampler& e : samplers_)
    if (!e.sampler->map_rings_again().empty()) ::_exit(1);
  (void)!::write(mapped, "m", 1);
  ::close(mapped);
  sigset_t ending;
  sigemptyset(&ending);
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&ending, signo);
  ::sigprocmask(SIG_BLOCK, &ending, nullptr);
  conversion_ = Conversion();
  for (EventSampler& e : samplers_) e.sampler->start();
  start_clock();
  // Until the processes left (and those they start) have ended, the
  // duration is over, or a signal asks for the profiles now.
  const timespec look{0, 100'000'000};
  const auto any_running = [this] {
    for (EventSampler& e : samplers_)
      if (!still_running(e.sampler->running()).empty()) return true;
    return false;
  };
  while (!duration_over() && any_running())
    if (siginfo_t info{}; ::sigtimedwait(&ending, &info, &look) > 0) break;
  finish();
  ::_exit(0);
}

}  // namespace profiling::cli
