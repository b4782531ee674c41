// Secure execution (issue 11, case 1): in a set-user-ID program linked with
// libprofil, run by an ordinary user, no environment variable may choose
// where the privileged process writes: GMON_OUT_PREFIX, PROFDIR and
// PROFIL_RUN_DIR are ignored (secure_getenv), the preload runtime stays
// off, and the -pg runtime writes gmon.out in the current directory, as
// glibc's does. Needs root (to make a set-user-ID root copy and switch to
// an unprivileged user); skipped otherwise.
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

fs::path build_dir() {
  const char* dir = std::getenv("PROFIL_BUILD_DIR");
  return dir != nullptr ? fs::path(dir) : fs::current_path();
}

struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "profil-secure-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  return names;
}

// Runs program as `uid` (its set-user-ID bit makes the effective user root)
// in cwd with env; returns the wait status.
int run_as(uid_t uid, gid_t gid, const fs::path& cwd, const fs::path& program, const std::vector<std::string>& env) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(120);
    std::vector<char*> envp;
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    char* argv[] = {const_cast<char*>(program.c_str()), nullptr};
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::execve(program.c_str(), argv, envp.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(SecureExecution, SetuidProgramIgnoresEveryPathVariable) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a set-user-ID copy";
  const passwd* nobody = ::getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no user 'nobody'";

  TempDir top;
  ::chmod(top.path.c_str(), 0755);
  // Where the attacker wants root to write: a directory nobody cannot.
  const fs::path target = top.path / "target";
  fs::create_directory(target);
  ::chmod(target.c_str(), 0755);
  // The attacker's working directory.
  const fs::path cwd = top.path / "cwd";
  fs::create_directory(cwd);
  ::chmod(cwd.c_str(), 0777);
  // A set-user-ID root copy of a -pg program linked with libprofil.
  const fs::path program = top.path / "prog";
  fs::copy_file(build_dir() / "bin" / "gmon_prog_pie", program);
  ASSERT_EQ(::chown(program.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(program.c_str(), 04755), 0);

  const int status = run_as(nobody->pw_uid, nobody->pw_gid, cwd, program,
                            {"GMON_OUT_PREFIX=" + (target / "evil").string(), "PROFDIR=" + target.string(),
                             "PROFIL_RUN_DIR=" + target.string(), "PROFIL_RUN_ID=x", "PATH=/usr/bin:/bin"});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_TRUE(files_in(target).empty()) << "root wrote into the directory the variables named: "
                                        << ::testing::PrintToString(files_in(target));
  // As glibc's -pg runtime: gmon.out in the current directory.
  EXPECT_EQ(files_in(cwd), std::vector<std::string>{"gmon.out"});
}

}  // namespace
