#include "core/small_blocks.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "core/mutex.h"
#include "core/cpu.h"
#include "core/sanitizers.h"

namespace sluice::small_blocks {
namespace {

constexpr bool kRecycle = !kAddressSanitizer;

constexpr int kClasses = static_cast<int>(kMaxBytes / kStep);
constexpr int kLocalMax = 256;
constexpr int kBatch = 128;
constexpr size_t kMaxPoolBlocks = 32 * kBatch;
constexpr int kPrefetchAhead = 4;

// Free blocks are kept as arrays of pointers, never linked through the blocks themselves:
// taking a block then reads nothing in it. (A list linked through the blocks made every
// Take a dependent load of a line the freeing thread wrote last, a cache miss per block
// on the allocating thread when the two are different cores.)

class Pool {
 public:
  static Pool& Get() {
    static auto* pool = new Pool();  // never destroyed: blocks may be freed late
    return *pool;
  }
  // Moves up to kBatch blocks of class c to `out`; returns how many (0: the pool has none).
  int Take(int c, void** out) {
    MutexLock l(&mu_);
    std::vector<void*>& v = blocks_[c];
    const int n = static_cast<int>(std::min<size_t>(v.size(), kBatch));
    std::memcpy(out, v.data() + v.size() - n, n * sizeof(void*));
    v.resize(v.size() - n);
    return n;
  }
  // Keeps the n blocks, or frees those beyond the pool's bound.
  void Give(int c, void* const* blocks, int n) {
    int kept = 0;
    {
      MutexLock l(&mu_);
      std::vector<void*>& v = blocks_[c];
      kept = static_cast<int>(std::min<size_t>(n, kMaxPoolBlocks - std::min(v.size(), kMaxPoolBlocks)));
      v.insert(v.end(), blocks, blocks + kept);
    }
    for (int i = kept; i < n; ++i) std::free(blocks[i]);
  }

 private:
  Mutex mu_;
  std::vector<void*> blocks_[kClasses] GUARDED_BY(mu_);
};

// One thread's free blocks: a stack of pointers per class (the most recently freed on
// top, taken first: those are the likeliest to be in this core's cache).
struct Local {
  void* blocks[kClasses][kLocalMax];
  int counts[kClasses] = {};
  ~Local();
};

thread_local bool tls_exited = false;  // trivially destructible: readable during exit

Local::~Local() {
  tls_exited = true;
  for (int c = 0; c < kClasses; ++c) {
    if (counts[c] > 0) Pool::Get().Give(c, blocks[c], counts[c]);
    counts[c] = 0;
  }
}

// This thread's lists; null once the thread is exiting (they went to the pool).
Local* ThisThread() {
  if (tls_exited) return nullptr;
  thread_local Local local;
  return &local;
}

}  // namespace

int ClassOf(size_t bytes) {
  if (!kRecycle || bytes == 0 || bytes > kMaxBytes) return -1;
  return static_cast<int>((bytes + kStep - 1) / kStep) - 1;
}

void* Take(int c) {
  if (Local* local = ThisThread()) {
    int& n = local->counts[c];
    if (n == 0) n = Pool::Get().Take(c, local->blocks[c]);
    if (n > 0) {
      // The block handed out kPrefetchAhead takes from now, fetched for writing now: a
      // block freed on another core is a cache miss on its first write (on each of its
      // first two lines: a small Buffer's header and its data).
      if (n > kPrefetchAhead) {
        char* ahead = static_cast<char*>(local->blocks[c][n - 1 - kPrefetchAhead]);
        PrefetchForWrite(ahead);
        if (c > 0) PrefetchForWrite(ahead + kStep);
      }
      return local->blocks[c][--n];
    }
  }
  // New blocks start on a cache line, so a block of k lines touches k lines.
  void* p = std::aligned_alloc(kStep, BlockBytes(c));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void Put(void* block, int c) {
  Local* local = ThisThread();
  if (local == nullptr) {
    std::free(block);
    return;
  }
  int& n = local->counts[c];
  if (n == kLocalMax) {
    // Full: the kBatch freed longest ago go to the pool as one batch.
    void** v = local->blocks[c];
    Pool::Get().Give(c, v, kBatch);
    std::memmove(v, v + kBatch, (kLocalMax - kBatch) * sizeof(void*));
    n = kLocalMax - kBatch;
  }
  local->blocks[c][n++] = block;
}

}  // namespace sluice::small_blocks
