// RunStore reads: runs, params, metric series (whole and downsampled), histograms, artifacts,
// and the CSV export. Every read first lets this store's queue drain (read-your-writes).
#include "store/run_store_impl.h"
#include "store/summaries.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <unordered_map>

#include <unistd.h>

namespace fs = std::filesystem;

namespace myelin::store {

using detail::Database;
using detail::Statement;
using detail::Summary;

namespace {
// The runs table's columns, then the lineage: the fork's branch point ("RUN@STEP") and the step
// of the parent's artifact the run started from (index seeks, cheap for every row).
constexpr const char* kRunColumns =
    "id, name, status, started_at, ended_at, parent_run, parent_checkpoint, host, device, "
    "threads, pid, error, note, project_path, (SELECT value FROM params WHERE params.run = "
    "runs.id AND params.key = 'fork.from'), (SELECT max(step) FROM artifacts WHERE "
    "artifacts.path = runs.parent_checkpoint AND artifacts.run = runs.parent_run)";
constexpr int kRunColumnCount = 16;

// The step of a "fork.from" value "RUN@STEP"; unset when it has none.
std::optional<int64_t> fork_step(const std::string& from) {
    const size_t at = from.find('@');
    if (at == std::string::npos) return std::nullopt;
    int64_t step = 0;
    const char* end = from.data() + from.size();
    auto [ptr, ec] = std::from_chars(from.data() + at + 1, end, step);
    if (ec != std::errc() || ptr != end) return std::nullopt;
    return step;
}

Run read_run_row(const Statement& s) {
    Run r;
    r.id = s.int64(0);
    r.name = s.text(1);
    r.status = parse_run_status(s.text(2)).value_or(RunStatus::Failed);
    r.started_at = s.real(3);
    if (!s.is_null(4)) r.ended_at = s.real(4);
    if (!s.is_null(5)) r.parent_run = s.int64(5);
    r.parent_checkpoint = s.text(6);
    r.host = s.text(7);
    r.device = s.text(8);
    r.threads = int(s.int64(9));
    r.pid = s.int64(10);
    r.error = s.text(11);
    r.note = s.text(12);
    r.project_path = s.text(13);
    if (!s.is_null(14)) {
        r.origin = RunOrigin::Forked;
        r.branch_step = fork_step(s.text(14));
    } else if (!r.parent_checkpoint.empty()) {
        r.origin = RunOrigin::Resumed;
    }
    if (!r.branch_step && r.parent_run && !s.is_null(15)) r.branch_step = s.int64(15);
    return r;
}

// The tags of run `id` (sorted).
std::vector<std::string> read_tags(Database& db, int64_t id) {
    Statement q = db.prepare("SELECT tag FROM run_tags WHERE run = ?1 ORDER BY tag");
    q.bind(1, id);
    std::vector<std::string> tags;
    while (q.step("reading a run's tags"))
        tags.push_back(q.text(0));
    return tags;
}

LatestMetric read_latest_row(const Statement& s, int column) {
    return {s.text(column), s.int64(column + 1), s.real(column + 2), s.real(column + 3)};
}

StepRange clamp(StepRange range) {
    return {std::max<int64_t>(range.first, 0), std::min(range.last, detail::kMaxStep)};
}

// Shortest text that reads back to the same double.
std::string number_text(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
    return std::string(buffer, end);
}

// RFC 4180: fields holding a comma, quote or line break are quoted, quotes doubled.
std::string csv_field(std::string_view text) {
    if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
    std::string out = "\"";
    for (char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}
} // namespace

Run RunStore::Impl::read_run_locked(int64_t id, bool with_project) {
    Statement s = db->prepare(std::string("SELECT ") + kRunColumns +
                              (with_project ? ", project" : "") + " FROM runs WHERE id = ?1");
    s.bind(1, id);
    if (!s.step("reading a run"))
        throw StoreError(db->message("run " + std::to_string(id) + " does not exist"));
    Run r = read_run_row(s);
    if (with_project) r.project_json = s.text(kRunColumnCount);
    r.tags = read_tags(*db, id);
    return r;
}

std::vector<RunSummary> RunStore::list_runs() const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    return s.db->read_transaction("listing runs", [&] {
        std::vector<RunSummary> out;
        std::unordered_map<int64_t, size_t> index;
        Statement runs =
            s.db->prepare(std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY id DESC");
        while (runs.step("listing runs")) {
            out.push_back({read_run_row(runs), {}});
            index[out.back().run.id] = out.size() - 1;
        }
        Statement latest = s.db->prepare("SELECT run, key, step, value, wall_time FROM "
                                         "latest_metrics ORDER BY run, key");
        while (latest.step("listing latest metrics")) {
            auto it = index.find(latest.int64(0));
            if (it != index.end())
                out[it->second].latest_metrics.push_back(read_latest_row(latest, 1));
        }
        Statement tags = s.db->prepare("SELECT run, tag FROM run_tags ORDER BY run, tag");
        while (tags.step("listing tags")) {
            auto it = index.find(tags.int64(0));
            if (it != index.end()) out[it->second].run.tags.push_back(tags.text(1));
        }
        return out;
    });
}

Run RunStore::run(int64_t id) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    return s.read_run_locked(id, true);
}

std::map<std::string, std::string> RunStore::params(int64_t run) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    std::map<std::string, std::string> out;
    Statement q = s.db->prepare("SELECT key, value FROM params WHERE run = ?1");
    q.bind(1, run);
    while (q.step("reading parameters"))
        out.emplace(q.text(0), q.text(1));
    return out;
}

