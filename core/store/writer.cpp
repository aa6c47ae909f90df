// The asynchronous half of the run store: log calls queue points, one writer thread commits them
// in batched transactions. The queue is bounded (pending_weight <= queue_capacity) so a fast
// producer waits instead of exhausting memory; a writer error is kept until a caller sees it.
#include "store/run_store_impl.h"
#include "store/summaries.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <unordered_map>

namespace myelin::store {

using detail::QueuedHistogram;
using detail::WriteBatch;

namespace {
struct SeriesId {
    int64_t run;
    std::string_view key;
    bool operator==(const SeriesId&) const = default;
};
struct SeriesIdHash {
    size_t operator()(const SeriesId& id) const {
        return std::hash<std::string_view>()(id.key) ^ (size_t(id.run) * 0x9e3779b97f4a7c15ull);
    }
};
// For a full disk: about what the batch needed (a stored point with its summaries takes about 50
// bytes; blobs their size) and what the file system has free, e.g. "; the batch needed about
// 16.2 kB, 0.0 kB are free".
std::string space_note(const WriteBatch& batch, const std::filesystem::path& folder) {
    uint64_t bytes = 50 * batch.metrics.size();
    for (const auto& h : batch.histograms)
        bytes += 64 + 8 * h.counts.size();
    for (const auto& f : batch.feature_maps)
        bytes += 64 + 2 * f.values.size();
    auto size = [](uint64_t n) {
        char text[32];
        std::snprintf(text, sizeof text, n >= 1'000'000 ? "%.1f MB" : "%.1f kB",
                      double(n) / (n >= 1'000'000 ? 1e6 : 1e3));
        return std::string(text);
    };
    std::string note = "; the batch needed about " + size(bytes);
    std::error_code ec;
    const std::filesystem::space_info space = std::filesystem::space(folder, ec);
    if (!ec) note += ", " + size(space.available) + " are free";
    return note;
}

// What one batch wrote to one series.
struct SeriesTouch {
    std::vector<int64_t> steps;
    const MetricPoint* latest = nullptr; // highest step; later in the queue wins a tie
};
} // namespace

void RunStore::Impl::throw_writer_error(std::unique_lock<std::mutex>& lock) {
    std::string text = std::move(*writer_error);
    writer_error.reset();
    lock.unlock();
    throw StoreError(text);
}

void RunStore::Impl::enqueue(std::span<const MetricPoint> metrics, QueuedHistogram* histogram,
                             std::size_t weight, double now,
                             detail::QueuedFeatureMap* feature_map) {
    std::unique_lock lock(queue_mutex);
    if (has_lasting_error()) throw_writer_error(lock);
    // An item larger than the whole queue is let in alone. While the queue is full, a failure of
    // the writer (e.g. the store stays locked) ends the wait with that error instead of a hang.
    auto room = [&] {
        return pending_weight == 0 || pending_weight + weight <= options.queue_capacity;
    };
    const uint64_t failures_before = writer_failures;
    progress_wake.wait(lock, [&] { return room() || failed_since(failures_before) || stopping; });
    if (stopping) throw StoreError(message("the store is closed"));
    if (!room()) throw_writer_error(lock);
    bool was_empty = queued_weight == 0;
    if (was_empty) first_queued_at = std::chrono::steady_clock::now();
    for (const MetricPoint& p : metrics) {
        queued_metrics.push_back(p);
        if (p.wall_time == 0) queued_metrics.back().wall_time = now;
    }
    if (histogram) {
        if (histogram->wall_time == 0) histogram->wall_time = now;
        queued_histograms.push_back(std::move(*histogram));
    }
    if (feature_map) {
        if (feature_map->wall_time == 0) feature_map->wall_time = now;
        queued_feature_maps.push_back(std::move(*feature_map));
    }
    queued_weight += weight;
    pending_weight += weight;
    ++enqueued_sequence;
    // The writer sleeps until the queue stops being empty, then until the batch is due.
    if (was_empty || queued_weight >= options.batch_points) writer_wake.notify_one();
}

void RunStore::Impl::flush() {
    std::unique_lock lock(queue_mutex);
    if (has_lasting_error()) throw_writer_error(lock);
    const uint64_t target = enqueued_sequence;
    if (committed_sequence >= target) return;
    // A transient error from before this call is stale: wait for the next attempt's outcome.
    const uint64_t failures_before = writer_failures;
    flush_target = std::max(flush_target, target);
    writer_wake.notify_one();
    progress_wake.wait(
        lock, [&] { return committed_sequence >= target || failed_since(failures_before); });
    if (failed_since(failures_before)) throw_writer_error(lock);
}

void RunStore::Impl::settle_for_read() {
    std::unique_lock lock(queue_mutex);
    const uint64_t target = enqueued_sequence;
    if (committed_sequence >= target || writer_error) return;
    flush_target = std::max(flush_target, target);
    writer_wake.notify_one();
    progress_wake.wait(lock, [&] { return committed_sequence >= target || writer_error; });
}

std::optional<std::string> RunStore::Impl::stop_writer() {
    if (!writer.joinable()) return std::nullopt;
    {
        std::lock_guard lock(queue_mutex);
        stopping = true;
        flush_target = enqueued_sequence;
    }
    writer_wake.notify_one();
    progress_wake.notify_all();
    writer.join();
    std::lock_guard lock(queue_mutex);
    auto error = std::move(writer_error);
    writer_error.reset();
    return error;
}

void RunStore::Impl::writer_loop() {
    using Clock = std::chrono::steady_clock;
    WriteBatch batch;
    Clock::time_point retry_at{};
    std::unique_lock lock(queue_mutex);
    for (;;) {
        const bool have_batch = !batch.empty();
        if (queued_weight == 0 && !have_batch) {
            if (stopping) return;
            writer_wake.wait(lock, [&] { return stopping || queued_weight > 0; });
            continue;
        }
        auto urgent = [&] {
            return stopping || flush_target > committed_sequence ||
                   queued_weight >= options.batch_points;
        };
        // A retained (locked-out) batch is retried after a pause; fresh points after the flush
        // interval, unless enough are queued or someone is waiting.
        const auto due = have_batch ? retry_at : first_queued_at + options.flush_interval;
        if (!urgent() && Clock::now() < due) {
            writer_wake.wait_until(lock, due, urgent);
            continue;
        }
        batch.metrics.insert(batch.metrics.end(), std::make_move_iterator(queued_metrics.begin()),
                             std::make_move_iterator(queued_metrics.end()));
        batch.histograms.insert(batch.histograms.end(),
                                std::make_move_iterator(queued_histograms.begin()),
                                std::make_move_iterator(queued_histograms.end()));
        batch.feature_maps.insert(batch.feature_maps.end(),
                                  std::make_move_iterator(queued_feature_maps.begin()),
                                  std::make_move_iterator(queued_feature_maps.end()));
        queued_metrics.clear();
        queued_histograms.clear();
        queued_feature_maps.clear();
        batch.weight += queued_weight;
        queued_weight = 0;
        batch.last_sequence = enqueued_sequence;
        lock.unlock();

        std::optional<std::string> failure;
        bool locked_out = false;
        try {
            write_batch(batch);
        } catch (const detail::BusyError& e) {
            failure = e.what();
            locked_out = true;
        } catch (const detail::DiskFullError& e) {
            failure = e.what() + space_note(batch, folder);
        } catch (const std::exception& e) {
            failure = e.what();
        }

        lock.lock();
        const std::string what = std::to_string(batch.metrics.size()) + " metric points, " +
                                 std::to_string(batch.histograms.size()) + " histograms and " +
                                 std::to_string(batch.feature_maps.size()) + " feature maps";
        if (failure) {
            ++writer_failures;
            // A lasting error is kept until thrown; a transient one gives way to newer news.
            if (!has_lasting_error()) {
                const bool transient = locked_out && !stopping;
                writer_error = *failure + " (" + what +
                               (transient ? " stay queued and are retried)" : " are lost)");
                writer_error_transient = transient;
            }
        }
        if (failure && locked_out && !stopping) {
            // Nothing is lost: the batch stays and is retried.
            retry_at =
                Clock::now() + std::min(options.flush_interval, std::chrono::milliseconds(100));
        } else {
            if (!failure && writer_error_transient) writer_error.reset(); // the retry worked
            pending_weight -= batch.weight;
            committed_sequence = batch.last_sequence;
            batch = WriteBatch{};
        }
        progress_wake.notify_all();
    }
}

void RunStore::Impl::write_batch(WriteBatch& batch) {
    // Statements are prepared once per batch; cheap next to thousands of inserts.
    detail::Database& wdb = *writer_db;
    auto insert_metric = wdb.prepare("INSERT OR REPLACE INTO metrics (run, key, step, wall_time, "
                                     "value) VALUES (?1, ?2, ?3, ?4, ?5)");
    auto upsert_latest = wdb.prepare(
        "INSERT INTO latest_metrics (run, key, step, value, wall_time) VALUES (?1, ?2, ?3, ?4, ?5) "
        "ON CONFLICT (run, key) DO UPDATE SET step = excluded.step, value = excluded.value, "
        "wall_time = excluded.wall_time WHERE excluded.step >= latest_metrics.step");
    auto insert_histogram = wdb.prepare("INSERT OR REPLACE INTO histograms (run, key, step, "
                                        "wall_time, min, max, nbins, counts) VALUES (?1, ?2, ?3, "
                                        "?4, ?5, ?6, ?7, ?8)");
    auto insert_feature_map = wdb.prepare(
        "INSERT OR REPLACE INTO feature_maps (run, layer, step, wall_time, examples, channels, "
        "height, width, scale_exp, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    detail::SummaryWriter summaries(wdb);
    // Encoded before the transaction, so the write lock is held only for the inserts.
    std::vector<detail::EncodedFeatureMap> encoded;
    encoded.reserve(batch.feature_maps.size());
    for (const auto& f : batch.feature_maps)
        encoded.push_back(detail::encode_feature_map(f.values));

    std::unordered_map<SeriesId, SeriesTouch, SeriesIdHash> touched;
    for (const MetricPoint& p : batch.metrics) {
        SeriesTouch& t = touched[SeriesId{p.run, p.key}];
        t.steps.push_back(p.step);
        if (!t.latest || p.step >= t.latest->step) t.latest = &p;
    }

    static_assert(std::endian::native == std::endian::little,
                  "histogram and feature map blobs are little-endian");
    wdb.write_transaction("writing metrics", [&] {
        for (const MetricPoint& p : batch.metrics) {
            insert_metric.bind(1, p.run).bind(2, p.key).bind(3, p.step).bind(4, p.wall_time);
            insert_metric.bind(5, p.value).run("writing a metric point");
        }
        for (auto& [series, t] : touched) {
            const MetricPoint& p = *t.latest;
            upsert_latest.bind(1, p.run).bind(2, p.key).bind(3, p.step).bind(4, p.value);
            upsert_latest.bind(5, p.wall_time).run("updating the latest metrics");
            summaries.update(series.run, series.key, t.steps);
        }
        for (const QueuedHistogram& h : batch.histograms) {
            insert_histogram.bind(1, h.run).bind(2, h.key).bind(3, h.step).bind(4, h.wall_time);
            insert_histogram.bind(5, h.min).bind(6, h.max).bind(7, int64_t(h.counts.size()));
            insert_histogram.bind_blob(8, std::as_bytes(std::span(h.counts)));
            insert_histogram.run("writing a histogram");
        }
        for (size_t i = 0; i < batch.feature_maps.size(); ++i) {
            const detail::QueuedFeatureMap& f = batch.feature_maps[i];
            insert_feature_map.bind(1, f.run).bind(2, f.layer).bind(3, f.step);
            insert_feature_map.bind(4, f.wall_time).bind(5, f.shape[0]).bind(6, f.shape[1]);
            insert_feature_map.bind(7, f.shape[2]).bind(8, f.shape[3]);
            insert_feature_map.bind(9, encoded[i].scale_exp);
            insert_feature_map.bind_blob(10, std::as_bytes(std::span(encoded[i].halves)));
            insert_feature_map.run("writing a feature map");
        }
    });
}

} // namespace myelin::store
