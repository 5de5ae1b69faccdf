// run_program.h — runs a program (the C++ compiler) without a shell and collects what it printed
// (internal header).
#pragma once
#include <string>
#include <vector>

namespace ember::jit {

struct ProgramRun {
  bool started = false;  // false: the program could not be run at all (not found, not executable)
  int exit_code = -1;    // its exit status; -1 when it did not exit normally
  std::string output;    // stdout and stderr together
};
// argv[0] is a path, or a name looked up on PATH.
ProgramRun run_program(const std::vector<std::string>& argv);

}  // namespace ember::jit
