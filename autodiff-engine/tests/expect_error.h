// expect_error.h — checking the typed errors of the rule tests and their messages.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ember/autodiff/graph.h"

// The message of the error of type E that f throws; a test failure (and "") when it throws none.
template <class E> std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error of the expected type";
  return "";
}

// Expects f to throw error E with every one of `parts` in its message.
template <class E>
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  const std::string message = error_of<E>(f);
  for (const std::string& p : parts)
    EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
}

// Runs `build` on a fresh graph and expects error E with every one of `parts` in its message.
template <class E>
void expect_error(const std::function<void(ember::autodiff::Graph&)>& build,
                  const std::vector<std::string>& parts) {
  ember::autodiff::Graph g;
  expect_error<E>([&] { build(g); }, parts);
}