std::vector<LatestMetric> RunStore::latest_metrics(int64_t run) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    std::vector<LatestMetric> out;
    Statement q = s.db->prepare(
        "SELECT key, step, value, wall_time FROM latest_metrics WHERE run = ?1 ORDER BY key");
    q.bind(1, run);
    while (q.step("reading latest metrics"))
        out.push_back(read_latest_row(q, 0));
    return out;
}

std::vector<std::string> RunStore::metric_keys(int64_t run) const {
    std::vector<std::string> keys;
    for (auto& m : latest_metrics(run)) // one row per series, unlike the metrics table
        keys.push_back(std::move(m.key));
    return keys;
}

std::vector<MetricSample> RunStore::metric_series(int64_t run, std::string_view key,
                                                  StepRange range) const {
    Impl& s = impl();
    s.settle_for_read();
    range = clamp(range);
    std::lock_guard lock(s.db_mutex);
    std::vector<MetricSample> out;
    Statement q = s.db->prepare("SELECT step, wall_time, value FROM metrics WHERE run = ?1 AND "
                                "key = ?2 AND step BETWEEN ?3 AND ?4 ORDER BY step");
    q.bind(1, run).bind(2, key).bind(3, range.first).bind(4, range.last);
    while (q.step("reading a metric series"))
        out.push_back({q.int64(0), q.real(1), q.real(2)});
    return out;
}

std::optional<MetricSample> RunStore::nearest_metric_point(int64_t run, std::string_view key,
                                                           int64_t step) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    const auto seek = [&](const char* sql) -> std::optional<MetricSample> {
        Statement q = s.db->prepare(sql);
        q.bind(1, run).bind(2, key).bind(3, step);
        if (!q.step("reading a metric point")) return std::nullopt;
        return MetricSample{q.int64(0), q.real(1), q.real(2)};
    };
    const auto before = seek("SELECT step, wall_time, value FROM metrics WHERE run = ?1 AND "
                             "key = ?2 AND step <= ?3 ORDER BY step DESC LIMIT 1");
    if (before && before->step == step) return before;
    const auto after = seek("SELECT step, wall_time, value FROM metrics WHERE run = ?1 AND "
                            "key = ?2 AND step > ?3 ORDER BY step LIMIT 1");
    if (!before || !after) return before ? before : after;
    return after->step - step < step - before->step ? after : before;
}

