// collective.h — a bucket of gradients all-reduced (averaged) over a process group as two graph
// ops, so that a compiled step holds data parallelism's communication as nodes (the ops are in
// src/rules/collective.cpp; the Reducer records them while a step is traced, reducer.h):
//
//   flat = all_reduce_start(grads...)   copies the bucket's gradients into one flat buffer (with
//                                        one used-flag per parameter, as the eager Reducer does)
//                                        and starts its all-reduce (average), asynchronously
//   means... = all_reduce_wait(flat)     waits for it and hands back each parameter's average
//
// (and broadcast_(buffer), in place: DistributedDataParallel's copy of rank 0's buffers before
// each forward).
//
// Between the two the rest of backward runs: the communication overlaps it. Both are
// OpDef::collective, so compiler passes keep them, in their order, and `flat` (read by the wait)
// stays alive until the wait.
#pragma once
#include <cstdint>
#include <memory>

#include "ember/distributed.h"
#include "ember/tensor.h"

namespace ember::autodiff::collective {

// What all_reduce_start reads for one parameter (its attribute "parts"): its new gradient, the
// gradient .grad held before (accumulated under no_sync), both (summed), or neither (zeros).
enum Part : int64_t { kNone = 0, kGrad = 1, kBefore = 2, kBoth = 3 };

// The number that names `group` in the ops' attributes (which hold numbers, not objects). The
// table holds it weakly: a replay after the group is destroyed is a ValueError.
int64_t group_id(const std::shared_ptr<distributed::ProcessGroup>& group);

// Broadcasts `tensor` (a model's buffer) from `root` to every rank in place, as an op: while a
// step is traced, a node of op broadcast_ (in place, collective), which a replay repeats.
void broadcast(const std::shared_ptr<distributed::ProcessGroup>& group, const Tensor& tensor,
               int64_t root);

// Blocks until the all-reduce that all_reduce_start started on `flat` has finished (its error is
// thrown here); all_reduce_wait still finds it. For the tracer, which must see `flat`'s final
// contents before the wait node reads them.
void finish(const Tensor& flat);

}  // namespace ember::autodiff::collective
