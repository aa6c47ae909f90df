// Feature maps in the run store: their float16 encoding, the queued writes and the reads.
//
// Why float16: a capture of fashion_cnn's six 4-d layers on 4 examples is 340k values, 1.35 MB
// as float32; halving it keeps a long run's maps about the size of its metrics. The views show
// each channel as 8-bit grey over its own min..max and print 3-4 digits, well inside float16's
// 11 significant bits. Float16 alone would overflow above 65504 and lose digits below 6e-5, so
// each map is scaled by a power of two (exact) that puts its largest finite |value| in
// [2^14, 2^15): nothing overflows, and values down to 2^-28 of the largest keep every bit.
#include "store/run_store_impl.h"

#include <myelin/dtype.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace myelin::store {

using detail::Statement;

namespace detail {

EncodedFeatureMap encode_feature_map(std::span<const float> values) {
    EncodedFeatureMap out;
    float largest = 0;
    for (float v : values)
        if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
    if (largest > 0) {
        int exponent = 0;
        std::frexp(largest, &exponent); // largest in [2^(exponent-1), 2^exponent)
        out.scale_exp = 15 - exponent;
    }
    // In double, 2^scale_exp and the products are exact (|scale_exp| < 180 for any float).
    const double scale = std::ldexp(1.0, out.scale_exp);
    out.halves.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i)
        out.halves[i] = Half::from_float(float(double(values[i]) * scale));
    return out;
}

bool decode_feature_map(std::span<const std::byte> blob, int scale_exp, FeatureMap& out) {
    const size_t count = size_t(out.examples * out.channels * out.height * out.width);
    if (blob.size() != count * sizeof(uint16_t)) return false;
    const double scale = std::ldexp(1.0, -scale_exp);
    out.values.resize(count);
    for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, blob.data() + 2 * i, 2); // SQLite's blobs need not be aligned
        out.values[i] = float(double(Half::to_float(bits)) * scale);
    }
    return true;
}

} // namespace detail

namespace {
// Bounds a single dimension and the product, so size arithmetic cannot overflow.
constexpr int64_t kMaxFeatureMapValues = int64_t(1) << 31;

std::string shape_text(int64_t e, int64_t c, int64_t h, int64_t w) {
    return std::to_string(e) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" +
           std::to_string(w);
}
} // namespace

void RunStore::Impl::log_feature_map(int64_t run, std::string_view layer, int64_t step,
                                     std::span<const int64_t> shape, std::span<const float> values,
                                     double wall_time) {
    require_writable();
    const std::string what = (layer.empty() ? std::string("the probe input")
                                            : "feature map '" + std::string(layer) + "'") +
                             " of run " + std::to_string(run);
    if (step < 0 || step > detail::kMaxStep)
        throw StoreError(
            message(what + ": step " + std::to_string(step) + " is out of range (0 to 2^62 - 1)"));
    if (shape.size() != 4)
        throw StoreError(message(what +
                                 ": needs a shape of 4 dimensions [examples, channels, "
                                 "height, width], got " +
                                 std::to_string(shape.size())));
    int64_t count = 1;
    for (int64_t d : shape) {
        if (d < 1 || d > kMaxFeatureMapValues || count > kMaxFeatureMapValues / d)
            throw StoreError(message(what + ": shape " +
                                     shape_text(shape[0], shape[1], shape[2], shape[3]) +
                                     " is empty or too large"));
        count *= d;
    }
    if (size_t(count) != values.size())
        throw StoreError(message(
            what + ": shape " + shape_text(shape[0], shape[1], shape[2], shape[3]) + " needs " +
            std::to_string(count) + " values, got " + std::to_string(values.size())));
    require_known_run(run);
    detail::QueuedFeatureMap f{run,  std::string(layer),
                               step, wall_time,
                               {},   std::vector<float>(values.begin(), values.end())};
    std::copy(shape.begin(), shape.end(), f.shape);
    // Weighed like a histogram, by bytes / 64.
    enqueue({}, nullptr, 1 + values.size() / 16, detail::unix_now(), &f);
}

void RunStore::log_feature_map(int64_t run, std::string_view layer, int64_t step,
                               std::span<const int64_t> shape, std::span<const float> values,
                               double wall_time) {
    Impl& s = impl();
    if (layer.empty())
        throw StoreError(
            s.message("a feature map of run " + std::to_string(run) + " needs a layer name"));
    s.log_feature_map(run, layer, step, shape, values, wall_time);
}

void RunStore::log_probe_input(int64_t run, int64_t step, std::span<const int64_t> shape,
                               std::span<const float> values, double wall_time) {
    impl().log_feature_map(run, "", step, shape, values, wall_time);
}

// ---- reads ----------------------------------------------------------------------------------

namespace {
// A store whose version says it has the table but does not (copied by hand, damaged) gets a
// message saying so instead of SQLite's "no such table".
void require_feature_map_table(detail::Database& db) {
    if (db.query_int("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = "
                     "'feature_maps'",
                     "looking for the feature_maps table") == 0)
        throw StoreError(db.message("it has no feature_maps table although its schema version "
                                    "says so; the file was changed outside Myelin"));
}
} // namespace

