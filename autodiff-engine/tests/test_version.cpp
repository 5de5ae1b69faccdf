// test_version.cpp — autodiff-engine reports its version and runs on a compatible core-runtime.
#include <ember/autodiff/version.h>
#include <ember/error.h>
#include <ember/tensor.h>
#include <ember/version.h>
#include <gtest/gtest.h>

#include <string>

namespace ad = ember::autodiff;

TEST(AutodiffVersion, ReportsItsOwnVersion) {
  EXPECT_STREQ(ad::version(), EXPECTED_AUTODIFF_VERSION);
}

TEST(AutodiffVersion, SeesTheLinkedCoreRuntime) {
  // The call goes through libember_autodiff into libember_core.
  EXPECT_STREQ(ad::core_version_loaded(), ember::core_version());
  EXPECT_STREQ(ad::core_version_built_against(), ember::core_version());
  EXPECT_NO_THROW(ad::check_core_compatible());
}

TEST(AutodiffVersion, CompatibilityIsSameMajorVersion) {
  EXPECT_TRUE(ad::core_versions_compatible("0.1.0", "0.1.0"));
  EXPECT_TRUE(ad::core_versions_compatible("0.1.0", "0.4.2"));
  EXPECT_FALSE(ad::core_versions_compatible("0.1.0", "1.0.0"));
  EXPECT_FALSE(ad::core_versions_compatible("1.2.0", "10.2.0"));
  EXPECT_THROW(ad::core_versions_compatible("", "0.1.0"), ember::ValueError);
  EXPECT_THROW(ad::core_versions_compatible("0.1.0", "latest"), ember::ValueError);
  EXPECT_THROW(ad::core_versions_compatible("v1.0.0", "1.0.0"), ember::ValueError);
}

TEST(AutodiffVersion, CoreTensorsWorkThroughTheInstalledPackage) {
  // Ember::core arrives through Ember::autodiff's link interface, headers included.
  auto t = ember::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.t().shape(), (ember::Shape{3, 2}));
  EXPECT_EQ(t.t().contiguous().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}
