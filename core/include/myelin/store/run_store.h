#pragma once
// The run store: one SQLite file per workspace holding every training run (its description,
// parameters, metric series, histograms, feature maps and artifacts such as checkpoints). The
// trainer writes to it, the studio and the CLI read it; several processes may share one file.
//
// Writes of metric points, histograms and feature maps are queued and committed by one writer
// thread per RunStore in batched transactions; flush() waits for them. Everything else is
// synchronous. Every method is safe to call from any thread. Failures are StoreErrors naming the
// file. A RunStore must not be used in a forked child (SQLite connections do not survive fork).
#include <myelin/error.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::store {

// What kept a store from being opened, or from being opened for writing: StoreError::problem()
// and RunStore::condition() name it, so the studio and the CLI can say which in words.
enum class StoreProblem {
    None,
    Locked,   // another program held the store's lock longer than the busy timeout
    ReadOnly, // the file or its folder cannot be written, or the store was opened read-only
    Damaged,  // not an SQLite file, or PRAGMA quick_check or a read found it corrupt
    Newer,    // written by a newer Myelin (a higher schema version than kSchemaVersion)
};
// "locked", "read-only", "damaged", "newer"; "" for None.
std::string_view problem_name(StoreProblem problem);

class StoreError : public Error {
  public:
    explicit StoreError(const std::string& what, StoreProblem problem = StoreProblem::None)
        : Error(what), problem_(problem) {}
    StoreProblem problem() const { return problem_; }

  private:
    StoreProblem problem_;
};

// The schema version this build reads and writes (PRAGMA user_version). A file with a newer
// version is refused; an older one is migrated at open.
inline constexpr int kSchemaVersion = 5;

enum class RunStatus { Running, Finished, Stopped, Failed, Interrupted };
// "running", "finished", "stopped", "failed", "interrupted" (the text stored in the file).
std::string_view status_name(RunStatus status);
std::optional<RunStatus> parse_run_status(std::string_view name);

// What create_run records about a new run (status starts as Running). Every member has a
// default, so designated initializers may name only some: create_run({.name = "mlp"}).
struct RunInfo {
    std::string name{};
    std::string project_json{};          // snapshot of the project file
    std::optional<int64_t> parent_run{}; // a fork or resume of this run
    std::string parent_checkpoint{};     // ... from this checkpoint file (stored absolute)
    std::string device{};                // "cpu", "cuda:0"
    int threads = 0;
    std::string host{};    // empty: this machine's host name
    int64_t pid = 0;       // 0: this process
    double started_at = 0; // unix seconds; 0: now
    // The project file it was trained from (stored absolute); empty: an unsaved project.
    std::string project_path{};
};

// How a run began: fresh, resumed from a checkpoint (of a parent run or a file) or forked from
// a parent run (it has a "fork.from" parameter).
enum class RunOrigin { Fresh, Resumed, Forked };

// One row of the runs table.
struct Run {
    int64_t id = 0;
    std::string name;
    RunStatus status = RunStatus::Running;
    std::string project_json; // empty in list_runs() (it can be large); run(id) fills it
    double started_at = 0;
    std::optional<double> ended_at;
    std::optional<int64_t> parent_run;
    std::string parent_checkpoint;
    std::string host;
    std::string device;
    int threads = 0;
    int64_t pid = 0;
    std::string error; // why it failed or was interrupted
    std::string note;
    std::vector<std::string> tags; // sorted
    std::string project_path;      // absolute; empty when not recorded
    RunOrigin origin = RunOrigin::Fresh;
    // The parent's step it branched at: a fork's "fork.from" step, else the step of the parent's
    // checkpoint artifact at parent_checkpoint (its newest listing). Unset for a fresh run, a
    // resume from a file outside the store, or a checkpoint the parent no longer lists.
    std::optional<int64_t> branch_step;
};

// The point of a metric with the highest step.
struct LatestMetric {
    std::string key;
    int64_t step = 0;
    double value = 0;
    double wall_time = 0;
};

