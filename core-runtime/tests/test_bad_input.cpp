// test_bad_input.cpp — bad input never crashes and never answers wrongly: 0-d and empty tensors
// wherever a dim is taken, sizes that overflow, strides and offsets outside the storage, values a
// dtype cannot hold, malformed environment variables and device strings, memory caps and missing
// devices. Each case checks the error's type and that its message names the op and the operands.
#include <gmock/gmock.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"

// The overflow cases ask for more memory than exists; under AddressSanitizer such a request must
// return null (which Ember reports as OutOfMemoryError) instead of aborting the process.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace ember {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kHuge = int64_t(1) << 62;

// Runs fn, expects exactly E, and returns its message (empty when nothing or another type was
// thrown, after recording the failure).
template <class E> std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception, nothing was thrown";
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected another exception type, got: " << e.what();
  }
  return "";
}

// Expects E from fn with a message holding every one of `parts` (the op first).
template <class E>
void expect_named(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  const std::string msg = message_of<E>(fn);
  for (const std::string& p : parts) EXPECT_THAT(msg, HasSubstr(p));
}

// ---- 0-d tensors and dims -----------------------------------------------------------------

// How a dim-taking function treats dim 0 of a 0-d tensor.
enum class OnScalar {
  NoDims,      // IndexError: a 0-d tensor has no dims (size, select, split, cat, ...)
  NeedsDims,   // ShapeError: the op needs at least 1 dim (index_select, gather, ...)
  OneImplicit  // accepted: dim 0 / -1 is the scalar's one element (sum, softmax, squeeze, ...)
};

struct DimCase {
  const char* op;
  std::function<void(const Tensor& t, int64_t dim)> call;
  OnScalar on_scalar;
  int64_t extra_dims = 0;  // unsqueeze and stack accept one dim more than t has
};

Tensor index_for(const Tensor& t) { return zeros(t.dim() ? t.shape() : Shape{1}, DType::Int64); }

std::vector<DimCase> dim_cases() {
  using O = OnScalar;
  return {
      {"size", [](const Tensor& t, int64_t d) { t.size(d); }, O::NoDims},
      {"stride", [](const Tensor& t, int64_t d) { t.stride(d); }, O::NoDims},
      {"select", [](const Tensor& t, int64_t d) { t.select(d, 0); }, O::NoDims},
      {"slice", [](const Tensor& t, int64_t d) { t.slice(d, 0, 1); }, O::NoDims},
      {"narrow", [](const Tensor& t, int64_t d) { t.narrow(d, 0, 1); }, O::NoDims},
      {"split", [](const Tensor& t, int64_t d) { split(t, 1, d); }, O::NoDims},
      {"split", [](const Tensor& t, int64_t d) { split(t, std::vector<int64_t>{1}, d); },
       O::NoDims},
      {"chunk", [](const Tensor& t, int64_t d) { chunk(t, 2, d); }, O::NoDims},
      {"cat",
       [](const Tensor& t, int64_t d) {
         cat({t, t}, d);
       },
       O::NoDims},
      {"index_select",
       [](const Tensor& t, int64_t d) { index_select(t, d, zeros({1}, DType::Int64)); },
       O::NeedsDims},
      {"index_add",
       [](const Tensor& t, int64_t d) { index_add(t, d, zeros({1}, DType::Int64), t); },
       O::NeedsDims},
      {"gather", [](const Tensor& t, int64_t d) { gather(t, d, index_for(t)); }, O::NeedsDims},
      {"scatter_add", [](const Tensor& t, int64_t d) { scatter_add(t, d, index_for(t), t); },
       O::NeedsDims},
      {"transpose", [](const Tensor& t, int64_t d) { t.transpose(d, 0); }, O::OneImplicit},
      {"squeeze", [](const Tensor& t, int64_t d) { t.squeeze(d); }, O::OneImplicit},
      {"flatten", [](const Tensor& t, int64_t d) { t.flatten(d); }, O::OneImplicit},
      {"unsqueeze", [](const Tensor& t, int64_t d) { t.unsqueeze(d); }, O::OneImplicit, 1},
      {"stack",
       [](const Tensor& t, int64_t d) {
         stack({t, t}, d);
       },
       O::OneImplicit, 1},
      {"sum", [](const Tensor& t, int64_t d) { sum(t, {d}); }, O::OneImplicit},
      {"prod", [](const Tensor& t, int64_t d) { prod(t, {d}); }, O::OneImplicit},
      {"mean", [](const Tensor& t, int64_t d) { mean(t, {d}); }, O::OneImplicit},
      {"var", [](const Tensor& t, int64_t d) { var(t, {d}); }, O::OneImplicit},
      {"std", [](const Tensor& t, int64_t d) { ember::std(t, {d}); }, O::OneImplicit},
      {"amax", [](const Tensor& t, int64_t d) { amax(t, {d}); }, O::OneImplicit},
      {"amin", [](const Tensor& t, int64_t d) { amin(t, {d}); }, O::OneImplicit},
      {"max", [](const Tensor& t, int64_t d) { max(t, d); }, O::OneImplicit},
      {"min", [](const Tensor& t, int64_t d) { min(t, d); }, O::OneImplicit},
      {"argmax", [](const Tensor& t, int64_t d) { argmax(t, d); }, O::OneImplicit},
      {"argmin", [](const Tensor& t, int64_t d) { argmin(t, d); }, O::OneImplicit},
      {"logsumexp", [](const Tensor& t, int64_t d) { logsumexp(t, {d}); }, O::OneImplicit},
      {"all", [](const Tensor& t, int64_t d) { all(t, {d}); }, O::OneImplicit},
      {"any", [](const Tensor& t, int64_t d) { any(t, {d}); }, O::OneImplicit},
      {"norm", [](const Tensor& t, int64_t d) { norm(t, 2.0, {d}); }, O::OneImplicit},
      {"softmax", [](const Tensor& t, int64_t d) { softmax(t, d); }, O::OneImplicit},
      {"log_softmax", [](const Tensor& t, int64_t d) { log_softmax(t, d); }, O::OneImplicit},
      {"softmax_backward", [](const Tensor& t, int64_t d) { softmax_backward(t, t, d); },
       O::OneImplicit},
      {"log_softmax_backward", [](const Tensor& t, int64_t d) { log_softmax_backward(t, t, d); },
       O::OneImplicit},
  };
}

