// tkc-emu: runs the CUDA that tkc emits for sm_80 on the CPU, so that the
// tests can execute emitted code where there is no GPU. Each block's
// threads are fibers on one host thread; a warp runs until all its threads
// wait at a barrier (or end) before the next warp starts, and warp-wide
// operations (shuffles, ldmatrix, mma.sync) exchange their lanes' operands
// and compute what the PTX ISA specifies for each lane. Asynchronous copies
// (cp.async) land only when their thread waits for them, the latest moment
// the hardware allows. Shared-memory accesses are checked against the
// block's allocation, for reads of bytes nobody wrote and for races (two
// threads' accesses, one a write, with no barrier between); the runtime's
// global accesses must fall inside the tensors the harness registers.
// Blocks run one after another.
//
// Only what tkc's sm_80 output uses is here; code for sm_90a (TMA, wgmma,
// mbarriers) does not compile against it.
#pragma once
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <sys/mman.h>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define TKC_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TKC_EMU_ASAN 1
#endif
#endif
#ifdef TKC_EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

struct uint3 {
  unsigned x, y, z;
};

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace tkc_emu {

[[noreturn]] inline void fail(const char *format, ...) {
  va_list args;
  va_start(args, format);
  std::fprintf(stderr, "tkc-emu: error: ");
  std::vfprintf(stderr, format, args);
  std::fprintf(stderr, "\n");
  va_end(args);
  std::fflush(stderr);
  std::abort();
}

/// Where the block's dynamic shared memory starts in the shared state
/// space: any multiple of 1024 (the kernels check the alignment), and not 0,
/// so that an address computed from nothing is caught.
constexpr uint32_t kSharedBase = 1u << 20;

struct AsyncCopy {
  uint32_t dst; ///< shared address
  const unsigned char *src;
  int bytes, src_bytes;
};

struct Fiber {
  ucontext_t context{};
  void *stack = nullptr;
  size_t stack_bytes = 0;
  uint3 index{};
  bool done = false;
  /// What the thread waits for, and the generation of that barrier it
  /// waits to see pass.
  enum class Wait { nothing, block_barrier, warp_exchange } wait = Wait::nothing;
  unsigned wait_generation = 0;
  const char *waits_for = "";
  std::vector<AsyncCopy> open_group;
  std::vector<std::vector<AsyncCopy>> committed;
};

/// One warp-wide operation's exchange area.
struct WarpExchange {
  unsigned arrived = 0, generation = 0;
  const char *operation[32] = {};
  unsigned char slot[32][64] = {};
};

/// Who last wrote and read a byte of shared memory, and in which barrier
/// generation: two threads' accesses to a byte, one a write, with no
/// __syncthreads between them are a race.
struct ByteAccess {
  static constexpr uint16_t kNobody = 0xffff, kSeveral = 0xfffe;
  uint16_t writer = kNobody, reader = kNobody;
  unsigned write_generation = 0, read_generation = 0;
};

struct Block {
  uint3 index{};
  dim3 dim, grid;
  std::vector<Fiber> fibers;
  std::vector<WarpExchange> warps;
  unsigned char *shared = nullptr;
  size_t shared_bytes = 0;
  std::vector<ByteAccess> accesses; ///< one a byte of `shared`
  unsigned arrived = 0, generation = 0, alive = 0;
  std::function<void()> body;
};

inline thread_local Block *current_block = nullptr;
inline thread_local Fiber *current_fiber = nullptr;
inline thread_local ucontext_t scheduler_context;
#ifdef TKC_EMU_ASAN
inline thread_local const void *scheduler_stack_bottom = nullptr;
inline thread_local size_t scheduler_stack_size = 0;
#endif

inline Block &block() {
  if (!current_block)
    fail("a device function ran outside a kernel launch");
  return *current_block;
}
inline Fiber &fiber() { return *current_fiber; }
inline unsigned linear_thread() {
  const uint3 &t = fiber().index;
  const dim3 &d = block().dim;
  return t.x + d.x * (t.y + d.y * t.z);
}

/// Back to the scheduler; returns when the scheduler resumes this fiber.
inline void yield() {
  Fiber &self = fiber();
#ifdef TKC_EMU_ASAN
  void *fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, scheduler_stack_bottom, scheduler_stack_size);
#endif
  swapcontext(&self.context, &scheduler_context);
#ifdef TKC_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

/// Yields until the barrier of `kind` passes its generation `generation`;
/// the scheduler resumes the thread only then.
inline void wait_for(Fiber::Wait kind, unsigned generation, const char *what) {
  Fiber &self = fiber();
  self.wait = kind;
  self.wait_generation = generation;
  self.waits_for = what;
  yield();
  self.wait = Fiber::Wait::nothing;
}

// --- barriers --------------------------------------------------------------------

inline void release_block_barrier_if_complete(Block &b) {
  if (b.arrived > 0 && b.arrived >= b.alive) {
    b.arrived = 0;
    ++b.generation;
    }
}

/// __syncthreads(): every thread of the block (that has not exited) arrives.
inline void sync_block() {
  Block &b = block();
  const unsigned generation = b.generation;
  ++b.arrived;
  release_block_barrier_if_complete(b);
  if (b.generation == generation)
    wait_for(Fiber::Wait::block_barrier, generation, "__syncthreads");
}

/// Every lane of the calling warp exchanges `bytes` of `mine` under the
/// operation name `operation`; afterwards `all` holds each lane's bytes.
inline void warp_exchange(const char *operation, const void *mine, size_t bytes, void *all) {
  Block &b = block();
  const unsigned thread = linear_thread(), lane = thread % 32;
  WarpExchange &w = b.warps[thread / 32];
  if (bytes > sizeof w.slot[0])
    fail("internal: warp exchange of %zu bytes", bytes);
  const unsigned lanes = std::min<unsigned>(32, b.dim.x * b.dim.y * b.dim.z - thread / 32 * 32);
  if (lanes != 32)
    fail("%s in a warp of %u threads: every warp-wide operation here needs 32", operation, lanes);
  std::memcpy(w.slot[lane], mine, bytes);
  w.operation[lane] = operation;
  unsigned generation = w.generation;
  if (++w.arrived == 32) {
    w.arrived = 0;
    ++w.generation;
  }
  if (w.generation == generation)
    wait_for(Fiber::Wait::warp_exchange, generation, operation);
  for (unsigned l = 0; l < 32; ++l)
    if (std::strcmp(w.operation[l], operation) != 0)
      fail("block (%u, %u, %u) warp %u: lane %u reached %s while lane %u reached %s", b.index.x, b.index.y, b.index.z,
           thread / 32, lane, operation, l, w.operation[l]);
  for (unsigned l = 0; l < 32; ++l)
    std::memcpy(static_cast<unsigned char *>(all) + l * bytes, w.slot[l], bytes);
  // Nobody writes the slots again before every lane has read them.
  generation = w.generation;
  if (++w.arrived == 32) {
    w.arrived = 0;
    ++w.generation;
  }
  if (w.generation == generation)
    wait_for(Fiber::Wait::warp_exchange, generation, operation);
}

template <class T> void warp_gather(const char *operation, const T &mine, T (&all)[32]) {
  warp_exchange(operation, &mine, sizeof(T), all);
}

inline unsigned lane() { return linear_thread() % 32; }

// --- shared memory ---------------------------------------------------------------

/// The host address of `bytes` at shared address `address`, checked against
/// the block's allocation.
inline unsigned char *shared_at(uint32_t address, size_t bytes, const char *what) {
  Block &b = block();
  if (address < kSharedBase || address - kSharedBase + bytes > b.shared_bytes) {
    const uint3 &t = fiber().index;
    fail("%s of %zu bytes at shared address %u + %lld, outside the block's %zu bytes (block (%u, %u, %u), thread %u)",
         what, bytes, kSharedBase, (long long)address - kSharedBase, b.shared_bytes, b.index.x, b.index.y, b.index.z,
         t.x);
  }
  return b.shared + (address - kSharedBase);
}

[[noreturn]] inline void race(const char *what, uint32_t address, unsigned thread, const char *earlier,
                              unsigned other) {
  Block &b = block();
  fail("block (%u, %u, %u): %s by thread %u at shared byte %lld, which thread %u %s with no __syncthreads between",
       b.index.x, b.index.y, b.index.z, what, thread, (long long)address - kSharedBase, other, earlier);
}

/// TKC_EMU_NO_RACE_CHECK=1 turns the race check off (stale data still shows).
inline bool race_check() {
  static const bool on = [] {
    const char *off = std::getenv("TKC_EMU_NO_RACE_CHECK");
    return !off || !*off || std::strcmp(off, "0") == 0;
  }();
  return on;
}

/// `bytes` at `address` that thread `thread` reads, checked for a write by
/// another thread since the last barrier.
inline unsigned char *shared_read(uint32_t address, size_t bytes, const char *what, unsigned thread) {
  unsigned char *p = shared_at(address, bytes, what);
  Block &b = block();
  if (!race_check())
    return p;
  for (size_t i = 0; i < bytes; ++i) {
    ByteAccess &a = b.accesses[address - kSharedBase + i];
    if (a.writer == ByteAccess::kNobody)
      fail("block (%u, %u, %u): %s by thread %u at shared byte %lld, which no thread of the block has written",
           b.index.x, b.index.y, b.index.z, what, thread, (long long)address + i - kSharedBase);
    if (a.writer != thread && a.write_generation == b.generation)
      race(what, address + i, thread, "wrote", a.writer);
    if (a.read_generation != b.generation || a.reader == ByteAccess::kNobody)
      a.reader = uint16_t(thread);
    else if (a.reader != thread)
      a.reader = ByteAccess::kSeveral;
    a.read_generation = b.generation;
  }
  return p;
}

/// `bytes` at `address` that thread `thread` writes, checked for an access
/// by another thread since the last barrier.
inline unsigned char *shared_write(uint32_t address, size_t bytes, const char *what, unsigned thread) {
  unsigned char *p = shared_at(address, bytes, what);
  Block &b = block();
  if (!race_check())
    return p;
  for (size_t i = 0; i < bytes; ++i) {
    ByteAccess &a = b.accesses[address - kSharedBase + i];
    if (a.writer != ByteAccess::kNobody && a.writer != thread && a.write_generation == b.generation)
      race(what, address + i, thread, "wrote", a.writer);
    if (a.reader != ByteAccess::kNobody && a.reader != thread && a.read_generation == b.generation)
      race(what, address + i, thread, "read", a.reader == ByteAccess::kSeveral ? thread + 1 : a.reader);
    a.writer = uint16_t(thread);
    a.write_generation = b.generation;
  }
  return p;
}

inline unsigned char *shared_read(uint32_t address, size_t bytes, const char *what) {
  return shared_read(address, bytes, what, linear_thread());
}
inline unsigned char *shared_write(uint32_t address, size_t bytes, const char *what) {
  return shared_write(address, bytes, what, linear_thread());
}

inline uint32_t shared_address_of(const void *pointer) {
  Block &b = block();
  const unsigned char *p = static_cast<const unsigned char *>(pointer);
  if (p < b.shared || p > b.shared + b.shared_bytes)
    fail("a pointer that is not into shared memory taken as a shared address");
  return kSharedBase + uint32_t(p - b.shared);
}

/// Element `index` of the `T`s at shared address `address`, written and read
/// through a generic pointer in the CUDA (build.py rewrites those accesses).
template <class T> void generic_store(uint32_t address, long long index, T value) {
  std::memcpy(shared_write(uint32_t(address + index * sizeof(T)), sizeof(T), "a store through a generic pointer"),
              &value, sizeof(T));
}
template <class T> T generic_load(uint32_t address, long long index) {
  T value;
  std::memcpy(&value, shared_read(uint32_t(address + index * sizeof(T)), sizeof(T), "a load through a generic pointer"),
              sizeof(T));
  return value;
}

// --- global memory ------------------------------------------------------------------

/// The tensors' memory, as the harness registers it: the runtime's global
/// accesses and copies must fall inside one of these ranges (none
/// registered: no check).
inline std::vector<std::pair<uintptr_t, uintptr_t>> &global_ranges() {
  static std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  return ranges;
}

inline void check_global(const void *pointer, size_t bytes, const char *what) {
  const auto &ranges = global_ranges();
  if (ranges.empty())
    return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(pointer), end = begin + bytes;
  for (auto [low, high] : ranges)
    if (begin >= low && end <= high)
      return;
  Block &b = block();
  fail("%s of %zu bytes at %p, outside every tensor (block (%u, %u, %u), thread %u)", what, bytes, pointer,
       b.index.x, b.index.y, b.index.z, linear_thread());
}

// --- asynchronous copies ---------------------------------------------------------

inline void perform(const AsyncCopy &copy) {
  unsigned char *dst = shared_write(copy.dst, copy.bytes, "cp.async");
  if (copy.src_bytes < 0 || copy.src_bytes > copy.bytes)
    fail("cp.async of %d bytes reading %d", copy.bytes, copy.src_bytes);
  if (copy.src_bytes > 0) {
    check_global(copy.src, copy.src_bytes, "cp.async from global memory");
    std::memcpy(dst, copy.src, copy.src_bytes);
  }
  std::memset(dst + copy.src_bytes, 0, copy.bytes - copy.src_bytes);
}

inline void async_copy(uint32_t dst, const void *src, int bytes, int src_bytes) {
  if (dst % bytes != 0)
    fail("cp.async of %d bytes to a misaligned shared address", bytes);
  shared_at(dst, bytes, "cp.async");
  fiber().open_group.push_back({dst, static_cast<const unsigned char *>(src), bytes, src_bytes});
}

inline void commit_group() {
  Fiber &f = fiber();
  f.committed.push_back(std::move(f.open_group));
  f.open_group.clear();
}

/// cp.async.wait_group: the committed groups but the newest `pending` land.
inline void wait_group(int pending) {
  Fiber &f = fiber();
  while (f.committed.size() > size_t(pending)) {
    for (const AsyncCopy &copy : f.committed.front())
      perform(copy);
    f.committed.erase(f.committed.begin());
  }
}

// --- launches --------------------------------------------------------------------

inline int &last_error() {
  static thread_local int error = 0;
  return error;
}

/// Dynamic shared memory a kernel may take (cudaFuncSetAttribute).
inline std::vector<std::pair<const void *, int>> &shared_limits() {
  static std::vector<std::pair<const void *, int>> limits;
  return limits;
}

constexpr int kDefaultSharedLimit = 48 * 1024;
constexpr int kDeviceSharedLimit = 163 * 1024; // an sm_80 block's most

inline void fiber_entry() {
  Block &b = *current_block;
#ifdef TKC_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &scheduler_stack_bottom, &scheduler_stack_size);
#endif
  b.body();
  Fiber &self = fiber();
  // Copies nobody waited for still land (their data is never read).
  commit_group();
  wait_group(0);
  self.done = true;
  --b.alive;
  // A barrier counts every thread of the block: one that some threads
  // left the kernel without reaching is an error, not a release.
  if (b.arrived > 0)
    fail("block (%u, %u, %u): thread %u left the kernel while %u threads wait at __syncthreads", b.index.x,
         b.index.y, b.index.z, linear_thread(), b.arrived);
#ifdef TKC_EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, scheduler_stack_bottom, scheduler_stack_size);
#endif
  setcontext(&scheduler_context);
}

/// TKC_EMU_ORDER=reverse runs the last warp first and, within a warp, the
/// last lane first, so that both directions of an access between threads
/// that no barrier orders are tried.
inline bool reverse_order() {
  static const bool reverse = [] {
    const char *order = std::getenv("TKC_EMU_ORDER");
    return order && std::strcmp(order, "reverse") == 0;
  }();
  return reverse;
}

constexpr size_t kStackBytes = size_t(8) << 20; // the emitted code's unrolled arrays live here

inline bool ready(const Block &b, const Fiber &f, unsigned warp) {
  switch (f.wait) {
  case Fiber::Wait::nothing: return !f.done;
  case Fiber::Wait::block_barrier: return b.generation != f.wait_generation;
  case Fiber::Wait::warp_exchange: return b.warps[warp].generation != f.wait_generation;
  }
  return false;
}

inline void resume(Fiber &f) {
  current_fiber = &f;
#ifdef TKC_EMU_ASAN
  void *fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, f.stack, f.stack_bytes);
#endif
  swapcontext(&scheduler_context, &f.context);
#ifdef TKC_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
  current_fiber = nullptr;
}