struct RunSummary {
    Run run;
    std::vector<LatestMetric> latest_metrics; // sorted by key
};

// The smallest and largest value of one run's series (NaN values ignored; NaN when every value
// is NaN).
struct MetricRange {
    int64_t run = 0;
    double min = 0;
    double max = 0;
};

// A metric point to log. Steps are >= 0; logging the same (run, key, step) again replaces the
// value. NaN values are kept (stored as SQL NULL, read back as NaN).
struct MetricPoint {
    int64_t run = 0;
    std::string key{};
    int64_t step = 0;
    double value = 0;
    double wall_time = 0; // unix seconds; 0: the time of the log call
};

struct MetricSample {
    int64_t step = 0;
    double wall_time = 0;
    double value = 0;
};

// Inclusive step range; the default is everything.
struct StepRange {
    int64_t first = 0;
    int64_t last = std::numeric_limits<int64_t>::max();
};

// One bucket of a downsampled series: the points with steps in [begin_step, end_step].
// min/max ignore NaN values (NaN when every value is NaN); first/last are the values at
// first_step/last_step, whatever they are.
struct MetricBucket {
    int64_t begin_step = 0;
    int64_t end_step = 0;
    int64_t first_step = 0;
    int64_t last_step = 0;
    int64_t count = 0;
    double min = 0;
    double max = 0;
    double first = 0;
    double last = 0;
};

// A histogram: counts[i] counts the values in bin i of nbins = counts.size() equal bins over
// [min, max].
struct HistogramSample {
    int64_t step = 0;
    double wall_time = 0;
    double min = 0;
    double max = 0;
    std::vector<double> counts;
};

// One layer's output on the run's probe examples at a step: `examples` x `channels` images of
// height x width. Stored as float16 scaled by a power of two (exact scaling, so the largest
// value cannot overflow and small ones keep 11 significant bits down to 2^-28 of the largest);
// NaN and infinities are kept.
struct FeatureMap {
    int64_t step = 0;
    double wall_time = 0;
    int64_t examples = 0;
    int64_t channels = 0;
    int64_t height = 0;
    int64_t width = 0;
    std::vector<float> values; // row-major [examples][channels][height][width]

    float at(int64_t example, int64_t channel, int64_t y, int64_t x) const {
        return values[size_t(((example * channels + channel) * height + y) * width + x)];
    }
};

// Gradient through time of a recurrent layer at a step (train::TimeGradientEvent): for layer
// `stack_layer` of its stack and `direction` (0 forward, 1 reverse), the L2 norm over the probe
// batch of dL/dh_t for every time step t.
struct TimeGradientSeries {
    std::string layer{};
    int64_t step = 0;
    int64_t stack_layer = 0;
    int direction = 0;
    double wall_time = 0;
    std::vector<double> norms{}; // [T]
};

// Something that happened in a run at a step: a breakpoint fired, ... (kind "breakpoint").
struct RunEvent {
    int64_t step = 0;
    std::string kind{};
    std::string layer{}; // the module it concerns; empty: the run as a whole
    std::string message{};
    double wall_time = 0; // unix seconds; 0: the time of the log call
};

// A file a run produced (checkpoint, export, screenshot).
struct ArtifactInfo {
    std::string kind{}; // "checkpoint", "onnx", ...
    std::filesystem::path path{};
    int64_t step = 0;
    std::string metadata_json = "{}";
    std::string sha256{}; // hex; empty: add_artifact hashes the file
};

struct Artifact {
    int64_t id = 0;
    int64_t run = 0;
    std::string kind;
    std::filesystem::path path; // absolute
    std::string sha256;
    int64_t step = 0;
    double created_at = 0;
    std::string metadata_json;
};

struct DeleteResult {
    std::vector<std::filesystem::path> removed_files;
    std::vector<std::string> kept_files; // "path: why it was kept"
};

