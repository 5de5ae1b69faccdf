// test_jit.cpp — run-time compilation (ember/jit.h): a CPU kernel built, loaded and run on the
// thread pool; the disk cache (miss, hit, a damaged entry rebuilt, mode 0700); every way to fall
// back (EMBER_FUSION=0, no compiler, a failing compile) as a status, never an exception; NVRTC
// compiling for sm_80 and sm_90 without a GPU.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/jit.h"
#include "jit/disk_cache.h"
#include "test_util.h"

namespace ember {
namespace {

using test::ScopedEnv;

// A fresh cache folder per test, and nothing remembered in the process from earlier tests.
class JitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ember-jit-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    folder_ = root_ + "/cache";
    cache_.emplace("EMBER_CACHE_DIR", folder_);
    jit::forget_loaded_kernels();
  }
  void TearDown() override {
    cache_.reset();
    jit::forget_loaded_kernels();
    std::system(("rm -rf " + root_).c_str());
  }
  // The names of the files in the cache folder ending in `suffix`.
  std::vector<std::string> files(const std::string& suffix) {
    std::vector<std::string> found;
    std::string list = root_ + "/list";
    std::system(("ls " + folder_ + " > " + list + " 2>/dev/null").c_str());
    std::ifstream in(list);
    for (std::string name; std::getline(in, name);)
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        found.push_back(name);
    return found;
  }
  std::string root_, folder_;
  std::optional<ScopedEnv> cache_;
};

// out[i] = 2 * in[i] + k, with k a number so that tests can make distinct sources.
std::string doubling_source(int k) {
  return "#include <stdint.h>\n"
         "extern \"C\" void twice(char* const* data, int64_t begin, int64_t end) {\n"
         "  float* out = (float*)data[0];\n"
         "  const float* in = (const float*)data[1];\n"
         "  for (int64_t i = begin; i < end; ++i) out[i] = 2.0f * in[i] + " +
         std::to_string(k) + ".0f;\n}\n";
}

// Runs a compiled doubling kernel over n elements on the pool and checks every element.
void expect_doubles(const jit::CpuKernel& kernel, int k, int64_t n) {
  std::vector<float> in(static_cast<size_t>(n)), out(static_cast<size_t>(n), -1.0f);
  for (int64_t i = 0; i < n; ++i) in[size_t(i)] = float(i % 1000) - 500.0f;
  char* data[] = {reinterpret_cast<char*>(out.data()), reinterpret_cast<char*>(in.data())};
  kernel.run(data, n, 1);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[size_t(i)], 2.0f * in[size_t(i)] + float(k)) << "element " << i;
}

TEST_F(JitTest, CompilesLoadsAndRunsOnThePool) {
  const jit::CpuCompile built = jit::compile_cpu(doubling_source(1), "twice");
  ASSERT_EQ(built.status, jit::Status::Ok) << built.reason;
  EXPECT_FALSE(built.from_cache);
  // Large enough for parallel_for to cut it into chunks for several threads; odd, and tiny.
  const int threads = get_num_threads();
  set_num_threads(2);
  expect_doubles(*built.kernel, 1, (1 << 20) + 3);
  expect_doubles(*built.kernel, 1, 1);
  expect_doubles(*built.kernel, 1, 0);
  set_num_threads(threads);
}