std::vector<MetricBucket> RunStore::metric_series_downsampled(int64_t run, std::string_view key,
                                                              StepRange range, int buckets) const {
    Impl& s = impl();
    if (buckets < 1)
        throw StoreError(
            s.message("downsampling needs at least one bucket, got " + std::to_string(buckets)));
    s.settle_for_read();
    range = clamp(range);
    if (range.first > range.last) return {};
    std::lock_guard lock(s.db_mutex);
    Database& db = *s.db;
    return db.read_transaction("downsampling a metric series", [&] {
        std::vector<MetricBucket> out;
        // Narrow the range to the points present (two index seeks).
        Statement bounds = db.prepare(
            "SELECT (SELECT min(step) FROM metrics WHERE run = ?1 AND key = ?2 AND step >= ?3), "
            "(SELECT max(step) FROM metrics WHERE run = ?1 AND key = ?2 AND step <= ?4)");
        bounds.bind(1, run).bind(2, key).bind(3, range.first).bind(4, range.last);
        if (!bounds.step("downsampling a metric series") || bounds.is_null(0) || bounds.is_null(1))
            return out;
        const int64_t lo = bounds.int64(0), hi = bounds.int64(1);
        if (lo > hi) return out;
        const int64_t span = hi - lo + 1;

        // The coarsest summary level whose block is at most 1/4 of a bucket (snapping moves a
        // boundary by at most 1/8 of a bucket); level 0: the points themselves.
        int level = 0;
        for (int candidate = detail::kFirstSummaryLevel; candidate <= detail::kSummaryLevels;
             ++candidate)
            if (detail::block_size(candidate) * 4 * int64_t(buckets) <= span) level = candidate;
        const int64_t block = detail::block_size(level);

        // Evenly spaced boundaries, the inner ones snapped to multiples of the block size, so a
        // block never straddles two buckets. edges[i] is where bucket i starts.
        std::vector<int64_t> edges{lo};
        for (int i = 1; i < buckets; ++i) {
            int64_t ideal = lo + int64_t((__int128)span * i / buckets);
            int64_t snapped = (ideal + block / 2) / block * block;
            if (snapped > edges.back() && snapped <= hi) edges.push_back(snapped);
        }
        edges.push_back(hi + 1);

        size_t bucket = 0;
        Summary current;
        auto emit = [&] {
            if (current.empty()) return;
            out.push_back({edges[bucket], edges[bucket + 1] - 1, current.first_step,
                           current.last_step, current.count, current.min, current.max,
                           current.first, current.last});
            current = Summary{};
        };
        // Pieces (points or blocks) arrive in step order; each lies inside one bucket.
        auto add = [&](const Summary& piece) {
            while (piece.first_step >= edges[bucket + 1]) {
                emit();
                ++bucket;
            }
            current.append(piece);
        };
        Statement points = db.prepare("SELECT step, value FROM metrics WHERE run = ?1 AND key = "
                                      "?2 AND step BETWEEN ?3 AND ?4 ORDER BY step");
        auto add_points = [&](int64_t first, int64_t last) {
            if (first > last) return;
            points.bind(1, run).bind(2, key).bind(3, first).bind(4, last);
            while (points.step("downsampling a metric series")) {
                Summary p;
                p.append_point(points.int64(0), points.real(1));
                add(p);
            }
            points.reset();
        };
        // Whole blocks cover [aligned_first, aligned_end); the ragged ends are read point-wise.
        const int64_t aligned_first = (lo + block - 1) / block * block;
        const int64_t aligned_end = (hi + 1) / block * block;
        if (level == 0 || aligned_first >= aligned_end) {
            add_points(lo, hi);
        } else {
            add_points(lo, aligned_first - 1);
            Statement blocks = db.prepare(
                "SELECT first_step, last_step, count, min, max, first_value, last_value FROM "
                "metric_summaries WHERE run = ?1 AND key = ?2 AND level = ?3 AND block BETWEEN "
                "?4 AND ?5 ORDER BY block");
            blocks.bind(1, run).bind(2, key).bind(3, level).bind(4, aligned_first / block);
            blocks.bind(5, aligned_end / block - 1);
            while (blocks.step("downsampling a metric series"))
                add(detail::read_summary(blocks, 0));
            add_points(aligned_end, hi);
        }
        emit();
        return out;
    });
}

std::vector<std::string> RunStore::histogram_keys(int64_t run) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    // Jumps from key to key through the primary key instead of reading every histogram.
    Statement q = s.db->prepare(
        "WITH RECURSIVE k(key) AS (SELECT min(key) FROM histograms WHERE run = ?1 UNION ALL "
        "SELECT (SELECT min(key) FROM histograms WHERE run = ?1 AND key > k.key) FROM k WHERE "
        "k.key IS NOT NULL) SELECT key FROM k WHERE key IS NOT NULL");
    q.bind(1, run);
    std::vector<std::string> out;
    while (q.step("listing histogram keys"))
        out.push_back(q.text(0));
    return out;
}

std::vector<HistogramSample> RunStore::histogram_series(int64_t run, std::string_view key,
                                                        StepRange range) const {
    Impl& s = impl();
    s.settle_for_read();
    range = clamp(range);
    std::lock_guard lock(s.db_mutex);
    Statement q = s.db->prepare(
        "SELECT step, wall_time, min, max, nbins, counts FROM histograms WHERE run = ?1 AND key "
        "= ?2 AND step BETWEEN ?3 AND ?4 ORDER BY step");
    q.bind(1, run).bind(2, key).bind(3, range.first).bind(4, range.last);
    std::vector<HistogramSample> out;
    while (q.step("reading a histogram series")) {
        HistogramSample h{q.int64(0), q.real(1), q.real(2), q.real(3), {}};
        const int64_t nbins = q.int64(4);
        auto bytes = q.blob(5);
        if (nbins < 0 || bytes.size() != size_t(nbins) * sizeof(double))
            throw StoreError(s.message("histogram '" + std::string(key) + "' of run " +
                                       std::to_string(run) + " at step " + std::to_string(h.step) +
                                       " is corrupt: " + std::to_string(nbins) + " bins need " +
                                       std::to_string(nbins * 8) + " bytes, the blob has " +
                                       std::to_string(bytes.size())));
        h.counts.resize(size_t(nbins));
        if (nbins) std::memcpy(h.counts.data(), bytes.data(), bytes.size());
        out.push_back(std::move(h));
    }
    return out;
}

