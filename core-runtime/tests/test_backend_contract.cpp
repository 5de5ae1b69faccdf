// test_backend_contract.cpp — the backend contract: every compiled-in backend fills every slot of
// src/kernels.def, every backend of ember/backends.def is a device name, a DeviceType and a test
// device, and bytes move between devices of two different backends through host memory.
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "ember/backend.h"
#include "kernels.h"
#include "test_util.h"

namespace ember {
namespace {

using test::expect_error;

// The names of the slots `table` leaves empty, in kernels.def's order.
std::vector<std::string> empty_slots(const KernelTable& table) {
  std::vector<std::string> empty;
#define EMBER_KERNEL(name, signature) \
  if (!table.name##_kernel) empty.push_back(#name "_kernel");
#include "kernels.def"
#undef EMBER_KERNEL
  return empty;
}

int slot_count() {
  int n = 0;
#define EMBER_KERNEL(name, signature) ++n;
#include "kernels.def"
#undef EMBER_KERNEL
  return n;
}

TEST(BackendContract, EveryCompiledBackendFillsEverySlot) {
  EXPECT_GE(slot_count(), 50);  // the list is expanded, not empty
  int compiled = 0;
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    Backend* backend = find_backend(DeviceType(t));
    if (!backend) continue;
    ++compiled;
    SCOPED_TRACE(kDeviceTypeNames[t]);
    EXPECT_EQ(backend->type(), DeviceType(t));
    EXPECT_EQ(empty_slots(backend->kernels()), std::vector<std::string>{});
  }
  EXPECT_EQ(compiled, 1 + int(cuda_compiled()));
  EXPECT_TRUE(backend_compiled(DeviceType::CPU));
}

TEST(BackendContract, AnEmptySlotIsNotSupportedNamingTheKernelAndDevice) {
  KernelTable table;
  EXPECT_EQ(int(empty_slots(table).size()), slot_count());
  expect_error<NotSupportedError>([] { throw_no_kernel("unary_kernel", Device("cuda:1")); },
                                  {"unary_kernel", "no kernel for device cuda:1"});
}

// The public names keep their values: other packages and saved data use them.
static_assert(int(DeviceType::CPU) == 0 && int(DeviceType::CUDA) == 1);
static_assert(kNumDeviceTypes >= 2);

TEST(BackendContract, EveryRegisteredBackendIsADeviceNameAndATestDevice) {
  std::vector<Device> listed = test::test_devices();
  ASSERT_EQ(int(listed.size()), kNumDeviceTypes);
  std::set<std::string> names;
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    const std::string name = kDeviceTypeNames[t];
    SCOPED_TRACE(name);
    names.insert(name);
    EXPECT_EQ(listed[size_t(t)], Device(DeviceType(t), 0));
    EXPECT_EQ(Device(name).type, DeviceType(t));
    EXPECT_EQ(Device(name + ":0"), Device(DeviceType(t), 0));
    const Device third(DeviceType(t), 3);
    EXPECT_EQ(Device(third.str()).type, DeviceType(t));  // str() parses back
    if (DeviceType(t) != DeviceType::CPU) EXPECT_EQ(third.str(), name + ":3");
    // The device list of a parsing error names every backend.
    expect_error<ValueError>([] { Device("tpu:0"); }, {"device", "'tpu:0'", "'" + name + "'"});
  }
  EXPECT_EQ(int(names.size()), kNumDeviceTypes);  // no two backends share a name
  EXPECT_EQ(Device("cpu").str(), "cpu");
  EXPECT_EQ(Device("cuda:1"), Device(DeviceType::CUDA, 1));
}

TEST(BackendContract, ALeftOutOrMissingBackendIsATypedError) {
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    const Device missing(DeviceType(t), 1000);
    SCOPED_TRACE(missing.str());
    if (backend_compiled(DeviceType(t)))
      expect_error<DeviceError>([&] { backend_for(missing, "probe"); },
                                {"probe", missing.str(), "not available"});
    else
      expect_error<NotSupportedError>([&] { backend_for(missing, "probe"); },
                                      {"probe", missing.str(), "built without"});
  }
}

// A stand-in accelerator over host memory that logs its copies: two of them play two different
// non-CPU backends (both claim CUDA devices; copy_bytes_between tells backends apart by identity).
class LoggingBackend : public Backend {
 public:
  explicit LoggingBackend(std::string name) : name_(std::move(name)) {}
  DeviceType type() const override { return DeviceType::CUDA; }
  int device_count() const override { return 1; }
  CachingAllocator& allocator(int) override { throw ValueError("test", "not used"); }
  void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                  size_t n) override {
    log.push_back(name_ + ": " + src_device.str() + " -> " + dst_device.str());
    std::memcpy(dst, src, n);
  }
  void synchronize(int) override {}
  const KernelTable& kernels() const override { return table_; }

  std::vector<std::string> log;

 private:
  std::string name_;
  KernelTable table_;
};

TEST(BackendContract, CopiesBetweenTwoBackendsGoThroughTheHost) {
  LoggingBackend a("a"), b("b");
  const std::vector<int32_t> src{1, -2, 3, 1 << 30};
  std::vector<int32_t> dst(src.size(), 0);
  const size_t n = src.size() * sizeof(int32_t);
  const Device gpu(DeviceType::CUDA, 0), cpu;

  copy_bytes_between(b, dst.data(), gpu, a, src.data(), gpu, n, "copy_");
  EXPECT_EQ(dst, src);
  EXPECT_EQ(a.log, std::vector<std::string>{"a: cuda:0 -> cpu"});
  EXPECT_EQ(b.log, std::vector<std::string>{"b: cpu -> cuda:0"});

  // One backend, or one side on the CPU: a single copy by the backend that is not the CPU's.
  a.log.clear();
  b.log.clear();
  Backend& host = backend_for(cpu, "test");
  copy_bytes_between(a, dst.data(), Device(DeviceType::CUDA, 0), a, src.data(),
                     Device(DeviceType::CUDA, 0), n, "copy_");
  copy_bytes_between(host, dst.data(), cpu, b, src.data(), gpu, n, "copy_");
  copy_bytes_between(b, dst.data(), gpu, host, src.data(), cpu, n, "copy_");
  EXPECT_EQ(a.log, std::vector<std::string>{"a: cuda:0 -> cuda:0"});
  EXPECT_EQ(b.log, (std::vector<std::string>{"b: cuda:0 -> cpu", "b: cpu -> cuda:0"}));
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace ember
