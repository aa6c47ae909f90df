#pragma once
// RunStore's state. Two connections: `db` serves the callers' synchronous calls (guarded by
// db_mutex), `writer_db` belongs to the writer thread, which commits queued metric points and
// histograms in batches. WAL lets readers on `db` run while the writer commits.
#include <myelin/store/run_store.h>

#include "store/sqlite_db.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

namespace myelin::store {

namespace detail {
// Steps are kept below 2^62 so block and bucket arithmetic cannot overflow.
inline constexpr int64_t kMaxStep = (int64_t(1) << 62) - 1;

double unix_now();

struct QueuedHistogram {
    int64_t run = 0;
    std::string key;
    int64_t step = 0;
    double wall_time = 0;
    double min = 0;
    double max = 0;
    std::vector<double> counts;
};

// Feature maps as logged; the writer encodes them (feature_maps.cpp), off the caller's thread.
struct QueuedFeatureMap {
    int64_t run = 0;
    std::string layer; // "": the probe input
    int64_t step = 0;
    double wall_time = 0;
    int64_t shape[4] = {};
    std::vector<float> values;
};

// A feature map ready for its row: float16 bits, value = half * 2^-scale_exp.
struct EncodedFeatureMap {
    int scale_exp = 0;
    std::vector<uint16_t> halves;
};
EncodedFeatureMap encode_feature_map(std::span<const float> values);
// Decodes `blob` into out.values (sized from out's shape); false when the blob does not hold
// exactly that many float16 values.
bool decode_feature_map(std::span<const std::byte> blob, int scale_exp, FeatureMap& out);

// Points taken off the queue by the writer; kept and retried while the store is locked.
struct WriteBatch {
    std::vector<MetricPoint> metrics;
    std::vector<QueuedHistogram> histograms;
    std::vector<QueuedFeatureMap> feature_maps;
    std::size_t weight = 0;
    uint64_t last_sequence = 0; // the enqueue sequence number it covers
    bool empty() const { return metrics.empty() && histograms.empty() && feature_maps.empty(); }
};
} // namespace detail

struct RunStore::Impl {
    Impl(const std::filesystem::path& path, const StoreOptions& options);
    ~Impl();

    std::filesystem::path path;   // absolute
    std::filesystem::path folder; // the folder holding the file
    StoreOptions options;
    std::string host;
    // Why the store cannot be written (ReadOnly) or might not be (Locked); see RunStore.
    StoreProblem condition = StoreProblem::None;
    std::string condition_message;
    bool integrity_checked = false; // PRAGMA quick_check passed (before the first open-time write)

    std::mutex db_mutex;
    std::unique_ptr<detail::Database> db;
    std::unique_ptr<detail::Database> writer_db;

    std::mutex known_mutex;
    std::unordered_set<int64_t> known_runs; // runs seen in this file (log calls check ids)

    // ---- queue (queue_mutex) ----------------------------------------------------------------
    std::mutex queue_mutex;
    std::condition_variable writer_wake;   // work arrived, flush asked, stopping
    std::condition_variable progress_wake; // something committed, failed, or room in the queue
    std::vector<MetricPoint> queued_metrics;
    std::vector<detail::QueuedHistogram> queued_histograms;
    std::vector<detail::QueuedFeatureMap> queued_feature_maps;
    std::size_t queued_weight = 0;  // in the queue
    std::size_t pending_weight = 0; // in the queue or in the writer's batch
    std::chrono::steady_clock::time_point first_queued_at;
    uint64_t enqueued_sequence = 0;  // one per log call
    uint64_t committed_sequence = 0; // every log call up to this one is written or reported
    uint64_t flush_target = 0;       // the writer commits at once while behind this
    // The writer's last failure not yet thrown to a caller. A transient one (store locked; the
    // points stay queued) is dropped when a retry succeeds; a lost batch's error stays until a
    // write or flush call throws it.
    std::optional<std::string> writer_error;
    bool writer_error_transient = false;
    uint64_t writer_failures = 0; // failed attempts so far
    bool stopping = false;
    std::atomic<bool> closed{false};
    std::thread writer;

    void check_open() const;
    // Throws StoreError (ReadOnly) with condition_message in a read-only store.
    void require_writable() const;
    // Opens `db` for reading only (condition ReadOnly, `why` the reason), or, when the file can
    // be written, for writing (migrating it); the constructor's two ways.
    void open_read_only(const std::string& why);
    void open_writable();
    // "run store '<path>': " + what (usable after close, unlike db->message).
    std::string message(std::string_view what) const;
    void require_known_run(int64_t run);
    // Waits for room (bounded: a writer error wakes it and is thrown), then queues the points
    // (wall_time 0 becomes `now`), the histogram or the feature map.
    void enqueue(std::span<const MetricPoint> metrics, detail::QueuedHistogram* histogram,
                 std::size_t weight, double now, detail::QueuedFeatureMap* feature_map = nullptr);
    void log_feature_map(int64_t run, std::string_view layer, int64_t step,
                         std::span<const int64_t> shape, std::span<const float> values,
                         double wall_time);
    void flush();
    // Before a read: waits until the queued points are written or the writer has an error,
    // which stays for the next write or flush (a store locked for writing can still be read).
    void settle_for_read();
    // Flushes, stops and joins the writer; returns the last error it met.
    std::optional<std::string> stop_writer();
    [[noreturn]] void throw_writer_error(std::unique_lock<std::mutex>& lock);
    bool has_lasting_error() const { return writer_error && !writer_error_transient; }
    // A lasting error, or any failure after `failures_before` (queue_mutex held).
    bool failed_since(uint64_t failures_before) const {
        return has_lasting_error() || (writer_error && writer_failures != failures_before);
    }

    void writer_loop();
    void write_batch(detail::WriteBatch& batch);

    // db_mutex held.
    std::vector<int64_t> mark_interrupted_locked();
    Run read_run_locked(int64_t id, bool with_project);
    std::optional<FeatureMap> read_feature_map_locked(int64_t run, std::string_view layer,
                                                      int64_t step);
};

} // namespace myelin::store
