#include "core/small_blocks.h"

#include <cstdlib>
#include <new>
#include <vector>

#include "core/mutex.h"
#include "core/sanitizers.h"

namespace sluice::small_blocks {
namespace {

constexpr bool kRecycle = !kAddressSanitizer;

constexpr int kClasses = static_cast<int>(kMaxBytes / kStep);
constexpr int kLocalMax = 256;
constexpr int kBatch = 128;
constexpr size_t kMaxPoolBatches = 32;

struct Node {
  Node* next;
};
struct Batch {
  Node* head;
  int count;
};

void FreeList(Node* n) {
  while (n != nullptr) {
    Node* next = n->next;
    std::free(n);
    n = next;
  }
}

class Pool {
 public:
  static Pool& Get() {
    static auto* pool = new Pool();  // never destroyed: blocks may be freed late
    return *pool;
  }
  // A batch of class c, or {nullptr, 0} when the pool has none.
  Batch Take(int c) {
    MutexLock l(&mu_);
    if (batches_[c].empty()) return {nullptr, 0};
    const Batch b = batches_[c].back();
    batches_[c].pop_back();
    return b;
  }
  // Keeps the batch, or frees its blocks when the pool is full.
  void Give(int c, Batch b) {
    {
      MutexLock l(&mu_);
      if (batches_[c].size() < kMaxPoolBatches) {
        batches_[c].push_back(b);
        return;
      }
    }
    FreeList(b.head);
  }

 private:
  Mutex mu_;
  std::vector<Batch> batches_[kClasses] GUARDED_BY(mu_);
};

// One thread's free lists.
struct Local {
  Node* heads[kClasses] = {};
  int counts[kClasses] = {};
  ~Local();
};

thread_local bool tls_exited = false;  // trivially destructible: readable during exit

Local::~Local() {
  tls_exited = true;
  for (int c = 0; c < kClasses; ++c) {
    if (heads[c] != nullptr) Pool::Get().Give(c, Batch{heads[c], counts[c]});
    heads[c] = nullptr;
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
    if (local->heads[c] == nullptr) {
      const Batch b = Pool::Get().Take(c);
      local->heads[c] = b.head;
      local->counts[c] = b.count;
    }
    if (Node* n = local->heads[c]) {
      local->heads[c] = n->next;
      --local->counts[c];
      return n;
    }
  }
  void* p = std::malloc(BlockBytes(c));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void Put(void* block, int c) {
  Local* local = ThisThread();
  if (local == nullptr) {
    std::free(block);
    return;
  }
  Node* n = static_cast<Node*>(block);
  n->next = local->heads[c];
  local->heads[c] = n;
  if (++local->counts[c] <= kLocalMax) return;
  // Too many here: the kBatch most recently freed go to the pool as one batch.
  Batch b{local->heads[c], kBatch};
  Node* last = b.head;
  for (int i = 1; i < kBatch; ++i) last = last->next;
  local->heads[c] = last->next;
  local->counts[c] -= kBatch;
  last->next = nullptr;
  Pool::Get().Give(c, b);
}

}  // namespace sluice::small_blocks
