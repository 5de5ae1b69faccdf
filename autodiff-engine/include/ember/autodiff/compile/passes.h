// passes.h — the passes over a traced step (program.h), one file each in src/compile/passes/.
// Each takes a Program and returns a new one, and writes what it did (or why it did nothing) to
// its section of `explain`. They keep the program's meaning exactly: the same state updates and
// returned values, bit for bit, with the same random numbers drawn in the same order. Collective
// nodes (OpDef::collective: a bucket's all-reduce start and wait) are kept, never merged, folded,
// fused or recomputed, and stay in their order: every rank must issue the same collectives in
// the same order, and the buffer a start hands to the wait stays alive until the wait.
#pragma once
#include <cstdint>

#include "ember/autodiff/compile/memory_plan.h"
#include "ember/autodiff/compile/program.h"

namespace ember::autodiff::compile {

// Removes nodes none of whose results reach a root: the state tensors' final values, the returned
// values, a write into state or an input (an in-place node over memory the step does not own),
// or a later read of a buffer it writes in place. Random nodes stay: they advance the generator,
// and removing one would change every random number drawn after it.
Program dead_code_elimination(const Program& program, Explain& explain);

// Merges nodes of the same op, attributes and inputs into the first of them, unless the op is
// random (two dropouts draw two masks) or in place, or a buffer either reads or produces was
// overwritten in place in between.
Program common_subexpressions(const Program& program, Explain& explain);

// Computes at compile time every node whose inputs are all constants (or that has none, or whose
// result depends on its input's type alone: zeros_like, ones_like, full_like) and is neither
// random nor in place, and makes its outputs constants. Never state: it changes between
// calls. Not a value returned or written into state (returned tensors are fresh every call), one
// whose buffer is later written in place, or one larger than kMaxFoldedBytes (it would be held for
// good instead of living in the arena for a moment).
constexpr int64_t kMaxFoldedBytes = int64_t(1) << 20;
Program fold_constants(const Program& program, Explain& explain);

// Moves each in-place node (a gradient's copy_ into its .grad, an optimizer's update) up to right
// after the nodes computing its inputs, past nodes that neither read nor write the buffer it
// writes and are not random: the buffers it reads are then let go of at once, not at the end of
// the step.
Program hoist_in_place_writes(const Program& program, Explain& explain);

// Joins each linear whose value an activation (relu, gelu) reads into one linear_act node, the
// activation applied in the GEMM's epilogue (cuBLASLt on CUDA; on the CPU the library's GEMM then
// the activation's kernel over the output, equal to the two nodes bit for bit). The node stands
// where the linear stood; other readers of the linear's value (gelu's backward in a training
// step) read the node's second output, `pre`. A linear stays apart when its value is returned or
// kept in state, when it is written in place before the activation reads it, when it is of an
// integer dtype, or when relu's input is read elsewhere too (cuBLASLt's relu keeps only a bit
// mask of it: nothing would be saved). Explain: each pair joined, and why each linear followed by
// an activation was not.
Program fuse_gemm_epilogue(const Program& program, Explain& explain);

// Fuses chains and small DAGs of elementwise nodes (unary and binary ops with broadcasting, ops
// with a scalar, casts, where, masked_fill, clamp, the activations and their backward ops) into
// one node of op "fused" each, whose kernel is generated and compiled here, at plan time
// (codegen.h, ember/jit.h): it reads the group's inputs once and writes its results once, and
// the values inside the group never exist. A value read outside the group after its end is one
// more output of the kernel; one read before the group's end, of another shape, returned or kept
// in state ends it. A group may end in a sum, mean, amax or sum_to over its innermost dims,
// folded as each row is computed. In-place, view and random nodes, matmul, convolutions and the
// other reductions stay out; a node joins only when no in-place write to one of its inputs lies
// between it and the group's end (the fused node runs where the group's last node ran). Groups
// of one op are left alone. On the CPU each fused value equals the unfused ops' bit for bit
// (fusion_group.h; a reduction folds in the library's order). EMBER_FUSION=0, no
// compiler or a failed compile: the program is returned unchanged, with a warning and the reason.
// Explain: every group with its ops and shapes, and why each node beside a group stayed out.
Program fuse_elementwise(const Program& program, Explain& explain);

// Rewrites relu_backward(max_pool2d_offsets_backward(g, at), y), where (pooled, at) =
// max_pool2d(y), as max_pool2d_offsets_backward(relu_backward(g, pooled), at): the same numbers
// bit for bit (pooled[j] is y where at[j] points), and the full-size activation y is no longer
// kept for the backward pass.
Program mask_before_scatter(const Program& program, Explain& explain);

// Hands each returned value over as computed when it has memory of its own that nothing writes
// into, on the CPU: the copy the trace ends with (`clone`, so that the caller never gets a buffer
// of the arena) is dropped, and the memory plan allocates the value outside the arena. On CUDA
// the copy stays (a CUDA graph's replay cannot allocate); explain() says why for each copy kept.
Program return_without_copy(const Program& program, Explain& explain);

// Joins runs of the optimizer's per-parameter updates (sgd_update, adam_update) of one kind and
// attributes into one node (sgd_update_group, adam_update_group) at the run's last update, so
// that one multi-tensor call updates them, as in eager mode. An update waits for the run's end
// only when no node in between reads or writes what it writes, or writes what it reads, and when
// its grad is a .grad tensor (state), so the memory plan is unchanged.
Program group_updates(const Program& program, Explain& explain);

// Lets the node computing a value that a copy_ writes into a state tensor (a gradient into its
// .grad) compute it there in the first place: the copy_ is dropped, program.reuse maps the value
// to the state value, and the memory plan serves its allocation inside that tensor (or normally,
// when at a replay the tensor is not laid out as the value; the step's end then copies it in).
// Only where no one can tell: the copy_ writes the whole state tensor and is the value's only
// reader, the value has memory of its own that its node allocates (`allocations`, per node), no
// node between the two touches the state, and the node reads the state's old contents only where
// it may write over them (may_write_over_input). Explain: each copy dropped, and why each other
// copy_ stayed.
Program compute_into_state(const Program& program, const NodeAllocations& allocations,
                           Explain& explain);

// Lets a node write its (first) output over an input's buffer when that input is read for the
// last time there, both are in the arena, and the kernel allows it (may_write_over_input).
// Recorded in program.reuse; the memory plan gives the two one buffer.
Program reuse_in_place(const Program& program, Explain& explain);
// Whether `op`'s kernel reads element i of its input `input` only to write element i of its
// first output (after any reduction over that input is done), so that the output may be placed
// over that input (of the same type, contiguous): the elementwise ops, and batch norm's backward
// over its grad_out.
bool may_write_over_input(const std::string& op, int32_t input);

// Chooses values to compute again right before a later read (in a training step: forward values
// recomputed in the backward pass) until the memory plan of `allocations` (recorded while
// tracing, indexed by traced node; empty: output_allocations) fits `budget_bytes`. Each choice
// is reported with its cost in recomputed FLOPs. Random nodes are never recomputed, nor a value
// whose inputs were overwritten in place before the recomputation. A budget that cannot be met
// throws BudgetError giving the smallest budget these choices reach.
Program rematerialize(const Program& program, int64_t budget_bytes,
                      const NodeAllocations& allocations, Explain& explain);

// The budget cannot be met; `smallest()` is the least planned peak that recomputation reaches.
class BudgetError : public ValueError {
 public:
  BudgetError(int64_t budget, int64_t smallest);
  int64_t budget() const { return budget_; }
  int64_t smallest() const { return smallest_; }

 private:
  int64_t budget_;
  int64_t smallest_;
};

// An estimate of the floating-point operations a node performs (2 per multiply-add of matmul,
// linear and conv2d, one per output element elsewhere): the cost rematerialisation reports.
int64_t estimate_flops(const Graph& graph, const Node& node);

}  // namespace ember::autodiff::compile