enum class CsvLayout {
    Long, // key,step,wall_time,value: one line per point, sorted by key then step (lossless)
    Wide, // step,<key 1>,<key 2>,...: one line per step, keys sorted, empty where a key has no
          // point at that step (wall times are left out)
};

// How open() may use the file.
enum class StoreAccess {
    // Create when missing, migrate, record runs. A file or folder that cannot be written is
    // refused (StoreError, StoreProblem::ReadOnly).
    ReadWrite,
    // Never write: the file must exist at this build's schema version; every write throws
    // StoreError (ReadOnly). A file nobody can write, without a -wal file, is read as immutable
    // (no -wal or -shm file is created beside it).
    ReadOnly,
    // What the runs browser and `myelin runs` use: ReadWrite when the file and its folder can be
    // written, else ReadOnly. The file is checked (PRAGMA quick_check) before anything else, and
    // a write lock another program holds past the busy timeout leaves it readable with
    // condition() Locked instead of failing.
    ReadWriteIfAllowed,
};

struct StoreOptions {
    // How long a statement waits for another connection's lock before failing.
    std::chrono::milliseconds busy_timeout{5000};
    StoreAccess access = StoreAccess::ReadWrite;
    // Points (a histogram counts 1 + nbins / 8) queued or being written before log calls wait.
    std::size_t queue_capacity = 65536;
    // The writer commits when this many points are queued, or flush_interval after the first.
    std::size_t batch_points = 4096;
    std::chrono::milliseconds flush_interval{100};
    // Mark runs of dead processes interrupted at open (see mark_interrupted_runs).
    bool mark_interrupted_at_open = true;
};

// $XDG_DATA_HOME/myelin/runs.sqlite, or ~/.local/share/myelin/runs.sqlite without it.
std::filesystem::path default_store_path();

// SHA-256 of a file's bytes as 64 lowercase hex digits.
std::string sha256_file(const std::filesystem::path& path);

class RunStore {
  public:
    // Opens or creates the store (and its parent folders), migrates an older schema and, unless
    // told not to, marks runs of dead processes interrupted. Throws StoreError naming the file
    // when it is not an SQLite database or not a run store, has a newer schema (Newer), is
    // damaged (Damaged), cannot be created or written (ReadOnly; see StoreAccess), or stays
    // locked by another connection longer than the busy timeout (Locked). Nothing is written to
    // a file that has not passed these checks: a migration or the marking of interrupted runs
    // first runs PRAGMA quick_check. MYELIN_STORE_READ_ONLY=1 in the environment makes every
    // store count as read-only (a store to keep as it is; tests running as root, whom
    // permission bits do not stop, use it too).
    static RunStore open(const std::filesystem::path& path, const StoreOptions& options = {});

    RunStore(RunStore&&) noexcept;
    RunStore& operator=(RunStore&&) noexcept;
    // Flushes and stops the writer; an error it meets then is written to stderr (call close()
    // to get it as an exception instead).
    ~RunStore();

    const std::filesystem::path& path() const;
    // None: open for writing. ReadOnly: reads work, every write throws StoreError (ReadOnly).
    // Locked (ReadWriteIfAllowed only): at open another program held the write lock through the
    // busy timeout; reads work, writes wait for the lock and fail while it is held.
    StoreProblem condition() const;
    // What condition() means for a person: the file, why, and what to do; empty for None.
    const std::string& condition_message() const;
    bool read_only() const { return condition() == StoreProblem::ReadOnly; }
    // Flushes, stops the writer and closes the file; throws what the writer met. Any later call
    // throws.
    void close();

