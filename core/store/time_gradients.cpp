// Recurrent layers' gradient through time in the run store (schema version 5): one row per
// (run, layer, step, layer of the stack, direction), the norms a little-endian float64 blob.
// Written at once, not queued (a probe step adds a handful of rows of a few hundred bytes), and
// without waiting for the queued metric points: nothing orders the two.
#include "store/run_store_impl.h"

#include <bit>
#include <cstring>

namespace myelin::store {

using detail::Statement;

namespace {
constexpr size_t kMaxTimeSteps = 1'000'000;

// A store whose version says it has the table but does not (copied by hand, damaged) gets a
// message saying so instead of SQLite's "no such table".
void require_time_gradient_table(detail::Database& db) {
    if (db.query_int("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = "
                     "'time_gradients'",
                     "looking for the time_gradients table") == 0)
        throw StoreError(db.message("it has no time_gradients table although its schema version "
                                    "says so; the file was changed outside Myelin"));
}
} // namespace

void RunStore::log_time_gradients(int64_t run, const TimeGradientSeries& series) {
    static_assert(std::endian::native == std::endian::little,
                  "time gradient blobs are little-endian");
    Impl& s = impl();
    s.require_writable();
    const std::string what = "the gradient through time of '" + series.layer + "' of run " +
                             std::to_string(run) + " at step " + std::to_string(series.step);
    if (series.layer.empty())
        throw StoreError(s.message("the gradient through time of run " + std::to_string(run) +
                                   " needs a layer name"));
    if (series.step < 0 || series.step > detail::kMaxStep)
        throw StoreError(s.message(what + ": the step is out of range (0 to 2^62 - 1)"));
    if (series.stack_layer < 0 || series.direction < 0 || series.direction > 1)
        throw StoreError(s.message(what + ": stack layer " + std::to_string(series.stack_layer) +
                                   " / direction " + std::to_string(series.direction) +
                                   " is out of range (a layer >= 0, direction 0 or 1)"));
    if (series.norms.empty() || series.norms.size() > kMaxTimeSteps)
        throw StoreError(s.message(what + ": needs 1 to 1,000,000 time steps, got " +
                                   std::to_string(series.norms.size())));
    std::lock_guard lock(s.db_mutex);
    s.db->write_transaction("recording a gradient through time", [&] {
        require_time_gradient_table(*s.db);
        Statement known = s.db->prepare("SELECT count(*) FROM runs WHERE id = ?1");
        known.bind(1, run);
        if (!known.step("looking up the run") || known.int64(0) == 0)
            throw StoreError(s.message(what + ": no run with id " + std::to_string(run)));
        Statement insert = s.db->prepare(
            "INSERT OR REPLACE INTO time_gradients (run, layer, step, stack_layer, direction, "
            "wall_time, norms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
        insert.bind(1, run).bind(2, series.layer).bind(3, series.step);
        insert.bind(4, series.stack_layer).bind(5, int64_t(series.direction));
        insert.bind(6, series.wall_time > 0 ? series.wall_time : detail::unix_now());
        insert.bind_blob(7, std::as_bytes(std::span(series.norms)));
        insert.run("recording a gradient through time");
    });
}

std::vector<std::string> RunStore::time_gradient_layers(int64_t run) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    require_time_gradient_table(*s.db);
    // min(id): the first capture's order, the model's forward order.
    Statement q = s.db->prepare(
        "SELECT layer FROM time_gradients WHERE run = ?1 GROUP BY layer ORDER BY min(id)");
    q.bind(1, run);
    std::vector<std::string> out;
    while (q.step("listing gradient-through-time layers"))
        out.push_back(q.text(0));
    return out;
}

std::vector<int64_t> RunStore::time_gradient_steps(int64_t run, std::string_view layer) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    require_time_gradient_table(*s.db);
    Statement q = s.db->prepare("SELECT DISTINCT step FROM time_gradients WHERE run = ?1 AND "
                                "layer = ?2 ORDER BY step");
    q.bind(1, run).bind(2, layer);
    std::vector<int64_t> out;
    while (q.step("listing gradient-through-time steps"))
        out.push_back(q.int64(0));
    return out;
}

std::vector<TimeGradientSeries> RunStore::time_gradients(int64_t run, std::string_view layer,
                                                         int64_t step) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    return s.db->read_transaction("reading a gradient through time", [&] {
        require_time_gradient_table(*s.db);
        // The nearest recorded step: two index seeks, the earlier on a tie.
        const auto seek = [&](const char* sql) -> std::optional<int64_t> {
            Statement q = s.db->prepare(sql);
            q.bind(1, run).bind(2, layer).bind(3, step);
            if (!q.step("looking up a gradient through time")) return std::nullopt;
            return q.int64(0);
        };
        const auto before = seek("SELECT step FROM time_gradients WHERE run = ?1 AND layer = ?2 "
                                 "AND step <= ?3 ORDER BY step DESC LIMIT 1");
        std::optional<int64_t> chosen = before;
        if (!before || *before != step) {
            const auto after = seek("SELECT step FROM time_gradients WHERE run = ?1 AND layer = "
                                    "?2 AND step > ?3 ORDER BY step LIMIT 1");
            if (!before || (after && *after - step < step - *before)) chosen = after;
        }
        std::vector<TimeGradientSeries> out;
        if (!chosen) return out;
        Statement q = s.db->prepare(
            "SELECT stack_layer, direction, wall_time, norms FROM time_gradients WHERE run = ?1 "
            "AND layer = ?2 AND step = ?3 ORDER BY stack_layer, direction");
        q.bind(1, run).bind(2, layer).bind(3, *chosen);
        while (q.step("reading a gradient through time")) {
            TimeGradientSeries g;
            g.layer = std::string(layer);
            g.step = *chosen;
            g.stack_layer = q.int64(0);
            g.direction = int(q.int64(1));
            g.wall_time = q.real(2);
            const auto blob = q.blob(3);
            if (blob.size() % sizeof(double) != 0 || blob.empty())
                throw StoreError(s.message("the gradient through time of '" + std::string(layer) +
                                           "' of run " + std::to_string(run) + " at step " +
                                           std::to_string(*chosen) +
                                           " is corrupt: " + std::to_string(blob.size()) +
                                           " bytes is not a whole number of float64 values"));
            g.norms.resize(blob.size() / sizeof(double));
            std::memcpy(g.norms.data(), blob.data(), blob.size()); // blobs need not be aligned
            out.push_back(std::move(g));
        }
        return out;
    });
}

} // namespace myelin::store
