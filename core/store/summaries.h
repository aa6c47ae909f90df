#pragma once
// Block summaries of metric series (table metric_summaries). Scanning a 1M-point series row by
// row costs ~100 ms in SQLite, so the writer keeps, per series, the min/max/first/last/count of
// every aligned block of 4^level steps (levels 2..8: 16 to 65536 steps), recomputed from the
// level below (level 2 from the points) whenever a point in the block is written. Downsampling
// reads whole blocks of the coarsest level that still fits its buckets (see
// RunStore::metric_series_downsampled): 4 to 16 rows per bucket whatever the series length, or
// the points themselves when buckets are under 64 steps wide (then at most 64 per bucket).
// Factor 4 rather than 16 between levels: with 16 a read could need 128 rows per bucket. No
// level of 4 steps: it would cost a quarter more rows written (measured: -30% ingest) to speed
// up only reads that are cheap anyway.
#include "store/sqlite_db.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace myelin::store::detail {

inline constexpr int kFirstSummaryLevel = 2;
inline constexpr int kSummaryLevels = 8;     // the last level
inline constexpr int kSummaryLevelShift = 2; // block size of level L: 1 << (2 L) steps

inline int64_t block_size(int level) {
    return int64_t(1) << (kSummaryLevelShift * level);
}

// min/max ignore NaN; first/last keep whatever value sits at first_step/last_step.
struct Summary {
    int64_t first_step = 0;
    int64_t last_step = 0;
    int64_t count = 0;
    double min = std::numeric_limits<double>::quiet_NaN();
    double max = std::numeric_limits<double>::quiet_NaN();
    double first = 0;
    double last = 0;

    bool empty() const { return count == 0; }
    // `other` lies entirely after everything added so far (pieces arrive in step order).
    void append(const Summary& other) {
        if (other.empty()) return;
        if (empty()) {
            first_step = other.first_step;
            first = other.first;
        }
        last_step = other.last_step;
        last = other.last;
        count += other.count;
        if (!std::isnan(other.min) && (std::isnan(min) || other.min < min)) min = other.min;
        if (!std::isnan(other.max) && (std::isnan(max) || other.max > max)) max = other.max;
    }
    void append_point(int64_t step, double value) {
        append(Summary{step, step, 1, value, value, value, value});
    }
};

// Prepared statements of one connection that maintain the summaries of a series.
class SummaryWriter {
  public:
    explicit SummaryWriter(Database& db);
    // Recomputes every level's blocks holding any of `steps` (sorted or not) for (run, key).
    void update(int64_t run, std::string_view key, std::vector<int64_t> steps);

  private:
    // Recomputes the level's blocks first_block..last_block from one scan of the level below
    // (the points, for the first level).
    void rebuild(int64_t run, std::string_view key, int level, int64_t first_block,
                 int64_t last_block);

    Statement points_;
    Statement blocks_;
    Statement upsert_;
    Statement erase_;
};

// Reads a summary row's columns starting at `column`: first_step, last_step, count, min, max,
// first_value, last_value.
Summary read_summary(const Statement& s, int column);

} // namespace myelin::store::detail