/// Runs a block's threads. A warp runs as far as it can (to a __syncthreads
/// or its end) before the next one starts: the other warps' writes and
/// copies are then as late as the barriers allow, so that a read that no
/// barrier orders after them sees stale data.
inline void run_block(Block &b) {
  const unsigned threads = b.dim.x * b.dim.y * b.dim.z, warps = (threads + 31) / 32;
  b.fibers.assign(threads, Fiber{});
  b.warps.assign(warps, WarpExchange{});
  b.alive = threads;
  current_block = &b;
  for (unsigned t = 0; t < threads; ++t) {
    Fiber &f = b.fibers[t];
    f.index = {t % b.dim.x, t / b.dim.x % b.dim.y, t / (b.dim.x * b.dim.y)};
    f.stack_bytes = kStackBytes;
    f.stack = mmap(nullptr, f.stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (f.stack == MAP_FAILED)
      fail("cannot map a thread's stack");
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = f.stack_bytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_entry, 0);
  }
  const bool reverse = reverse_order();
  while (b.alive > 0) {
    bool progressed = false;
    for (unsigned wi = 0; wi < warps; ++wi) {
      const unsigned w = reverse ? warps - 1 - wi : wi;
      const unsigned first = w * 32, lanes = std::min(32u, threads - first);
      for (bool ran = true; ran;) {
        ran = false;
        for (unsigned li = 0; li < lanes; ++li) {
          Fiber &f = b.fibers[first + (reverse ? lanes - 1 - li : li)];
          if (!f.done && ready(b, f, w)) {
            resume(f);
            ran = progressed = true;
          }
        }
      }
    }
    if (!progressed) {
      // Which threads wait where, as "threads 0-15 in __shfl_xor_sync".
      std::string where;
      for (unsigned t = 0; t < threads;) {
        const Fiber &f = b.fibers[t];
        unsigned end = t + 1;
        while (end < threads && b.fibers[end].done == f.done && b.fibers[end].waits_for == f.waits_for)
          ++end;
        if (!f.done)
          where += (where.empty() ? "" : ", ") + std::string("threads ") + std::to_string(t) + "-" +
                   std::to_string(end - 1) + " in " + f.waits_for;
        t = end;
      }
      fail("block (%u, %u, %u): every thread waits and none can go on (%s): a barrier or warp-wide operation "
           "that not every thread reaches",
           b.index.x, b.index.y, b.index.z, where.c_str());
    }
  }
  for (Fiber &f : b.fibers)
    munmap(f.stack, f.stack_bytes);
  current_block = nullptr;
}

