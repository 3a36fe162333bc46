#include "trainer/progress_report.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace shard::trainer {

ProgressReport::ProgressReport(std::FILE* out, absl::Duration every,
                               uint64_t epochs)
    : out_(out), every_(every), epochs_(epochs) {}

void ProgressReport::Step(uint32_t rank, uint64_t epoch, uint64_t position,
                          uint64_t epoch_end, uint64_t epoch_length,
                          uint64_t samples) {
  rank_ = rank;
  ++steps_;
  samples_ += samples;
  if (epoch != last_epoch_) {
    ++epochs_seen_;
    last_epoch_ = epoch;
  }
  const absl::Time now = absl::Now();
  if (!have_first_) {
    have_first_ = true;
    first_epoch_ = epoch;
    first_position_ = position;
    first_step_ = now;
    next_line_ = now + every_;
    return;
  }
  if (every_ <= absl::ZeroDuration() || now < next_line_) return;
  next_line_ = now + every_;
  // Global positions trained since the first step, across epochs.
  const uint64_t done = (epoch - first_epoch_) * epoch_length + position -
                        std::min(position, first_position_);
  const double seconds = absl::ToDoubleSeconds(now - first_step_);
  const double rate = seconds > 0 ? done / seconds : 0.0;
  const uint64_t left =
      (epoch_end > position ? epoch_end - position : 0) +
      (epochs_ > epoch + 1 ? epochs_ - epoch - 1 : 0) * epoch_length;
  const std::string eta =
      rate > 0 ? absl::FormatDuration(
                     absl::Trunc(absl::Seconds(left / rate), absl::Seconds(1)))
               : std::string("unknown");
  std::fprintf(out_,
               "progress rank=%u epoch=%llu/%llu step=%llu "
               "position=%llu/%llu (%.1f%%) world_samples_per_s=%.0f eta=%s\n",
               rank_, static_cast<unsigned long long>(epoch + 1),
               static_cast<unsigned long long>(epochs_),
               static_cast<unsigned long long>(steps_),
               static_cast<unsigned long long>(position),
               static_cast<unsigned long long>(epoch_end),
               epoch_end > 0 ? 100.0 * position / epoch_end : 100.0, rate,
               eta.c_str());
  std::fflush(out_);
}

void ProgressReport::Summary() const {
  const double seconds =
      have_first_ ? absl::ToDoubleSeconds(absl::Now() - first_step_) : 0.0;
  std::fprintf(out_,
               "summary rank=%u epochs=%llu steps=%llu samples=%llu "
               "train_seconds=%.1f samples_per_s=%.0f\n",
               rank_, static_cast<unsigned long long>(epochs_seen_),
               static_cast<unsigned long long>(steps_),
               static_cast<unsigned long long>(samples_), seconds,
               seconds > 0 ? samples_ / seconds : 0.0);
  std::fflush(out_);
}

}  // namespace shard::trainer