    // ---- writes -----------------------------------------------------------------------------
    int64_t create_run(const RunInfo& info);
    void set_params(int64_t run, const std::map<std::string, std::string>& params);
    // Queued; throws at once for an unknown run, an empty key or a negative step, and rethrows
    // an error the writer met since the last call. Waits while the queue is full (at most about
    // the busy timeout when the writer cannot commit).
    void log_metric(int64_t run, std::string_view key, int64_t step, double value,
                    double wall_time = 0);
    void log_metrics(std::span<const MetricPoint> points);
    void log_histogram(int64_t run, std::string_view key, int64_t step, double min, double max,
                       std::span<const double> counts, double wall_time = 0);
    // A layer's feature maps at a step (see FeatureMap): `shape` is [examples, channels, height,
    // width], each at least 1, and `values` holds their product in row-major order. Queued like
    // a histogram (the encoding happens on the writer thread); logging the same (run, layer,
    // step) again replaces it. The layer name must not be empty.
    void log_feature_map(int64_t run, std::string_view layer, int64_t step,
                         std::span<const int64_t> shape, std::span<const float> values,
                         double wall_time = 0);
    // The probe examples themselves (the model's input the feature maps were taken from), as
    // [examples, channels, height, width]; once per run is enough (probe_input reads the
    // earliest).
    void log_probe_input(int64_t run, int64_t step, std::span<const int64_t> shape,
                         std::span<const float> values, double wall_time = 0);
    // One series of a recurrent layer's gradient through time (TimeGradientSeries; written at
    // once: one per recurrent layer and direction every probe step). Logging the same (run,
    // layer, step, stack_layer, direction) again replaces it. Throws StoreError for an unknown
    // run, an empty layer name, a negative step or direction outside 0..1, no norms or more than
    // 1,000,000 of them; nothing is written then.
    void log_time_gradients(int64_t run, const TimeGradientSeries& series);
    // Blocks until everything queued before the call is committed; throws the writer's error.
    void flush();
    // Records a file (which must exist; its path is stored absolute) and returns its id.
    int64_t add_artifact(int64_t run, const ArtifactInfo& artifact);
    // Flushes, then sets the final status (not Running), the end time and the error text.
    // Written at once (events are rare), after the run's queued points.
    void log_event(int64_t run, const RunEvent& event);
    void finish_run(int64_t run, RunStatus status, std::string_view error = {});
    // A run's name (not empty, no line breaks or other control characters, at most 200 bytes),
    // note (any text up to 64 KiB) and tags (each 1 to 64 bytes, no commas, control characters
    // or spaces at either end; duplicates merged; replaces the run's tags). Bad input and an
    // unknown run throw StoreError naming it; nothing is changed then.
    void rename_run(int64_t run, std::string_view name);
    void set_run_note(int64_t run, std::string_view note);
    void set_run_tags(int64_t run, const std::vector<std::string>& tags);
    // Runs marked running whose process is gone become Interrupted (ended_at = their last
    // metric's time). Only runs of this host are checked, by pid (kill(pid, 0), zombies count as
    // dead) and the process start time recorded at create_run (so a reused pid is not taken
    // for the run's process). Returns the ids marked (none in a read-only store).
    std::vector<int64_t> mark_interrupted_runs();
    // Deletes the run's rows (metrics, histograms, feature maps, params, artifacts; children keep
    // their data and lose the parent link) and its files. Files removed: the run folder
    // (artifact_folder(run)), and each artifact file of the run that is a regular file or a
    // symlink (never a folder), still has the recorded SHA-256 (it was not replaced) and is not
    // listed by another run as an artifact or parent checkpoint. Nothing else is touched. A
    // running run is refused.
    DeleteResult delete_run(int64_t run);

