// The hardware facts the compiler relies on, one record per target GPU.
// Passes, the code generator and the front end ask a Target instead of
// comparing compute capabilities or repeating sizes, so that what a target
// has (and why a pass relies on it) is written down once.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

namespace tkc {

/// What the passes and the code generator may assume about the GPU.
struct Target {
  std::string name;               ///< "sm_80" or "sm_90a"
  int computeCapability = 80;     ///< major * 10 + minor
  int sharedMemoryBytes = 0;      ///< per block, opt-in maximum
  int sharedMemoryPerSmBytes = 0; ///< per multiprocessor, all resident blocks together
  int maxWarps = 32;              ///< warps a block may have (1024 threads)
  int registersPerSm = 65536;     ///< 32-bit registers, shared by the resident blocks
  int maxThreadRegisters = 255;   ///< PTX's per-thread limit; more spill to local memory

  /// Threads that execute an instruction together.
  static constexpr int kWarpSize = 32;
  /// Registers are allocated to a warp in units of 256, 8 a thread: a
  /// thread's count is rounded up to a multiple of 8.
  static constexpr int kRegisterAllocationUnit = 8;
  /// Threads of a warpgroup, the unit that issues wgmma and setmaxnreg.
  static constexpr int kWarpgroupThreads = 4 * kWarpSize;
  /// Dynamic shared memory a kernel gets without opting in to more
  /// (cudaFuncAttributeMaxDynamicSharedMemorySize) on every target.
  static constexpr int kDefaultSharedBytes = 48 * 1024;
  /// Shared memory the system keeps for each resident block.
  static constexpr int kSystemSharedBytesPerBlock = 1024;
  /// Shared memory the sm_90a passes keep free for mbarriers and alignment
  /// when they size buffers.
  static constexpr int64_t kReservedSharedBytes = 2048;

  /// The target called `name` ("sm_80", "sm_90a"), or null.
  static const Target *lookup(const std::string &name);
  /// The target of compute capability `cc` (80, 90), or null: for code that
  /// only knows the capability, such as the front end's `sm` constant.
  static const Target *forComputeCapability(int64_t cc);

  /// Arch-specific code (the "a" suffix) runs on exactly its capability, not
  /// on newer devices: the launcher and the kernels guard it accordingly.
  bool isArchSpecific() const { return !name.empty() && name.back() == 'a'; }

  /// cp.async (global to shared copies that bypass registers) exists from
  /// sm_80 on; the sm_80 pipeline is built on it.
  bool hasAsyncCopy() const { return computeCapability >= 80; }
  /// wgmma (warpgroup matrix products reading shared memory) exists only in
  /// sm_90a code.
  bool hasWarpgroupMma() const { return computeCapability >= 90; }
  /// TMA (bulk tensor copies described by a tensor map, completing on an
  /// mbarrier's transaction count) exists from sm_90 on.
  bool hasTensorMemoryAccelerator() const { return computeCapability >= 90; }
  /// setmaxnreg (warpgroups handing registers to one another) exists only
  /// in sm_90a code; warp specialization depends on it.
  bool hasRegisterReallocation() const { return computeCapability >= 90; }
  /// fp8 (e4m3, e5m2) products: this compiler emits them as wgmma only, so
  /// they need sm_90a although sm_89's mma.sync has them too.
  bool hasF8Mma() const { return hasWarpgroupMma(); }
  /// The sm_90a instruction set as a whole (wgmma, TMA with mbarrier
  /// transaction counts, setmaxnreg): what the hopper ops are written against.
  bool hasHopperInstructions() const {
    return hasWarpgroupMma() && hasTensorMemoryAccelerator() && hasRegisterReallocation();
  }

  /// The wgmma widths (n of m64nNk16) that codegen emits: every multiple of
  /// 16 from 32 to 256 (PTX allows from 8; codegen writes a wrapper for each
  /// width a file uses, and narrower ones never paid off).
  static bool isWgmmaWidth(int64_t n) { return n >= 32 && n <= 256 && n % 16 == 0; }

  /// Registers a thread may have in a block of `threads` threads when
  /// `blocks` such blocks share a multiprocessor's register file (the
  /// count `__launch_bounds__(threads, blocks)` holds ptxas to): the file's
  /// share of each thread of the block's whole warps, rounded down to the
  /// allocation unit, and no more than a thread can have at all. 255 for a
  /// block of up to 256 threads, 168 for 384, 128 for 512, 64 for 1024.
  int threadRegisterLimit(int threads, int blocks = 1) const {
    int warps = std::max(1, (threads + kWarpSize - 1) / kWarpSize);
    int share = registersPerSm / (std::max(1, blocks) * warps * kWarpSize);
    return std::min(maxThreadRegisters, share / kRegisterAllocationUnit * kRegisterAllocationUnit);
  }

  /// Shared memory a block may use when `blocks` blocks share a
  /// multiprocessor (the system keeps 1 KiB of it per block).
  int sharedMemoryPerBlock(int blocks) const {
    return blocks <= 1 ? sharedMemoryBytes
                       : std::min(sharedMemoryBytes, sharedMemoryPerSmBytes / blocks - kSystemSharedBytesPerBlock);
  }
};

} // namespace tkc