std::vector<Artifact> RunStore::artifacts(int64_t run) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    Statement q = s.db->prepare("SELECT id, run, kind, path, sha256, step, created_at, metadata "
                                "FROM artifacts WHERE run = ?1 ORDER BY id");
    q.bind(1, run);
    std::vector<Artifact> out;
    while (q.step("listing artifacts"))
        out.push_back({q.int64(0), q.int64(1), q.text(2), q.text(3), q.text(4), q.int64(5),
                       q.real(6), q.text(7)});
    return out;
}

std::vector<RunEvent> RunStore::events(int64_t run) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    Statement q = s.db->prepare("SELECT step, kind, layer, message, wall_time FROM events "
                                "WHERE run = ?1 ORDER BY step, id");
    q.bind(1, run);
    std::vector<RunEvent> out;
    while (q.step("listing events"))
        out.push_back({q.int64(0), q.text(1), q.text(2), q.text(3), q.real(4)});
    return out;
}

void RunStore::export_metrics_csv(int64_t run, const fs::path& csv_path, CsvLayout layout) const {
    Impl& s = impl();
    s.settle_for_read();
    const fs::path target = fs::absolute(csv_path);
    const fs::path temporary = target.string() + ".tmp" + std::to_string(getpid());
    auto fail = [&](const std::string& why) {
        std::error_code ec;
        fs::remove(temporary, ec);
        throw StoreError("exporting the metrics of run " + std::to_string(run) + " to '" +
                         target.string() + "': " + why);
    };
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) fail("cannot create the file (" + std::string(std::strerror(errno)) + ")");
    try {
        std::lock_guard lock(s.db_mutex);
        s.db->read_transaction("exporting metrics", [&] {
            s.read_run_locked(run, false); // an unknown run is an error, not an empty file
            if (layout == CsvLayout::Long) {
                out << "key,step,wall_time,value\r\n";
                Statement q = s.db->prepare("SELECT key, step, wall_time, value FROM metrics "
                                            "WHERE run = ?1 ORDER BY key, step");
                q.bind(1, run);
                while (q.step("exporting metrics"))
                    out << csv_field(q.text(0)) << ',' << q.int64(1) << ','
                        << number_text(q.real(2)) << ',' << number_text(q.real(3)) << "\r\n";
                return;
            }
            std::vector<std::string> keys;
            std::unordered_map<std::string, size_t> column;
            Statement k =
                s.db->prepare("SELECT key FROM latest_metrics WHERE run = ?1 ORDER BY key");
            k.bind(1, run);
            while (k.step("exporting metrics")) {
                column[k.text(0)] = keys.size();
                keys.push_back(k.text(0));
            }
            out << "step";
            for (const auto& key : keys)
                out << ',' << csv_field(key);
            out << "\r\n";
            std::vector<std::optional<double>> row(keys.size());
            std::optional<int64_t> row_step;
            auto write_row = [&] {
                if (!row_step) return;
                out << *row_step;
                for (auto& cell : row) {
                    out << ',';
                    if (cell) out << number_text(*cell);
                    cell.reset();
                }
                out << "\r\n";
            };
            Statement q = s.db->prepare(
                "SELECT step, key, value FROM metrics WHERE run = ?1 ORDER BY step, key");
            q.bind(1, run);
            while (q.step("exporting metrics")) {
                int64_t step = q.int64(0);
                if (row_step != step) {
                    write_row();
                    row_step = step;
                }
                auto it = column.find(q.text(1));
                if (it != column.end()) row[it->second] = q.real(2);
            }
            write_row();
        });
    } catch (const StoreError&) {
        out.close();
        std::error_code ec;
        fs::remove(temporary, ec);
        throw;
    }
    out.close();
    if (!out) fail("writing failed (disk full?)");
    std::error_code ec;
    fs::rename(temporary, target, ec);
    if (ec) fail("cannot move the finished file into place: " + ec.message());
}

} // namespace myelin::store