TEST(BadInputDims, DimOutOfRangeIsAnIndexErrorNamingTheOpAndTensor) {
  const Tensor x = ones({2, 3});
  for (const DimCase& c : dim_cases()) {
    SCOPED_TRACE(c.op);
    const int64_t ndim = x.dim() + c.extra_dims;
    for (int64_t bad : {ndim, -ndim - 1}) {
      const std::string msg = message_of<IndexError>([&] { c.call(x, bad); });
      EXPECT_THAT(msg, HasSubstr(c.op));
      EXPECT_THAT(msg, HasSubstr("dim " + std::to_string(bad)));
    }
  }
}

TEST(BadInputDims, ZeroDimTensorHasNoDimsExceptWherePyTorchTakesOne) {
  const Tensor s = scalar_tensor(2.0);
  for (const DimCase& c : dim_cases()) {
    SCOPED_TRACE(c.op);
    switch (c.on_scalar) {
      case OnScalar::NoDims:
        for (int64_t d : {0, -1})
          expect_named<IndexError>([&] { c.call(s, d); },
                                   {c.op, "dimension specified as " + std::to_string(d),
                                    "no dimensions"});
        break;
      case OnScalar::NeedsDims:
        expect_named<ShapeError>([&] { c.call(s, 0); }, {c.op, "[] float32 cpu", "1 dim"});
        break;
      case OnScalar::OneImplicit:
        EXPECT_NO_THROW(c.call(s, 0));
        EXPECT_NO_THROW(c.call(s, -1));
        expect_named<IndexError>([&] { c.call(s, 1 + c.extra_dims); }, {c.op, "dim"});
        break;
    }
  }
}

TEST(BadInputDims, ZeroDimIndexingAndViewsNameTheTensor) {
  const Tensor s = scalar_tensor(1.0);
  expect_named<IndexError>([&] { s[0]; }, {"select", "[] float32 cpu", "no dimensions"});
  expect_named<IndexError>([&] { s.size(0); }, {"size", "[] float32 cpu"});
  expect_named<IndexError>([&] { s.stride(-1); }, {"stride", "[] float32 cpu"});
  expect_named<IndexError>([&] { cat({s, s}); }, {"cat", "tensors[0] is [] float32 cpu"});
  expect_named<IndexError>([&] { chunk(s, 1); }, {"chunk", "t is [] float32 cpu"});
}

