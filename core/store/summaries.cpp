#include "store/summaries.h"

#include <algorithm>

namespace myelin::store::detail {

Summary read_summary(const Statement& s, int column) {
    Summary out;
    out.first_step = s.int64(column);
    out.last_step = s.int64(column + 1);
    out.count = s.int64(column + 2);
    out.min = s.real(column + 3);
    out.max = s.real(column + 4);
    out.first = s.real(column + 5);
    out.last = s.real(column + 6);
    return out;
}

SummaryWriter::SummaryWriter(Database& db)
    : points_(db.prepare("SELECT step, value FROM metrics WHERE run = ?1 AND key = ?2 AND step "
                         "BETWEEN ?3 AND ?4 ORDER BY step")),
      blocks_(db.prepare(
          "SELECT block, first_step, last_step, count, min, max, first_value, "
          "last_value FROM metric_summaries WHERE run = ?1 AND key = ?2 AND level = ?3 AND "
          "block BETWEEN ?4 AND ?5 ORDER BY block")),
      upsert_(db.prepare("INSERT OR REPLACE INTO metric_summaries (run, key, level, block, "
                         "first_step, last_step, count, min, max, first_value, last_value) "
                         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)")),
      erase_(db.prepare("DELETE FROM metric_summaries WHERE run = ?1 AND key = ?2 AND level = ?3 "
                        "AND block = ?4")) {}

void SummaryWriter::rebuild(int64_t run, std::string_view key, int level, int64_t first_block,
                            int64_t last_block) {
    std::vector<Summary> blocks(size_t(last_block - first_block + 1));
    if (level == kFirstSummaryLevel) {
        const int shift = kSummaryLevelShift * level;
        points_.bind(1, run).bind(2, key).bind(3, first_block << shift);
        points_.bind(4, ((last_block + 1) << shift) - 1);
        while (points_.step("summarising metric points")) {
            const int64_t step = points_.int64(0);
            blocks[size_t((step >> shift) - first_block)].append_point(step, points_.real(1));
        }
        points_.reset();
    } else {
        const int64_t first_child = first_block << kSummaryLevelShift;
        const int64_t last_child = ((last_block + 1) << kSummaryLevelShift) - 1;
        blocks_.bind(1, run).bind(2, key).bind(3, level - 1).bind(4, first_child);
        blocks_.bind(5, last_child);
        while (blocks_.step("summarising metric blocks")) {
            const int64_t child = blocks_.int64(0);
            blocks[size_t((child >> kSummaryLevelShift) - first_block)].append(
                read_summary(blocks_, 1));
        }
        blocks_.reset();
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
        const Summary& s = blocks[i];
        const int64_t b = first_block + int64_t(i);
        if (s.empty()) { // cannot happen while points are never removed one by one
            erase_.bind(1, run).bind(2, key).bind(3, level).bind(4, b);
            erase_.run("updating metric summaries");
            continue;
        }
        upsert_.bind(1, run).bind(2, key).bind(3, level).bind(4, b).bind(5, s.first_step);
        upsert_.bind(6, s.last_step).bind(7, s.count).bind(8, s.min).bind(9, s.max);
        upsert_.bind(10, s.first).bind(11, s.last);
        upsert_.run("updating metric summaries");
    }
}

void SummaryWriter::update(int64_t run, std::string_view key, std::vector<int64_t> steps) {
    // `steps` becomes the block numbers of the current level.
    std::vector<int64_t>& blocks = steps;
    for (int level = kFirstSummaryLevel; level <= kSummaryLevels; ++level) {
        const int shift =
            level == kFirstSummaryLevel ? kSummaryLevelShift * level : kSummaryLevelShift;
        for (auto& b : blocks)
            b >>= shift;
        std::sort(blocks.begin(), blocks.end());
        blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
        // One scan per run of consecutive blocks.
        for (size_t i = 0; i < blocks.size();) {
            size_t j = i;
            while (j + 1 < blocks.size() && blocks[j + 1] == blocks[j] + 1)
                ++j;
            rebuild(run, key, level, blocks[i], blocks[j]);
            i = j + 1;
        }
    }
}

} // namespace myelin::store::detail