inline void run_grid(const void *kernel, dim3 grid, dim3 block_dim, size_t shared_bytes,
                     std::function<void()> body) {
  int limit = kDefaultSharedLimit;
  for (auto &[k, bytes] : shared_limits())
    if (k == kernel)
      limit = bytes;
  const unsigned long long threads = 1ull * block_dim.x * block_dim.y * block_dim.z;
  if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
      grid.z > 65535 || shared_bytes > size_t(limit)) {
    last_error() = 1; // cudaErrorInvalidValue
    return;
  }
  // Exactly the requested bytes, so that AddressSanitizer catches accesses
  // past them through generic pointers.
  std::vector<unsigned char> storage(shared_bytes ? shared_bytes : 1);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        Block b;
        b.index = {x, y, z};
        b.dim = block_dim;
        b.grid = grid;
        // Shared memory starts with garbage on a GPU: a kernel must not
        // read what it did not write.
        std::memset(storage.data(), 0xA5, storage.size());
        b.shared = storage.data();
        b.shared_bytes = shared_bytes;
        b.accesses.assign(shared_bytes, ByteAccess{});
        b.body = body;
        run_block(b);
      }
}

/// `kernel<<<grid, block, shared, stream>>>(args...)`, as the build script
/// rewrites it: `tkc_emu::launch(kernel, grid, block, shared, stream)(args...)`.
template <class... Params> struct Launch {
  void (*kernel)(Params...);
  dim3 grid, block;
  size_t shared;
  template <class... Args> void operator()(Args &&...args) const {
    auto call = [kernel = kernel, values = std::make_tuple(Params(std::forward<Args>(args))...)]() {
      std::apply(kernel, values);
    };
    run_grid(reinterpret_cast<const void *>(kernel), grid, block, shared, call);
  }
};

template <class... Params, class Stream>
Launch<Params...> launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared, Stream) {
  return {kernel, grid, block, shared};
}

} // namespace tkc_emu

// The harness's entry points (tools/emu/launch.py), in the library each
// build makes of one .cu file.
extern "C" __attribute__((visibility("default"), used)) void tkc_emu_register_memory(const void *data, size_t bytes) {
  const uintptr_t low = reinterpret_cast<uintptr_t>(data);
  ::tkc_emu::global_ranges().emplace_back(low, low + bytes);
}
extern "C" __attribute__((visibility("default"), used)) void tkc_emu_forget_memory() {
  ::tkc_emu::global_ranges().clear();
}
