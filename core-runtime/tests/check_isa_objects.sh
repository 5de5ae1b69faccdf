#!/usr/bin/env bash
# check_isa_objects.sh OBJECT... — fails when an object file of the AVX2 or AVX-512 kernel copies
# defines a weak symbol (an inline function or template instance, of which the linker keeps one
# copy) outside the copy's own namespace with code that uses the 256- or 512-bit registers: the
# baseline kernels might be linked to it and fault on a CPU without those instructions
# (src/cpu/isa_begin.h explains why none should exist).
set -euo pipefail
status=0
for object in "$@"; do
  # The functions whose code names a ymm or zmm register (objdump prints "<symbol>:" above each).
  wide=$(objdump -d --no-show-raw-insn "$object" |
         awk '/^[0-9a-f]+ <.*>:$/ { f = substr($2, 2, length($2) - 3) } /%[yz]mm/ { print f }' |
         sort -u)
  weak=$(nm --defined-only "$object" | awk '$2 == "W" || $2 == "V" || $2 == "u" { print $3 }' |
         sort -u)
  for symbol in $(comm -12 <(echo "$wide") <(echo "$weak")); do
    name=$(c++filt "$symbol")
    case "$name" in *::avx2::* | *::avx512::*) continue ;; esac
    echo "$object: $name is shared with the baseline and uses wide registers" >&2
    status=1
  done
done
echo "checked $# objects"
exit $status
