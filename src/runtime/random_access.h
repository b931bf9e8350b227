// RandomAccess: the interface of iterators that serve row i of their output by index.
//
// An iterator whose op declares row access (OpTraits::row_access, graph/random_access.h)
// returns itself from IteratorBase::AsRandomAccess(); GlobalShuffle asks its input for it
// once and then reads rows in the order of its permutation. Reading a row does not move
// the iterator's own position (GetNext, Skip and checkpoints are unaffected), so a
// random-access input needs no checkpoint of its own under GlobalShuffle.
//
// An iterator of a kInputs op (map, zip) serves rows only when each of its inputs' iterators
// does; it returns null from AsRandomAccess otherwise (e.g. with a split provider, where a
// source reads the rows the provider names, not any row).
//
// Gathering a batch. A Batch whose input is a RowStream (below: a source in its own order,
// a GlobalShuffle in its permutation's) over rows that lie in memory (GathersFromMemory:
// from_tensor_slices' numeric tensors, a loaded IDX file, a range's computed values, a Zip
// of such) takes the next n row indices (TakeRows) and gathers those rows in one call
// (GatherRows): each row is copied once, straight from memory into the batch, with the
// rows ahead prefetched. The
// GetNext path builds an element per row (a view holding a reference on the file's
// buffer, a tuple for a zip) and copies it again into the batch. Batch's elements, order,
// checkpoints (the positions live in the stream) and errors are the same either way: a
// row that is a copy from memory cannot fail.
//
// Stats: the stream counts the rows it hands out as produced (TakeRows), and the rows'
// iterators count the rows they serve (GatherRows), as GetNext and GetRow do; the CPU of
// a gather counts as the Batch's own (no GetNext of the inputs is timed).
//
// Thread-safety: as the iterator (one caller at a time).
#ifndef SLUICE_RUNTIME_RANDOM_ACCESS_H_
#define SLUICE_RUNTIME_RANDOM_ACCESS_H_

#include <cstdint>
#include <span>

#include "sluice/element.h"
#include "sluice/status.h"

namespace sluice {

class RandomAccess {
 public:
  virtual ~RandomAccess() = default;
  // The number of rows (the dataset's cardinality); fixed for the iterator's lifetime.
  virtual int64_t RowCount() const = 0;
  // Row i, 0 <= i < RowCount(): the element GetNext would produce at position i. Errors
  // name the op and the row, as GetNext's would.
  virtual Result<Element> GetRow(int64_t i) = 0;

  // Whether GatherRows serves rows now: every row is a copy from memory (or computed, as a
  // range's), which cannot fail for an index in range. It may become true later (an IDX file loads on its first read).
  virtual bool GathersFromMemory() const { return false; }
  // Rows rows[0..n) (n >= 1, each in range) stacked into one batch exactly as Batch stacks
  // what GetRow returns (component c: shape [n] + the row's, the rows' names), each row
  // copied straight from memory into the batch. Only when GathersFromMemory(); counts the
  // rows as produced.
  virtual Result<Element> GatherRows(std::span<const int64_t> rows);
};

// RowStream: an iterator whose next elements are rows of a RandomAccess (StreamRows) in an
// order it knows ahead. See "Gathering a batch" above.
class RowStream {
 public:
  virtual ~RowStream() = default;
  // The rows the next elements are; valid for the iterator's lifetime.
  virtual RandomAccess* StreamRows() = 0;
  // Moves past up to n next elements and writes their row indices to out[0..k); returns
  // k (< n only at the end). The elements count as produced by this iterator, unless it
  // is its own StreamRows (its GatherRows counts them).
  virtual int64_t TakeRows(int64_t n, int64_t* out) = 0;
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_RANDOM_ACCESS_H_
