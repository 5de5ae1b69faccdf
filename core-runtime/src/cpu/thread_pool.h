// thread_pool.h — the CPU backend's one pool of threads (internal header; see ember/threads.h).
// parallel.h builds parallel_for on run_chunks; nothing else should call it directly.
#pragma once
#include <cstdint>

namespace ember::cpu {

using ChunkFn = void (*)(void* context, int64_t chunk);

// Calls fn(context, c) once for every c in [0, chunks) and returns when all have returned. The
// calling thread takes chunks too, and chunks are claimed one at a time from a shared counter,
// so a worker the OS has not scheduled yet holds nothing up: the caller takes what is left. Runs
// everything on the calling thread when the count is 1, inside another run_chunks (a nested
// loop), or while another thread's job has the pool. The first exception a chunk throws is
// rethrown here once every claimed chunk has finished; the chunks not started by then are
// skipped. Workers asleep are woken only when `wake` (the job is worth a wake-up's cost);
// otherwise only those still polling after the previous job take part.
void run_chunks(int64_t chunks, ChunkFn fn, void* context, bool wake);

// Whether this thread is inside run_chunks (a worker, or a caller taking its share).
bool in_parallel_region();

// The count EMBER_NUM_THREADS, OMP_NUM_THREADS and the affinity mask give now (what the pool
// starts with). Throws ValueError when EMBER_NUM_THREADS is set but not a whole number >= 1.
int threads_from_environment();

}  // namespace ember::cpu