std::vector<std::string> RunStore::feature_map_layers(int64_t run) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    require_feature_map_table(*s.db);
    // min(id) is the first row of each layer: its place in the first capture's forward pass.
    Statement q = s.db->prepare("SELECT layer FROM feature_maps WHERE run = ?1 AND layer <> '' "
                                "GROUP BY layer ORDER BY min(id)");
    q.bind(1, run);
    std::vector<std::string> out;
    while (q.step("listing feature map layers"))
        out.push_back(q.text(0));
    return out;
}

std::vector<int64_t> RunStore::feature_map_steps(int64_t run, std::string_view layer) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    require_feature_map_table(*s.db);
    Statement q =
        s.db->prepare("SELECT step FROM feature_maps WHERE run = ?1 AND layer = ?2 ORDER BY step");
    q.bind(1, run).bind(2, layer);
    std::vector<int64_t> out;
    while (q.step("listing feature map steps"))
        out.push_back(q.int64(0));
    return out;
}

std::vector<int64_t> RunStore::feature_map_capture_steps(int64_t run) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    require_feature_map_table(*s.db);
    Statement q = s.db->prepare("SELECT DISTINCT step FROM feature_maps WHERE run = ?1 AND "
                                "layer <> '' ORDER BY step");
    q.bind(1, run);
    std::vector<int64_t> out;
    while (q.step("listing feature map captures"))
        out.push_back(q.int64(0));
    return out;
}

std::optional<FeatureMap>
RunStore::Impl::read_feature_map_locked(int64_t run, std::string_view layer, int64_t step) {
    require_feature_map_table(*db);
    // Two index seeks, as nearest_metric_point; the blob is read for the chosen row only.
    const auto seek = [&](const char* sql) -> std::optional<std::pair<int64_t, int64_t>> {
        Statement q = db->prepare(sql);
        q.bind(1, run).bind(2, layer).bind(3, step);
        if (!q.step("looking up a feature map")) return std::nullopt;
        return std::pair{q.int64(0), q.int64(1)}; // id, step
    };
    const auto before = seek("SELECT id, step FROM feature_maps WHERE run = ?1 AND layer = ?2 AND "
                             "step <= ?3 ORDER BY step DESC LIMIT 1");
    std::optional<std::pair<int64_t, int64_t>> chosen = before;
    if (!before || before->second != step) {
        const auto after = seek("SELECT id, step FROM feature_maps WHERE run = ?1 AND layer = "
                                "?2 AND step > ?3 ORDER BY step LIMIT 1");
        if (!before || (after && after->second - step < step - before->second)) chosen = after;
    }
    if (!chosen) return std::nullopt;

    Statement q = db->prepare("SELECT step, wall_time, examples, channels, height, width, "
                              "scale_exp, data FROM feature_maps WHERE id = ?1");
    q.bind(1, chosen->first);
    if (!q.step("reading a feature map")) return std::nullopt; // deleted in between
    FeatureMap f;
    f.step = q.int64(0);
    f.wall_time = q.real(1);
    f.examples = q.int64(2);
    f.channels = q.int64(3);
    f.height = q.int64(4);
    f.width = q.int64(5);
    const int64_t scale_exp = q.int64(6);
    const std::string what = (layer.empty() ? std::string("the probe input")
                                            : "feature map '" + std::string(layer) + "'") +
                             " of run " + std::to_string(run) + " at step " +
                             std::to_string(f.step);
    int64_t count = 1;
    for (int64_t d : {f.examples, f.channels, f.height, f.width}) {
        if (d < 1 || d > kMaxFeatureMapValues || count > kMaxFeatureMapValues / d)
            throw StoreError(message(what + " is corrupt: its shape " +
                                     shape_text(f.examples, f.channels, f.height, f.width) +
                                     " is empty or too large"));
        count *= d;
    }
    const auto blob = q.blob(7);
    if (scale_exp < -200 || scale_exp > 200 || !detail::decode_feature_map(blob, int(scale_exp), f))
        throw StoreError(message(
            what + " is corrupt: shape " + shape_text(f.examples, f.channels, f.height, f.width) +
            " needs " + std::to_string(count * 2) +
            " bytes of float16 and a scale exponent within +-200, the row "
            "has " +
            std::to_string(blob.size()) + " bytes and exponent " + std::to_string(scale_exp)));
    return f;
}

std::optional<FeatureMap> RunStore::feature_map(int64_t run, std::string_view layer,
                                                int64_t step) const {
    Impl& s = impl();
    if (layer.empty()) return std::nullopt; // "" is the probe input, read by probe_input
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    return s.db->read_transaction("reading a feature map",
                                  [&] { return s.read_feature_map_locked(run, layer, step); });
}

std::optional<FeatureMap> RunStore::probe_input(int64_t run) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    return s.db->read_transaction("reading the probe input",
                                  [&] { return s.read_feature_map_locked(run, "", 0); });
}

} // namespace myelin::store
