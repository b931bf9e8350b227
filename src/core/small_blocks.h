// Small blocks: recycled memory for the small objects that are made on one thread and
// freed on another (the element of a small-element pipeline: its Buffer and its vector
// of tensors, made by a Prefetch's runner, freed by the consumer).
//
// malloc's per-thread cache holds 7 blocks of a size, so when one thread allocates and
// another frees, every other block goes through malloc's shared arena under its lock,
// from both threads: 40% of the CPU of handing a scalar across threads (handoff_bench).
// Here a thread frees into its own free list of the block's class; past kLocalMax blocks
// it hands a batch of kBatch to a shared pool (one lock per batch), where the allocating
// thread takes them back as a batch. Classes are 64-byte steps up to kMaxBytes; a larger
// request is malloc's. Bounded: kLocalMax blocks per class per thread and kMaxPoolBatches
// batches per class in the pool (beyond that, blocks go back to malloc); a thread's lists
// go to the pool when it exits. Off under AddressSanitizer (every block is malloc's, so a
// use after free is still caught).
//
//   int c = small_blocks::ClassOf(bytes);   // -1: not small
//   void* p = small_blocks::Take(c);        // BlockBytes(c) bytes, 64-byte aligned
//   small_blocks::Put(p, c);                // from any thread
//
// Thread-safety: all functions, from any thread.
#ifndef SLUICE_CORE_SMALL_BLOCKS_H_
#define SLUICE_CORE_SMALL_BLOCKS_H_

#include <cstddef>

namespace sluice::small_blocks {

inline constexpr size_t kStep = 64;
inline constexpr size_t kMaxBytes = 512;

// The class of a block of `bytes`, or -1 when it is not small (or recycling is off).
int ClassOf(size_t bytes);
inline size_t BlockBytes(int c) { return static_cast<size_t>(c + 1) * kStep; }
// A block of class c (throws std::bad_alloc when memory is out).
void* Take(int c);
// Gives back a block that Take(c) returned.
void Put(void* block, int c);

}  // namespace sluice::small_blocks

#endif  // SLUICE_CORE_SMALL_BLOCKS_H_