TEST(BadInputDims, ScalarReductionsOverDimZeroStillWork) {
  const Tensor s = scalar_tensor(3.0);
  EXPECT_DOUBLE_EQ(sum(s, {0}).item<double>(), 3.0);
  EXPECT_DOUBLE_EQ(sum(s, {-1}, true).item<double>(), 3.0);
  EXPECT_EQ(sum(s, {-1}).dim(), 0);
  EXPECT_DOUBLE_EQ(softmax(s, -1).item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(log_softmax(s, 0).item<double>(), 0.0);
  EXPECT_EQ(argmax(s, 0).item<int64_t>(), 0);
  EXPECT_EQ(s.transpose(0, -1).dim(), 0);
  EXPECT_EQ(s.flatten(0, -1).shape(), Shape{1});
  EXPECT_EQ(s.unsqueeze(-1).shape(), Shape{1});
}

// ---- empty tensors ----------------------------------------------------------------------------

TEST(BadInputEmpty, EmptyTensorsAreContiguous) {
  EXPECT_TRUE(empty({3, 2, 0}).is_contiguous());
  EXPECT_TRUE(empty({0, 5}).transpose(0, 1).is_contiguous());
  EXPECT_FALSE(empty({3, 2}).transpose(0, 1).is_contiguous());
}

TEST(BadInputEmpty, ChunkOfAnEmptyDimGivesChunksPiecesAsTorch) {
  const Tensor e = empty({0, 4});
  TensorList pieces = chunk(e, 3, 0);
  ASSERT_EQ(pieces.size(), 3u);
  for (const Tensor& p : pieces) EXPECT_EQ(p.shape(), (Shape{0, 4}));
  EXPECT_EQ(split(e, 2, 0).size(), 1u);        // torch.split keeps one empty piece
  EXPECT_EQ(chunk(empty({4}), 3).size(), 2u);  // ceil(4 / 3) = 2 per piece: [2, 2]
}

TEST(BadInputEmpty, IndexingIntoAnEmptyDimIsAnIndexError) {
  const Tensor e = empty({0, 3});
  expect_named<IndexError>([&] { e.select(0, 0); }, {"select", "index 0", "[0, 3] float32 cpu"});
  expect_named<IndexError>([&] { e.narrow(0, 0, 1); }, {"narrow", "[0, 3] float32 cpu"});
  expect_named<ValueError>([&] { amax(e, {0}); }, {"amax", "[0, 3] float32 cpu"});
  expect_named<IndexError>([&] { index_select(e, 0, zeros({1}, DType::Int64)); },
                           {"index_select", "index 0"});
  EXPECT_EQ(sum(e, {0}).shape(), Shape{3});
  EXPECT_EQ(cat({e, e}, 0).shape(), (Shape{0, 3}));
}

// ---- sizes that overflow ----------------------------------------------------------------------

TEST(BadInputSizes, ShapesWhoseSizeOverflowsAreShapeErrorsNamingTheOp) {
  const std::vector<std::pair<const char*, std::function<void()>>> cases = {
      {"empty", [] { empty({kHuge}, DType::Float64); }},
      {"empty",
       [] {
         empty({int64_t(1) << 40, int64_t(1) << 40});
       }},
      {"empty",
       [] {
         Tensor::empty({0, int64_t(1) << 40, int64_t(1) << 40});
       }},
      {"zeros",
       [] {
         zeros({kHuge, 4});
       }},
      {"full", [] { full({kHuge}, 1.0, DType::Int32); }},
      {"eye", [] { eye(int64_t(1) << 32); }},
      {"randperm", [] { randperm(kHuge); }},
      {"uniform",  // rand is uniform(0, 1)
       [] {
         rand({kHuge, kHuge});
       }},
      {"normal",
       [] {
         randn({kHuge, 4});
       }},
      {"randint",
       [] {
         randint(0, 2, {kHuge, 2});
       }},
      {"arange", [] { arange(0, 1e20); }},
      {"arange", [] { arange(0, 1e300, 1e-300); }},
      {"expand",
       [] {
         ones({1, 1}).expand({int64_t(1) << 32, int64_t(1) << 32});
       }},
      {"expand", [] { ones({1}).expand({kHuge}); }},  // 2^62 floats: 2^64 bytes
      {"view",
       [] {
         ones({4}).view({int64_t(1) << 40, int64_t(1) << 40});
       }},
      {"from_vector",
       [] {
         Tensor::from_vector<float>({1}, {kHuge, kHuge});
       }},
  };
  for (const auto& [op, fn] : cases) {
    SCOPED_TRACE(op);
    expect_named<ShapeError>(fn, {op, "overflows int64"});
  }
}

TEST(BadInputSizes, NegativeSizesAreValueErrorsNamingTheOp) {
  expect_named<ValueError>([] { empty({2, -1}); }, {"empty", "[2, -1]", "negative"});
  expect_named<ValueError>([] { ones({-4}); }, {"ones", "[-4]"});
  expect_named<ValueError>([] { randn({-1}); }, {"normal", "[-1]"});
  expect_named<ValueError>([] { normal({-1}, 0, 1); }, {"normal", "[-1]"});
  expect_named<ValueError>([] { uniform({-2}, 0, 1); }, {"uniform", "[-2]"});
  expect_named<ValueError>([] { ones({1}).expand({-2}); }, {"expand", "[-2]"});
  expect_named<ValueError>([] { ones({4}).as_strided({-1}, {1}, 0); }, {"as_strided", "[-1]"});
}

TEST(BadInputSizes, AnImpossibleAllocationIsOutOfMemoryNamingTheOp) {
  // 2^61 bytes: representable, but more than any address space holds.
  expect_named<OutOfMemoryError>([] { empty({int64_t(1) << 59}); },
                                 {"empty", "cannot allocate", "cpu"});
  // Above 2^62 bytes the allocator refuses before asking the system.
  expect_named<OutOfMemoryError>([] { zeros({(int64_t(1) << 61) + 1}, DType::Float16); },
                                 {"zeros", "more than any device holds"});
  expect_named<OutOfMemoryError>([] { arange(0, 1e18); }, {"arange", "cannot allocate"});
  EXPECT_EQ(ones({3}).numel(), 3);  // the allocator still works afterwards
}

// ---- strides and offsets ----------------------------------------------------------------------

TEST(BadInputStrides, AsStridedStaysInsideTheStorage) {
  const Tensor base = zeros({4});
  expect_named<ValueError>([&] { base.as_strided({2}, {1}, -1); }, {"as_strided", "offset -1"});
  expect_named<ValueError>([&] { base.as_strided({2}, {-1}, 1); },
                           {"as_strided", "[-1]", "no negative strides"});
  expect_named<ShapeError>([&] { base.as_strided({3}, {2}, 0); },
                           {"as_strided", "[3]", "[2]", "reaches element 4", "holding 4"});
  expect_named<ShapeError>([&] { base.as_strided({1}, {1}, 4); }, {"as_strided", "offset 4"});
  expect_named<ShapeError>([&] { base.as_strided({2}, {kHuge}, 0); }, {"as_strided"});
  expect_named<ShapeError>([&] { base.as_strided({3}, {kHuge}, 0); },
                           {"as_strided", "overflows int64"});
  expect_named<ShapeError>(
      [&] {
        base.as_strided({2, 2}, {1}, 0);
      },
      {"as_strided", "differ in length"});
  EXPECT_EQ(base.as_strided({2, 2}, {1, 1}, 1).numel(), 4);  // reaches elements 1 to 3
  EXPECT_EQ(base.as_strided({0}, {1}, 4).numel(), 0);        // reaches nothing
}

TEST(BadInputStrides, TheTensorConstructorChecksItsLayout) {
  const Tensor base = zeros({4});  // 16 bytes
  expect_named<ShapeError>([&] { Tensor(base.storage(), {5}, {1}, 0, DType::Float32); },
                           {"Tensor", "[5]", "holding 4 float32"});
  expect_named<ShapeError>([&] { Tensor(base.storage(), {3}, {1}, 0, DType::Float64); },
                           {"Tensor", "holding 2 float64"});
  expect_named<ValueError>([&] { Tensor(base.storage(), {2}, {1}, -3, DType::Float32); },
                           {"Tensor", "offset -3"});
  expect_named<ValueError>([] { Tensor(nullptr, {2}, {1}, 0, DType::Float32); },
                           {"Tensor", "null"});
  EXPECT_EQ(Tensor(base.storage(), {2}, {1}, 0, DType::Float64).numel(), 2);
}

// ---- values a dtype cannot hold ---------------------------------------------------------------

struct IntegerRange {
  DType dtype;
  double lowest, highest;
  double spacing = 1;  // between doubles near the ends: 2048 past int64's
};

TEST(BadInputValues, CreationOpsRejectValuesTheIntegerDtypeCannotHold) {
  const std::vector<IntegerRange> ranges = {{DType::UInt8, 0, 255},
                                            {DType::Int8, -128, 127},
                                            {DType::Int16, -32768, 32767},
                                            {DType::Int32, -2147483648.0, 2147483647.0},
                                            {DType::Int64, -0x1p63, 0x1p63 - 1024, 2048}};
  for (const IntegerRange& r : ranges) {
    const std::string name = dtype_name(r.dtype);
    SCOPED_TRACE(name);
    for (double bad : {kNaN, kInf, -kInf, r.lowest - r.spacing, r.highest + r.spacing}) {
      expect_named<ValueError>([&] { full({2}, bad, r.dtype); },
                               {"full", "value", name, "without overflow"});
      expect_named<ValueError>([&] { zeros({2}, r.dtype).fill_(bad); }, {"fill_", name});
      expect_named<ValueError>([&] { scalar_tensor(bad, r.dtype); }, {"scalar_tensor", name});
      expect_named<ValueError>([&] { full_like(zeros({1}, r.dtype), bad); }, {"full_like", name});
    }
    EXPECT_EQ(full({1}, r.lowest, r.dtype).item<double>(), r.lowest);
    EXPECT_EQ(full({1}, r.highest, r.dtype).item<double>(), r.highest);
  }
}

TEST(BadInputValues, MessagesNameTheValueAndDtype) {
  expect_named<ValueError>([] { full({2}, kNaN, DType::Int32); }, {"full", "nan", "int32"});
  expect_named<ValueError>([] { full({2}, 300, DType::UInt8); }, {"full", "300", "uint8"});
  expect_named<ValueError>([] { full({2}, 1e5, DType::Float16); }, {"full", "100000", "float16"});
  expect_named<ValueError>([] { full({2}, 1e39, DType::Float32); }, {"full", "1e+39", "float32"});
  expect_named<ValueError>([] { full({2}, 1e39, DType::BFloat16); }, {"full", "bfloat16"});
  expect_named<ValueError>([] { arange(0, 300, 1, DType::UInt8); }, {"arange", "299", "uint8"});
  expect_named<ValueError>([] { linspace(0, 300, 4, DType::UInt8); }, {"linspace", "300"});
  expect_named<ValueError>(
      [] { masked_fill(zeros({2}, DType::Int32), ones({2}, DType::Bool), kNaN); },
      {"masked_fill", "nan", "int32"});
  expect_named<ValueError>(
      [] {
        pad(zeros({2}, DType::Int8), {1, 1}, "constant", 1000);
      },
      {"pad", "1000", "int8"});
}

TEST(BadInputValues, RepresentableValuesStillWork) {
  EXPECT_EQ(full({1}, 255.5, DType::UInt8).item<int64_t>(), 255);  // truncates toward zero
  EXPECT_EQ(full({1}, -0.5, DType::UInt8).item<int64_t>(), 0);
  EXPECT_TRUE(std::isnan(full({1}, kNaN).item<float>()));
  EXPECT_TRUE(std::isinf(full({1}, -kInf, DType::Float16).item<float>()));
  EXPECT_TRUE(full({1}, 5, DType::Bool).item<bool>());  // bool: non-zero is true, as torch
  EXPECT_EQ(full({1}, 65504, DType::Float16).item<float>(), 65504.0f);
}

// ---- environment variables and strings --------------------------------------------------------

using test::ScopedEnv;

class NullRawAllocator : public RawAllocator {
 public:
  void* allocate(size_t) override { return nullptr; }
  void deallocate(void*) override {}
};

// A fresh caching allocator reads EMBER_MEMORY_LIMIT, as each device's does on first use.
int64_t limit_read_from(const char* env_value) {
  ScopedEnv env("EMBER_MEMORY_LIMIT", env_value);
  NullRawAllocator raw;
  CachingAllocator allocator(Device(), &raw);
  return allocator.stats().limit;
}

TEST(BadInputEnvironment, MemoryLimitIsParsedStrictlyAndNamesTheVariable) {
  EXPECT_EQ(limit_read_from("2GiB"), int64_t(2) << 30);
  EXPECT_EQ(limit_read_from("1.5 MB"), 1500000);
  EXPECT_EQ(limit_read_from("9223372036854775807"), std::numeric_limits<int64_t>::max());
  for (const char* bad :
       {"lots", "", "-1GiB", "1.5.5GB", "12 apples", "GiB", "0x10", "1e9", "2 GiB extra", "3."}) {
    SCOPED_TRACE(bad);
    expect_named<ValueError>([&] { limit_read_from(bad); },
                             {"EMBER_MEMORY_LIMIT", "'" + std::string(bad) + "'", "GiB"});
  }
  for (const char* too_big :
       {"99999999999999999999GiB", "9223372036854775808", "8589934592GiB", "8388608TiB"}) {
    SCOPED_TRACE(too_big);
    expect_named<ValueError>([&] { limit_read_from(too_big); },
                             {"EMBER_MEMORY_LIMIT", too_big, "2^63 - 1 bytes"});
  }
}

TEST(BadInputEnvironment, DeviceStringsAreParsedStrictly) {
  EXPECT_EQ(Device("cuda:2147483647").index, 2147483647);
  for (const char* bad : {"cuda:99999999999999999999", "cuda:2147483648", "cuda:-1",
                          "cuda:", "cuda: 1", "cuda:1x", "cuda:+1"}) {
    SCOPED_TRACE(bad);
    expect_named<ValueError>([&] { Device{bad}; }, {"device", bad, "cuda:N"});
  }
  expect_named<ValueError>([] { Device{"gpu:0"}; }, {"device", "gpu:0", "'cpu'"});
}

// ---- memory caps ------------------------------------------------------------------------------

// Caps the CPU at `headroom` bytes above what is in use now; lifts the cap at the end.
class ScopedCpuCap {
 public:
  explicit ScopedCpuCap(int64_t headroom) {
    set_memory_limit(memory_stats(Device()).in_use + headroom, Device());
  }
  ~ScopedCpuCap() { set_memory_limit(0, Device()); }
  ScopedCpuCap(const ScopedCpuCap&) = delete;
  ScopedCpuCap& operator=(const ScopedCpuCap&) = delete;
};

TEST(BadInputCaps, Conv2dWorkspaceCountsAgainstTheCap) {
  const Tensor x = ones({1, 1, 64, 64});
  const Tensor w = ones({1, 1, 5, 5});
  {
    // The output (60 x 60 floats, 14 KiB) fits; the im2col columns (25 x 3600 floats) do not.
    ScopedCpuCap cap(128 << 10);
    expect_named<OutOfMemoryError>([&] { conv2d(x, w); }, {"conv2d", "over the cap"});
    expect_named<OutOfMemoryError>(
        [&] {
          conv2d_backward_weight(ones({1, 1, 60, 60}), x, w.shape());
        },
        {"conv2d_backward_weight", "over the cap"});
  }
  reset_peak_memory(Device());
  const int64_t before = memory_stats(Device()).in_use;
  conv2d(x, w);
  EXPECT_GE(memory_stats(Device()).peak - before, int64_t(25 * 3600 * sizeof(float)));
}

TEST(BadInputCaps, RandpermKeysCountAgainstTheCap) {
  ScopedCpuCap cap(768 << 10);  // the [65536] int64 output fits, its 1 MiB of sort pairs do not
  expect_named<OutOfMemoryError>([] { randperm(1 << 16); }, {"randperm", "over the cap"});
}

TEST(BadInputCaps, OutOfMemoryNamesTheOpTheUserCalled) {
  const Tensor a = ones({256, 256});
  const Tensor img = ones({1, 4, 64, 64});
  const Tensor k = ones({64, 4, 1, 1});
  ScopedCpuCap cap(64 << 10);
  expect_named<OutOfMemoryError>([&] { matmul(a, a); }, {"matmul", "256 KiB"});
  expect_named<OutOfMemoryError>([&] { linear(a, a); }, {"linear"});
  expect_named<OutOfMemoryError>([&] { conv2d(img, k); }, {"conv2d", "1 MiB"});
  expect_named<OutOfMemoryError>([&] { add(a, a); }, {"add"});
  expect_named<OutOfMemoryError>([&] { softmax(a, -1); }, {"softmax"});
  expect_named<OutOfMemoryError>([&] { cat({a, a}); }, {"cat"});
  expect_named<OutOfMemoryError>([&] { a.clone(); }, {"clone"});
  expect_named<OutOfMemoryError>([&] { rand({256, 256}); }, {"uniform"});
}

// ---- devices ----------------------------------------------------------------------------------

// A CUDA device that is never present: DeviceError in a CUDA build, NotSupportedError without.
const Device kMissingGpu(DeviceType::CUDA, 99);

template <class F> void expect_missing_device(const char* op, F&& fn) {
  SCOPED_TRACE(op);
  if (cuda_compiled()) expect_named<DeviceError>(fn, {op, "cuda:99"});
  else expect_named<NotSupportedError>(fn, {op, "cuda:99", "without CUDA"});
}

// stack shares cat's checks but reports them as its own, and asks for one shape, not one per dim.
TEST(BadInputJoins, StackAndCatNameThemselves) {
  Tensor f = zeros({2, 3}), wide = zeros({2, 4});
  expect_named<ShapeError>([&] { stack({f, wide}); }, {"stack:", "[2, 4]", "the same shape"});
  expect_named<ShapeError>([&] { cat({f, zeros({3, 4})}, 1); }, {"cat:", "except dim 1"});
  EXPECT_EQ(cat({f, wide}, 1).shape(), (Shape{2, 7}));
  EXPECT_EQ(stack({f, f}, 2).shape(), (Shape{2, 3, 2}));
}

TEST(BadInputDevices, CreatingOnAMissingDeviceNamesTheOp) {
  const Device d = kMissingGpu;
  expect_missing_device("empty", [&] { empty({2}, DType::Float32, d); });
  expect_missing_device("zeros", [&] { zeros({2}, DType::Float32, d); });
  expect_missing_device("ones", [&] { ones({2}, DType::Float32, d); });
  expect_missing_device("full", [&] { full({2}, 1.0, DType::Float32, d); });
  expect_missing_device("scalar_tensor", [&] { scalar_tensor(1.0, DType::Float32, d); });
  expect_missing_device("arange", [&] { arange(4, std::nullopt, d); });
  expect_missing_device("linspace", [&] { linspace(0, 1, 4, DType::Float32, d); });
  expect_missing_device("eye", [&] { eye(3, -1, DType::Float32, d); });
  expect_missing_device("uniform", [&] { rand({2}, DType::Float32, d); });
  expect_missing_device("normal", [&] { randn({2}, DType::Float32, d); });
  expect_missing_device("randint", [&] { randint(0, 5, {2}, DType::Int64, d); });
  expect_missing_device("randperm", [&] { randperm(4, DType::Int64, d); });
  expect_missing_device("bernoulli", [&] { bernoulli({2}, 0.5, DType::Float32, d); });
  expect_missing_device("from_vector", [&] { Tensor::from_vector<float>({1, 2}, {2}, d); });
  expect_missing_device("to", [&] { ones({2}).to(d); });
  expect_missing_device("allocator", [&] { memory_stats(d); });
}

// Probabilities and dtype advice name the value, the operand's shape and the fix, in C++ terms
// (the Python bindings turn DType::Float32 into ember.float32).
TEST(BadInputValues, ProbabilitiesAndDtypeAdviceNameTheValueAndShape) {
  const Tensor x = zeros({4, 5});
  for (double p : {1.5, -0.25}) {
    const std::string m = message_of<ValueError>([&] { dropout(x, p, false); });
    EXPECT_THAT(m, HasSubstr("dropout"));
    EXPECT_THAT(m, HasSubstr("p is " + std::string(p > 1 ? "1.5" : "-0.25")));
    EXPECT_THAT(m, HasSubstr("x is [4, 5] float32"));
    EXPECT_THAT(m, HasSubstr("[0, 1]"));
  }
  const Tensor target = Tensor::from_vector<int64_t>({0, 1, 2, 3}, {4});
  const std::string ls = message_of<ValueError>(
      [&] { cross_entropy(x, target, Tensor(), -100, LossReduction::Mean, 1.5); });
  EXPECT_THAT(ls, HasSubstr("label_smoothing is 1.5 (logits is [4, 5] float32"));
  const std::string mm = message_of<DTypeError>([&] { linear(zeros({2, 5}, DType::Int64), x); });
  EXPECT_THAT(mm, HasSubstr("cast x with x.to(DType::Float32)"));
}

}  // namespace
}  // namespace ember
