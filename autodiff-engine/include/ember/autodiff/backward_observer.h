// backward_observer.h — a look into eager backward passes for code that acts on gradients as
// they come: the data-parallel Reducer (reducer.h) starts each bucket's all-reduce as soon as its
// last gradient is computed, and must know beforehand which parameters will get one.
//
// Variable::backward() calls every observer's backward_begins() once the backward graph is known
// and before it runs, with the leaves that will receive a gradient in the order the graph
// computes them (a leaf missing from the list gets none: it was not used, or only through ops
// without a gradient); the gradients then reach the leaves' hooks as they are computed; and
// backward_ends() runs once .grad has been accumulated. Observers are process-wide.
#pragma once
#include <vector>

namespace ember::autodiff {

struct VariableImpl;

class BackwardObserver {
 public:
  virtual ~BackwardObserver() = default;
  virtual void backward_begins(const std::vector<const VariableImpl*>& leaves_in_order) = 0;
  virtual void backward_ends() = 0;
};

void add_backward_observer(BackwardObserver* observer);
void remove_backward_observer(BackwardObserver* observer);

}  // namespace ember::autodiff