    // ---- reads ---------------------------------------------------------------------------
    // Each read first waits for this store's queued points (so it sees its own writes), unless
    // the writer has met an error: that stays for the next write or flush call, so a store
    // that another process keeps locked for writing can still be read.
    std::vector<RunSummary> list_runs() const; // newest first
    Run run(int64_t id) const;                 // throws StoreError for an unknown id
    // A number that changes whenever anything was committed to the file since the last call,
    // by this store or any other connection or process: a cheap test before re-reading (one
    // PRAGMA, no table read).
    uint64_t data_version() const;
    // The range of `key`'s series of every run that has one, by run id, from the block summaries:
    // one index seek per run, however long the series (a runs table's best values).
    std::vector<MetricRange> metric_ranges(std::string_view key) const;
    std::map<std::string, std::string> params(int64_t run) const;
    std::vector<std::string> metric_keys(int64_t run) const; // sorted
    std::vector<LatestMetric> latest_metrics(int64_t run) const;
    std::vector<MetricSample> metric_series(int64_t run, std::string_view key,
                                            StepRange range = {}) const;
    // The point of `key` whose step is nearest `step` (the earlier on a tie): two index seeks,
    // however long the series. Unset when the run has no point of `key`.
    std::optional<MetricSample> nearest_metric_point(int64_t run, std::string_view key,
                                                     int64_t step) const;
    // At most `buckets` buckets over the part of `range` holding points, in step order, empty
    // buckets left out. Bucket boundaries are evenly spaced, then snapped to multiples of a
    // precomputed block size of at most 1/4 of the spacing (so a boundary moves by at most 1/8
    // of a bucket): long series are read from block summaries, 4 to 16 rows per bucket,
    // instead of point by point (buckets under 64 steps wide read their points).
    std::vector<MetricBucket> metric_series_downsampled(int64_t run, std::string_view key,
                                                        StepRange range, int buckets) const;
    std::vector<std::string> histogram_keys(int64_t run) const;
    std::vector<HistogramSample> histogram_series(int64_t run, std::string_view key,
                                                  StepRange range = {}) const;
    // The layers with feature maps, in the order they were first recorded (the model's forward
    // order, as the probe's hooks fire).
    std::vector<std::string> feature_map_layers(int64_t run) const;
    // The steps at which `layer` has feature maps, ascending.
    std::vector<int64_t> feature_map_steps(int64_t run, std::string_view layer) const;
    // The steps at which any layer has feature maps, ascending (the probe's captures).
    std::vector<int64_t> feature_map_capture_steps(int64_t run) const;
    // `layer`'s maps at the recorded step nearest `step` (the earlier on a tie); unset when the
    // layer has none. A blob that does not match its shape throws StoreError.
    std::optional<FeatureMap> feature_map(int64_t run, std::string_view layer, int64_t step) const;
    // The probe examples (log_probe_input) recorded first; unset when there are none.
    std::optional<FeatureMap> probe_input(int64_t run) const;
    // The layers with gradient-through-time series, in the order first recorded (forward
    // order); empty for runs without recurrent layers and for stores older than version 5.
    std::vector<std::string> time_gradient_layers(int64_t run) const;
    // The steps at which `layer` has series, ascending.
    std::vector<int64_t> time_gradient_steps(int64_t run, std::string_view layer) const;
    // Every series of `layer` (by stack layer, then direction) at its recorded step nearest
    // `step` (the earlier on a tie); empty when the layer has none.
    std::vector<TimeGradientSeries> time_gradients(int64_t run, std::string_view layer,
                                                   int64_t step) const;
    std::vector<Artifact> artifacts(int64_t run) const;
    std::vector<RunEvent> events(int64_t run) const; // by step, then in the order logged
    // The folder for a run's files under the store's folder (<store folder>/runs/<id>; not
    // created here). delete_run removes it.
    std::filesystem::path artifact_folder(int64_t run) const;
    // Writes the run's metrics as CSV (RFC 4180 quoting, values with 17 significant digits,
    // "nan"/"inf"/"-inf"); the file is written beside the target and renamed into place.
    void export_metrics_csv(int64_t run, const std::filesystem::path& csv_path,
                            CsvLayout layout = CsvLayout::Long) const;

    struct Impl;

  private:
    explicit RunStore(std::unique_ptr<Impl> impl);
    Impl& impl() const;
    std::unique_ptr<Impl> impl_;
};

} // namespace myelin::store
