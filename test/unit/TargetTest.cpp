// The hardware facts of each target and the feature queries that the passes,
// the code generator and sema decide by.

#include "target/Target.h"

#include <gtest/gtest.h>

#include <vector>

using namespace tkc;

namespace {

const Target &target(const char *name) {
  const Target *t = Target::lookup(name);
  EXPECT_NE(t, nullptr) << name;
  return *t;
}

TEST(Target, LookupByNameAndCapabilityAgree) {
  for (const char *name : {"sm_80", "sm_90a"}) {
    const Target &t = target(name);
    EXPECT_EQ(t.name, name);
    EXPECT_EQ(Target::forComputeCapability(t.computeCapability), &t) << name;
  }
  EXPECT_EQ(target("sm_80").computeCapability, 80);
  EXPECT_EQ(target("sm_90a").computeCapability, 90);
  for (const char *unknown : {"", "sm_90", "sm_86", "sm_100a", "SM_80"})
    EXPECT_EQ(Target::lookup(unknown), nullptr) << unknown;
  for (int cc : {0, 75, 86, 89, 100})
    EXPECT_EQ(Target::forComputeCapability(cc), nullptr) << cc;
}

TEST(Target, SharedMemory) {
  const Target &a100 = target("sm_80"), &h100 = target("sm_90a");
  EXPECT_EQ(a100.sharedMemoryBytes, 163 * 1024);
  EXPECT_EQ(a100.sharedMemoryPerSmBytes, 164 * 1024);
  EXPECT_EQ(h100.sharedMemoryBytes, 227 * 1024);
  EXPECT_EQ(h100.sharedMemoryPerSmBytes, 228 * 1024);
  for (const Target *t : {&a100, &h100}) {
    // One block may take the opt-in maximum; blocks side by side split the
    // multiprocessor, less the system's kilobyte each.
    EXPECT_EQ(t->sharedMemoryPerBlock(1), t->sharedMemoryBytes);
    EXPECT_EQ(t->sharedMemoryPerBlock(0), t->sharedMemoryBytes);
    EXPECT_EQ(t->sharedMemoryPerBlock(2), t->sharedMemoryPerSmBytes / 2 - 1024);
    EXPECT_EQ(t->sharedMemoryPerBlock(3), t->sharedMemoryPerSmBytes / 3 - 1024);
    EXPECT_LT(t->sharedMemoryPerBlock(2), t->sharedMemoryPerBlock(1));
    EXPECT_LT(Target::kReservedSharedBytes, t->sharedMemoryBytes);
  }
  EXPECT_EQ(h100.sharedMemoryPerBlock(2), 113 * 1024);
  // Both opt-in maxima are above what a kernel gets without opting in.
  EXPECT_EQ(Target::kDefaultSharedBytes, 48 * 1024);
  EXPECT_GT(a100.sharedMemoryBytes, Target::kDefaultSharedBytes);
}

TEST(Target, RegisterFile) {
  for (const char *name : {"sm_80", "sm_90a"}) {
    const Target &t = target(name);
    EXPECT_EQ(t.registersPerSm, 65536) << name;
    EXPECT_EQ(t.maxThreadRegisters, 255) << name;
    EXPECT_EQ(t.maxWarps, 32) << name;
    // A full block (1024 threads) gets 64 registers a thread, well under the
    // per-thread limit: the limit binds only for smaller blocks.
    EXPECT_EQ(t.registersPerSm / (t.maxWarps * Target::kWarpSize), 64) << name;
    // What a block's threads may have: the per-thread limit up to 256
    // threads, then the register file's share in whole allocation units.
    EXPECT_EQ(t.threadRegisterLimit(32), 255) << name;
    EXPECT_EQ(t.threadRegisterLimit(128), 255) << name;
    EXPECT_EQ(t.threadRegisterLimit(256), 255) << name;
    EXPECT_EQ(t.threadRegisterLimit(384), 168) << name;
    EXPECT_EQ(t.threadRegisterLimit(512), 128) << name;
    EXPECT_EQ(t.threadRegisterLimit(640), 96) << name;
    EXPECT_EQ(t.threadRegisterLimit(1024), 64) << name;
    EXPECT_EQ(t.threadRegisterLimit(500), 128) << name; // whole warps
    EXPECT_EQ(t.threadRegisterLimit(256, 2), 128) << name;
    EXPECT_EQ(t.threadRegisterLimit(128, 3), 168) << name;
  }
  EXPECT_EQ(Target::kWarpSize, 32);
  EXPECT_EQ(Target::kRegisterAllocationUnit, 8);
  EXPECT_EQ(Target::kWarpgroupThreads, 128);
}

TEST(Target, Features) {
  const Target &a100 = target("sm_80"), &h100 = target("sm_90a");
  EXPECT_TRUE(a100.hasAsyncCopy());
  EXPECT_FALSE(a100.hasWarpgroupMma());
  EXPECT_FALSE(a100.hasTensorMemoryAccelerator());
  EXPECT_FALSE(a100.hasRegisterReallocation());
  EXPECT_FALSE(a100.hasF8Mma());
  EXPECT_FALSE(a100.hasHopperInstructions());
  EXPECT_FALSE(a100.isArchSpecific());

  EXPECT_TRUE(h100.hasAsyncCopy());
  EXPECT_TRUE(h100.hasWarpgroupMma());
  EXPECT_TRUE(h100.hasTensorMemoryAccelerator());
  EXPECT_TRUE(h100.hasRegisterReallocation());
  EXPECT_TRUE(h100.hasF8Mma());
  EXPECT_TRUE(h100.hasHopperInstructions());
  EXPECT_TRUE(h100.isArchSpecific());
}

TEST(Target, WgmmaWidths) {
  std::vector<int64_t> widths;
  for (int64_t n = -16; n <= 512; ++n)
    if (Target::isWgmmaWidth(n))
      widths.push_back(n);
  ASSERT_EQ(widths.size(), 15u);
  EXPECT_EQ(widths.front(), 32);
  EXPECT_EQ(widths.back(), 256);
  for (size_t i = 1; i < widths.size(); ++i)
    EXPECT_EQ(widths[i] - widths[i - 1], 16);
}

} // namespace
