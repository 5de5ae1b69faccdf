// threads.h — how many threads the CPU kernels run on.
//
// Every parallel loop of the CPU backend, and the GEMMs it hands to BLAS, runs on Ember's own
// pool: the calling thread plus n - 1 workers that sleep while there is nothing to do, so that a
// busy machine's other processes keep their cores. At start-up n is the environment variable
// EMBER_NUM_THREADS, else the first entry of OMP_NUM_THREADS, else the number of cores this
// process may run on (sched_getaffinity: a container's or taskset's limit counts).
#pragma once
#include "ember/export.h"

namespace ember {

// The threads the CPU kernels use from the next op on (by any thread). 1 runs every op on the
// calling thread. Throws ValueError for n < 1.
EMBER_API void set_num_threads(int n);
// The current count.
EMBER_API int get_num_threads();

}  // namespace ember