TEST_F(JitTest, CacheMissThenHitFromDiskThenFromMemory) {
  const jit::CpuCompile first = jit::compile_cpu(doubling_source(2), "twice");
  ASSERT_EQ(first.status, jit::Status::Ok) << first.reason;
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(files(".so").size(), 1u);
  EXPECT_EQ(files(".entry").size(), 1u);
  EXPECT_TRUE(files(".cpp").empty()) << "build files are removed";

  const jit::CpuCompile again = jit::compile_cpu(doubling_source(2), "twice");  // in memory
  EXPECT_TRUE(again.from_cache);
  jit::forget_loaded_kernels();
  const jit::CpuCompile from_disk = jit::compile_cpu(doubling_source(2), "twice");
  ASSERT_EQ(from_disk.status, jit::Status::Ok) << from_disk.reason;
  EXPECT_TRUE(from_disk.from_cache);
  expect_doubles(*from_disk.kernel, 2, 1000);

  // Another source is another entry.
  const jit::CpuCompile other = jit::compile_cpu(doubling_source(3), "twice");
  EXPECT_FALSE(other.from_cache);
  EXPECT_EQ(files(".so").size(), 2u);
  expect_doubles(*other.kernel, 3, 1000);
}

TEST_F(JitTest, CacheFolderIsPrivate) {
  ASSERT_EQ(jit::compile_cpu(doubling_source(4), "twice").status, jit::Status::Ok);
  struct stat info {};
  ASSERT_EQ(stat(folder_.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  // A folder made readable by others is narrowed again on the next use.
  chmod(folder_.c_str(), 0755);
  EXPECT_EQ(jit::cache_dir(), folder_);
  ASSERT_EQ(stat(folder_.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
}

TEST_F(JitTest, DamagedEntryIsRebuiltNotLoaded) {
  ASSERT_EQ(jit::compile_cpu(doubling_source(5), "twice").status, jit::Status::Ok);
  ASSERT_EQ(files(".so").size(), 1u);
  const std::string object = folder_ + "/" + files(".so")[0];
  // Replace the shared object with bytes that would crash dlopen or the caller if loaded (a new
  // file, as a damaged copy would be: the loaded one stays mapped as it was).
  ASSERT_TRUE(jit::write_file_atomically(object, "not an ELF file"));
  jit::forget_loaded_kernels();
  const jit::CpuCompile rebuilt = jit::compile_cpu(doubling_source(5), "twice");
  ASSERT_EQ(rebuilt.status, jit::Status::Ok) << rebuilt.reason;
  EXPECT_FALSE(rebuilt.from_cache) << "a damaged entry must be rebuilt";
  expect_doubles(*rebuilt.kernel, 5, 1000);
  EXPECT_NE(jit::read_file(object)->substr(1, 3), "not") << "the entry was rewritten";

  // An entry whose recorded key differs (another source under the same name) is not loaded.
  const std::string entry = folder_ + "/" + files(".entry")[0];
  std::string text = *jit::read_file(entry);
  text.back() = text.back() == 'x' ? 'y' : 'x';
  ASSERT_TRUE(jit::write_file_atomically(entry, text));
  jit::forget_loaded_kernels();
  EXPECT_FALSE(jit::compile_cpu(doubling_source(5), "twice").from_cache);
}

TEST_F(JitTest, CacheLoadVerifiesKeyAndHash) {
  ASSERT_EQ(jit::cache_dir(), folder_);  // created on first use
  ASSERT_TRUE(jit::cache_store(folder_, "key one", "bin", "artifact bytes"));
  EXPECT_EQ(jit::cache_load(folder_, "key one", "bin"),
            std::optional<std::string>("artifact bytes"));
  EXPECT_FALSE(jit::cache_load(folder_, "key two", "bin"));
  const std::string artifact = folder_ + "/" + jit::hex64(jit::fnv1a64("key one")) + ".bin";
  ASSERT_TRUE(jit::write_file_atomically(artifact, "artifact bytez"));
  EXPECT_FALSE(jit::cache_load(folder_, "key one", "bin"));
}

TEST_F(JitTest, NoCompilerIsAStatusNotAnException) {
  ScopedEnv cxx("EMBER_CXX", "/nonexistent/c++");
  jit::CpuCompile result;
  ASSERT_NO_THROW(result = jit::compile_cpu(doubling_source(6), "twice"));
  EXPECT_EQ(result.status, jit::Status::NoCompiler);
  EXPECT_NE(result.reason.find("/nonexistent/c++"), std::string::npos) << result.reason;
  EXPECT_NE(result.reason.find("EMBER_CXX"), std::string::npos) << result.reason;
  EXPECT_EQ(result.kernel, nullptr);
}

TEST_F(JitTest, FailingCompileIsAStatusWithTheCompilersWords) {
  const jit::CpuCompile result = jit::compile_cpu("this is not C++;\n", "twice");
  EXPECT_EQ(result.status, jit::Status::CompileFailed);
  EXPECT_NE(result.reason.find("failed"), std::string::npos) << result.reason;
  EXPECT_TRUE(files(".so").empty()) << "a failed build leaves nothing in the cache";
  // A missing entry point is a load failure.
  EXPECT_EQ(jit::compile_cpu(doubling_source(7), "thrice").status, jit::Status::LoadFailed);
}

TEST_F(JitTest, DisabledByEnvironment) {
  ScopedEnv off("EMBER_FUSION", "0");
  EXPECT_FALSE(jit::enabled());
  const jit::CpuCompile result = jit::compile_cpu(doubling_source(8), "twice");
  EXPECT_EQ(result.status, jit::Status::Disabled);
  EXPECT_NE(result.reason.find("EMBER_FUSION=0"), std::string::npos);
}

TEST_F(JitTest, UnusableCacheFolderStillCompiles) {
  ScopedEnv cache("EMBER_CACHE_DIR", "/proc/ember-cannot-be-here");
  const jit::CpuCompile result = jit::compile_cpu(doubling_source(9), "twice");
  ASSERT_EQ(result.status, jit::Status::Ok) << result.reason;
  expect_doubles(*result.kernel, 9, 100);
  EXPECT_THROW(jit::cache_dir(), ValueError);
}

TEST_F(JitTest, WarnsOncePerReason) {
  EXPECT_TRUE(jit::warn_fallback_once("a test kernel", "reason seen once, by test_jit"));
  EXPECT_FALSE(jit::warn_fallback_once("a test kernel", "reason seen once, by test_jit"));
}

// NVRTC needs no GPU to compile for a named architecture.
TEST_F(JitTest, NvrtcCompilesForSm80AndSm90WithoutAGpu) {
  if (!jit::nvrtc_available()) {
    const jit::CudaCompile result = jit::compile_cuda("", 90);
    EXPECT_EQ(result.status, jit::Status::NoCompiler);
    GTEST_SKIP() << "NVRTC is not built in (a build without CUDA): " << result.reason;
  }
  const std::string source =
      "extern \"C\" __global__ void twice(float* out, const float* in, long long n) {\n"
      "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
      "  if (i < n) out[i] = 2.0f * expf(in[i]);\n}\n";
  for (int sm : {80, 90}) {
    const jit::CudaCompile cubin = jit::compile_cuda(source, sm);
    ASSERT_EQ(cubin.status, jit::Status::Ok) << "sm_" << sm << ": " << cubin.reason;
    EXPECT_EQ(cubin.image.substr(0, 4),
              "\x7f"
              "ELF")
        << "a cubin is an ELF image";
    const jit::CudaCompile ptx = jit::compile_cuda(source, sm, /*ptx=*/true);
    ASSERT_EQ(ptx.status, jit::Status::Ok) << ptx.reason;
    EXPECT_NE(ptx.image.find(".target sm_" + std::to_string(sm)), std::string::npos);
  }
  jit::forget_loaded_kernels();
  EXPECT_TRUE(jit::compile_cuda(source, 90).from_cache) << "the cubin came from the disk cache";
  const jit::CudaCompile bad = jit::compile_cuda("this is not CUDA;", 90);
  EXPECT_EQ(bad.status, jit::Status::CompileFailed);
  EXPECT_NE(bad.reason.find("NVRTC"), std::string::npos);
}

}  // namespace
}  // namespace ember
