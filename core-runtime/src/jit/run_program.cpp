// run_program.cpp — posix_spawnp with stdout and stderr on a pipe: the arguments go to the program
// as they are, never through a shell.
#include "jit/run_program.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

extern char** environ;

namespace ember::jit {

ProgramRun run_program(const std::vector<std::string>& argv) {
  ProgramRun run;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return run;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned == 0) {
    run.started = true;
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
      if (n > 0) {
        run.output.append(buffer, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
    // A shell-less exec that failed in the child exits with 127 before running anything.
    if (run.exit_code == 127 && run.output.empty()) run.started = false;
  }
  ::close(pipe_fds[0]);
  return run;
}

}  // namespace ember::jit
