// cuda_test.h — the fixture of the tests of CUDA alone (its kernels, streams, graphs).
#pragma once
#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember::test {

// Runs on CUDA device 0, `gpu`; skipped, visibly, where there is no CUDA device.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_is_available())
      GTEST_SKIP() << "no CUDA device here (cuda_compiled=" << cuda_compiled() << ")";
  }
  const Device gpu{DeviceType::CUDA, 0};
};

}  // namespace ember::test
