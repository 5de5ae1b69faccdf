#!/usr/bin/env bash
# Installs the system packages Ember's build and tests need on a fresh Debian/Ubuntu machine.
# Idempotent: packages already present are left alone. Needs root (or sudo) and the Debian mirror.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache            # build
  git python3 python3-venv python3-dev    # nox and its virtualenvs; Python.h for python-bindings
  libopenblas-dev                         # a real, multithreaded BLAS for CPU matmul/conv
  libgtest-dev libgmock-dev               # C++ tests (gmock: the bad-input suite's matchers)
  clang-format                            # lint
  valgrind                                # instruction-count benchmarks (callgrind)
  graphviz                                # dot: the tutorials draw graphs (Graph.render)
  libgloo-dev                             # ember::distributed's gloo backend (CPU collectives)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  echo "ci/install-system-deps.sh: installing ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
