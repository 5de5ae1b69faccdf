// test_compile_program.cpp — the Program (clone keeps every id, state and returned value) and
// Explain's text.
#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

TEST(CompileProgram, CloneKeepsIdsStateAndReturnedValues) {
  Program p = mlp_step(2, 8, 4);
  Program c = clone(p);
  EXPECT_EQ(c.graph->str(), p.graph->str());
  ASSERT_EQ(c.state.size(), p.state.size());
  for (size_t s = 0; s < p.state.size(); ++s) {
    EXPECT_EQ(c.state[s].value, p.state[s].value);
    EXPECT_EQ(c.state[s].final_value, p.state[s].final_value);
    EXPECT_EQ(c.state[s].name, p.state[s].name);
  }
  EXPECT_EQ(c.returned, p.returned);
  for (int32_t k = 0; k < p.graph->num_nodes(); ++k) EXPECT_EQ(c.source_of(k), k);
  EXPECT_NE(p.str().find("state %1 (0.weight): parameter '0.weight' <- %"), std::string::npos)
      << p.str();
  EXPECT_EQ(p.state_of(p.state[1].value), &p.state[1]);
  EXPECT_EQ(p.state_of(0), nullptr);  // x is an input
}

TEST(CompileProgram, ExplainPrintsEachPassInOrder) {
  Explain e;
  e.add("dead-code elimination", "removed %3");
  e.add("memory plan", "planned peak 1 KiB");
  e.add("dead-code elimination", "1 of 4 nodes removed");
  e.section("constant folding");
  EXPECT_EQ(e.str(),
            "== dead-code elimination ==\n  removed %3\n  1 of 4 nodes removed\n"
            "== memory plan ==\n  planned peak 1 KiB\n== constant folding ==\n  (nothing)\n");
}

}  // namespace
}  // namespace ember::autodiff::compile::test
