// grad.h — the gradient driver: from a graph and some of its values to the nodes computing
// their gradients, appended to the same graph. Because the result is an ordinary graph,
// differentiating it again (grad of grad) is another call to grad().
//
// The driver walks the nodes between `wrt` and `outputs` in reverse order and asks each node's
// rule (op.h) for its inputs' gradients. What every rule would otherwise repeat it does once:
//   - a value used by several nodes gets the sum of their gradients (an `add` node per use);
//   - a gradient of the shape an input was broadcast to is summed back to the input's shape;
//   - nodes that no requested gradient depends on are not visited (pruning), and neither are
//     integer or bool values, nor ops without a rule (detach, comparisons): gradients stop there;
//   - a rule's gradient of the wrong shape or dtype is an error naming the op, the input index,
//     the shape produced and the shape expected.
#pragma once
#include <vector>

#include "ember/autodiff/graph.h"

namespace ember::autodiff {

// d(sum_i <outputs[i], output_grads[i]>) / d wrt[j] for each j: undefined when the outputs do not
// depend on wrt[j]. output_grads may be empty when every output has one element (the gradient
// of a scalar is seeded with ones). All values belong to one graph.
std::vector<Val> grad(const std::vector<Val>& outputs, const std::vector<Val>& wrt,
                      const std::vector<Val>& output_grads = {});

}  // namespace ember::autodiff
