#include "runtime/buffer_charge.h"

#include <algorithm>
#include <cstdio>

#include "runtime/async_buffer.h"
#include "runtime/runtime.h"

namespace sluice {
namespace {

std::string Mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

void BufferCharge::Bind(const IteratorContext& ctx, IteratorBase* owner, const char* hint) {
  Clear();
  budget_ = &ctx.runtime()->memory();
  owner_ = owner;
  owner_stats_ = &owner->stats();
  hint_ = hint;
  const int64_t hl = budget_->hold_limit();
  quantum_ = hl > 0 ? std::clamp<int64_t>(hl / 256, 1, int64_t{1} << 16) : int64_t{1} << 16;
  Publish();
}

Status BufferCharge::Grow() {
  const int64_t need = bytes_ - reserved_;
  if (budget_ == nullptr) {
    reserved_ = bytes_;
    return Status::OK();
  }
  // A whole number of quanta when it fits, else exactly what is needed.
  const int64_t chunk = (need + quantum_ - 1) / quantum_ * quantum_;
  if (budget_->TryHold(chunk)) {
    reserved_ += chunk;
    ClaimTransferred();
    return Status::OK();
  }
  if (chunk != need && budget_->TryHold(need)) {
    reserved_ += need;
    ClaimTransferred();
    return Status::OK();
  }
  return Exhausted(elements_, bytes_);
}

Status BufferCharge::CheckFits(int64_t elements, int64_t bytes_per_element) const {
  // Only under a budget the user set (hold limit == budget): under the default one the
  // memory-available check (CheckBufferMemory) speaks, as it always has.
  if (budget_ == nullptr || budget_->hold_limit() <= 0 ||
      budget_->hold_limit() > budget_->limit() || elements <= 0 || bytes_per_element <= 0 ||
      elements <= budget_->hold_limit() / bytes_per_element) {
    return Status::OK();
  }
  const __int128 total = static_cast<__int128>(elements) * bytes_per_element;
  return Exhausted(elements, total > INT64_MAX ? INT64_MAX : static_cast<int64_t>(total));
}

Status BufferCharge::Exhausted(int64_t elements, int64_t bytes) const {
  const std::string& prefix = owner_->prefix();
  const std::string& op = owner_->node().op();
  std::string where = prefix.find('/') == std::string::npos ? prefix + "(" + op + ")" : prefix;
  std::string msg = "[op " + where + "] " + op + " cannot hold " + std::to_string(elements) +
                    " elements of " + std::to_string(bytes) + " bytes (" + Mib(bytes) +
                    ") within the pipeline's RAM budget of " +
                    std::to_string(budget_->limit()) + " bytes (" + Mib(budget_->limit()) +
                    "): buffers that keep their elements may hold " +
                    std::to_string(budget_->hold_limit()) + " bytes in all and already hold " +
                    std::to_string(budget_->held()) +
                    "; raise options.autotune.ram_budget (-1: unlimited)";
  if (hint_ != nullptr) {
    msg += " or ";
    msg += hint_;
  }
  return ResourceExhaustedError(std::move(msg));
}

void BufferCharge::Shrink() {
  // Keep one quantum of slack, so a buffer at its steady size does not thrash the budget.
  const int64_t keep = std::max<int64_t>(bytes_, 0) + quantum_;
  if (budget_ != nullptr && reserved_ > keep) budget_->ReleaseHeld(reserved_ - keep);
  reserved_ = std::min(reserved_, keep);
}

void BufferCharge::ClaimTransferred() {
  FetchScope* scope = FetchScope::Current();
  const int64_t bytes = unclaimed_;
  unclaimed_ = 0;
  if (scope == nullptr || budget_ == nullptr) return;
  const int64_t t = scope->TakeTransferred();
  const int64_t claim = std::clamp<int64_t>(bytes, 0, t);
  scope->AddTransferred(t - claim);
  if (claim > 0) budget_->Release(claim);
}

void BufferCharge::Clear() {
  if (budget_ != nullptr && reserved_ > 0) budget_->ReleaseHeld(reserved_);
  reserved_ = 0;
  bytes_ = 0;
  elements_ = 0;
  Publish();
}

}  // namespace sluice
