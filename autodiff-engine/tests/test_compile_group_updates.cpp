// test_compile_group_updates.cpp — the optimizer's per-parameter updates joined into one node:
// the step computes the same bits, an update never waits past a node that reads what it writes,
// and an update whose grad is a buffer of the step stays where it is.
#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

constexpr int64_t kN = 5;  // elements of each parameter

TensorType f64(Shape shape) { return TensorType{std::move(shape), DType::Float64, {}}; }

// SGD's hyper tensor: lr, momentum, dampening, weight decay.
Tensor hyper(double lr, double weight_decay) {
  return Tensor::from_vector(std::vector<double>{lr, 0.0, 0.0, weight_decay}, {4});
}

struct Step {
  Program program = program_with_graph();
  Val x;
  std::vector<Val> params, grads, hypers;

  Step() { x = program.graph->input(f32({kN}), "x"); }

  // A parameter with its .grad tensor and hyper numbers, all state.
  int add_param() {
    const std::string name = "w" + std::to_string(params.size());
    params.push_back(state_parameter(program, f32({kN}), name));
    grads.push_back(program.graph->parameter(f32({kN}), name + ".grad"));
    program.state.push_back({grads.back().id, StateKind::Gradient, name + ".grad"});
    hypers.push_back(program.graph->parameter(f64({4}), "hyper of " + name));
    program.state.push_back({hypers.back().id, StateKind::OptimizerState, "hyper of " + name});
    return int(params.size()) - 1;
  }

  // sgd_update of parameter i with `grad` (its .grad tensor when undefined).
  void update(int i, Val grad = Val()) {
    Graph& g = *program.graph;
    const Attrs attrs{{"has_buffer", int64_t(0)},
                      {"first_step", int64_t(0)},
                      {"nesterov", int64_t(0)},
                      {"maximize", int64_t(0)}};
    Val out =
        g.add(op_def("sgd_update"),
              {params[size_t(i)], grad.defined() ? grad : grads[size_t(i)], hypers[size_t(i)]},
              attrs)[0];
    program.state[size_t(3 * i)].final_value = out.id;
  }

  // The program after the pass, expecting `alone` updates left as they were and `groups` grouped
  // nodes, and the same step bit for bit; `explained` gets the pass's explanation.
  Program grouped(int alone, int groups, std::string& explained) const {
    Explain e;
    Program q = group_updates(program, e);
    explained = e.str();
    EXPECT_EQ(count_op(q, "sgd_update"), alone) << explained;
    EXPECT_EQ(count_op(q, "sgd_update_group"), groups) << explained;
    expect_same_step(program, q, {ember::randn({kN})}, state());
    return q;
  }

  // The state to start from: random parameters and grads; w0 and w1 share their hyper numbers
  // (one multi-tensor call), the others have their own.
  std::vector<Tensor> state() const {
    std::vector<Tensor> s = random_state(program, 7);
    for (size_t i = 0; i < params.size(); ++i)
      s[3 * i + 2] = i < 2 ? hyper(0.1, 0.01) : hyper(0.05 * double(i), 0.0);
    return s;
  }
};

TEST(GroupUpdates, JoinsARunOfUpdatesIntoOneNodeBitForBit) {
  Step s;
  for (int i = 0; i < 4; ++i) s.add_param();
  s.update(0);
  Val between = exp(s.x);  // touches none of the updates' tensors
  s.update(1);
  s.update(2);
  s.update(3);
  s.program.returned = {sum(between).id};
  std::string explained;
  s.grouped(0, 1, explained);
  EXPECT_NE(explained.find("4 sgd_update nodes"), std::string::npos) << explained;
}

TEST(GroupUpdates, AnUpdateNeverWaitsPastAReadOfWhatItWrites) {
  Step s;
  for (int i = 0; i < 3; ++i) s.add_param();
  s.update(0);
  Val read = mul(s.params[0], s.x);  // must read w0 as updated
  // w0's update read before the others': it stays alone; w1 and w2 join.
  s.update(1);
  s.update(2);
  s.program.returned = {sum(read).id};
  std::string unused;
  s.grouped(1, 1, unused);
}

TEST(GroupUpdates, TwoUpdatesOfOneParameterNeverJoin) {
  // A step that updates w0 twice (two optimizer steps): one multi-tensor call would update it
  // twice at once. w1's update joins the second.
  Step s;
  for (int i = 0; i < 2; ++i) s.add_param();
  s.update(0);
  s.update(0);
  s.update(1);
  s.program.returned = {sum(s.x).id};
  std::string unused;
  s.grouped(1, 1, unused);
}

TEST(GroupUpdates, AnUpdateWhoseGradIsABufferOfTheStepStaysAlone) {
  Step s;
  for (int i = 0; i < 2; ++i) s.add_param();
  Val computed = mul(s.x, s.x);  // a gradient the step computes, not a .grad tensor
  s.update(0, computed);
  s.update(1, computed);
  s.program.returned = {sum(s.x).id};
  std::string explained;
  s.grouped(2, 0, explained);
  EXPECT_NE(explained.find("stays alone: its grad is a buffer of the step"), std::string::npos)
      << explained;
}

TEST(GroupUpdates, TheGroupedOpChecksEachParameter) {
  const TensorType p = f32({kN}), h = f64({4});
  const Attrs attrs{{"has_buffer", int64_t(0)},
                    {"first_step", int64_t(0)},
                    {"nesterov", int64_t(0)},
                    {"maximize", int64_t(0)},
                    {"params", int64_t(2)}};
  const OpDef& op = op_def("sgd_update_group");
  EXPECT_EQ(op.infer({p, f32({3}), p, f32({3}), h, h}, attrs),
            (std::vector<TensorType>{p, f32({3})}));
  EXPECT_THROW(op.infer({p, p, p, p, h}, attrs), ShapeError);            // one hyper short
  EXPECT_THROW(op.infer({p, p, f32({3}), p, h, h}, attrs), ShapeError);  // grad != param
}

}  // namespace
}  // namespace ember::autodiff::compile::test
