#!/usr/bin/env bash
# The two Quickstart commands of README.md, on a fresh Debian/Ubuntu machine:
#   ./ci/quickstart.sh demo    builds Ember and runs the demo (the main job)
#   ./ci/quickstart.sh test    builds Ember and runs every check: lint, all test suites, asan,
#                              the benchmark gate
# First installs whatever is missing: system packages (ci/install-system-deps.sh; root or sudo)
# and nox, in the virtualenv .venv/. Arguments after the first go to nox (e.g. -x: stop at the
# first failing session).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  demo) sessions=(demo) ;;
  test) sessions=(lint tests asan bench_gate) ;;
  *)
    echo "usage: $0 demo|test [nox arguments]" >&2
    exit 2
    ;;
esac

ci/install-system-deps.sh
[[ -x .venv/bin/python ]] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r ci/requirements.txt
exec .venv/bin/nox --sessions "${sessions[@]}" "${@:2}"
