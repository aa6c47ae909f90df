#pragma once
// What a recorded run says about each layer, read back from the run store: the per-layer series
// the trainer's callbacks wrote through StoreSink (gradient, weight and update norms every
// norms step; activation and gradient summaries every summary step), in the forward order of
// the run's model. `myelin runs layers` prints it; the studio's inspection views plot it. Live
// and recorded runs meet here: the store is the one source the views read.
#include <myelin/store/run_store.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::train {

// The per-layer metric families StoreSink writes, each as "<family>/<layer>".
namespace layer_metric {
inline constexpr std::string_view kGradNorm = "grad_norm";
inline constexpr std::string_view kWeightNorm = "weight_norm";
inline constexpr std::string_view kGradMeanAbs = "grad_mean_abs";
inline constexpr std::string_view kGradMaxAbs = "grad_max_abs";
inline constexpr std::string_view kUpdateRatio = "update_ratio";
inline constexpr std::string_view kActivationMean = "activation_mean";
inline constexpr std::string_view kActivationStd = "activation_std";
inline constexpr std::string_view kActivationZeros = "activation_zero_fraction";
inline constexpr std::string_view kActivationNonFinite = "activation_nonfinite";
inline constexpr std::string_view kGradientNonFinite = "gradient_nonfinite";
} // namespace layer_metric

// "grad_norm/fc1"
std::string layer_metric_key(std::string_view family, std::string_view layer);

struct RecordedLayer {
    std::string name; // the module name, as in the state_dict ("conv1", "block.0")
    std::string kind; // the node's layer kind ("Conv2d"); empty when the model does not name it
};

// The layers with per-layer series in `run`, in the forward order of the model the run was
// started with; names that model does not have (its project could not be read) follow, sorted.
std::vector<RecordedLayer> recorded_layers(const store::RunStore& store, int64_t run);
// The layers of the model `run` was started with, in forward order (from the run's project; empty
// when it cannot be read). A view that reads many steps of a run reads them once and passes them
// to the overloads taking `model`, which spare parsing the project on each call.
std::vector<RecordedLayer> run_model_layers(const store::RunStore& store, int64_t run);
std::vector<RecordedLayer> recorded_layers(const store::RunStore& store, int64_t run,
                                           const std::vector<RecordedLayer>& model);

// One layer at one step; a value is unset when that series has no point there.
struct LayerStatsRow {
    RecordedLayer layer;
    std::optional<double> grad_norm;
    std::optional<double> weight_norm;
    std::optional<double> update_ratio;
    std::optional<double> grad_mean_abs; // at the norms step (runs recorded before: unset)
    std::optional<double> grad_max_abs;
    std::optional<double> activation_mean;
    std::optional<double> activation_std;
    std::optional<double> zero_fraction; // exact zeros in the activation (dead units after ReLU)
    std::optional<double> nonfinite;     // NaN/Inf elements in the activation and gradient
};

struct LayerStatsTable {
    std::optional<int64_t> requested_step; // unset: the newest
    std::optional<int64_t> norms_step;     // the recorded norms step nearest the request
    std::optional<int64_t> summaries_step; // the recorded summary step nearest the request
    std::vector<LayerStatsRow> rows;       // recorded_layers' order
};

// The statistics of every recorded layer at `step`, or at the nearest step that recorded them
// (norms and summaries are recorded at different intervals, so each has its own nearest step;
// on a tie the earlier step). Throws store::StoreError for an unknown run.
LayerStatsTable layer_stats_at(const store::RunStore& store, int64_t run,
                               std::optional<int64_t> step = std::nullopt);
LayerStatsTable layer_stats_at(const store::RunStore& store, int64_t run,
                               std::optional<int64_t> step,
                               const std::vector<RecordedLayer>& model);

// How a layer looks at a step, for the badge on its node. The first that applies:
//   NonFinite  NaN/Inf in its activation or gradient, or a non-finite gradient norm
//   Dead       an activation layer (ReLU's family) whose output is >= 90% exact zeros
//   Exploding  gradient norm > 1000 x the median of the layers' norms at that step, or > 1e4
//   Vanishing  gradient norm < 1e-3 x that median, or < 1e-7
//   Healthy    otherwise; Unknown when nothing was recorded for the layer
// and, before all of these, Frozen: its parameters did not train at that step (frozen in the
// project, or while the run was paused: the store's kFrozenEvent events), so it has no gradient.
enum class LayerHealth { Unknown, Healthy, Vanishing, Exploding, Dead, NonFinite, Frozen };
const char* health_name(LayerHealth health); // "healthy", "vanishing", ...

struct LayerBadge {
    RecordedLayer layer;
    LayerHealth health = LayerHealth::Unknown;
    std::string reason;                    // why, in words ("gradient norm 3.2e-09 ...")
    std::optional<double> grad_norm;       // at the table's norms step
    std::optional<double> zero_fraction;   // at its summaries step
    std::optional<double> activation_mean; // of the layer's output, at its summaries step
    std::optional<double> activation_std;
    std::vector<double> recent_grad_norms; // up to `points` maxima over steps 0..step, oldest first
};

// Every recorded layer's badge at `step` (the newest when unset), from layer_stats_at plus a
// sparkline of its gradient norm over the run so far (block summaries: cheap on long runs).
std::vector<LayerBadge> layer_badges_at(const store::RunStore& store, int64_t run,
                                        std::optional<int64_t> step = std::nullopt,
                                        int points = 24);
// The same from a table layer_stats_at already read.
std::vector<LayerBadge> layer_badges(const store::RunStore& store, int64_t run,
                                     const LayerStatsTable& table, int points = 24);
LayerHealth classify_layer(const LayerStatsRow& row, double median_grad_norm, bool activation,
                           std::string* reason = nullptr);

// --- histograms over time (the Distributions view) ---

// The histogram's counts spread over `bins` equal bins of [low, high], each source bin's count
// shared among the target bins it overlaps in proportion to the overlap (counts are assumed
// uniform inside a bin). What lies outside [low, high] is dropped; the sum is kept otherwise.
std::vector<double> rebin_histogram(const store::HistogramSample& histogram, double low,
                                    double high, int bins);

// The values below which fractions `quantiles` (each in [0, 1]) of the histogram's counts lie,
// interpolating linearly inside a bin (numpy.percentile's "linear" on the binned data). NaN for
// every quantile when the histogram is empty.
std::vector<double> histogram_quantiles(const store::HistogramSample& histogram,
                                        const std::vector<double>& quantiles);

// The layers with activation or gradient histograms ("activation/<layer>"), model order.
std::vector<RecordedLayer> layers_with_histograms(const store::RunStore& store, int64_t run);

// --- feature maps (the Feature Maps view) ---

// The layers with feature maps (store::RunStore::feature_map_layers: forward order), with the
// kinds the run's model gives them.
std::vector<RecordedLayer> layers_with_feature_maps(const store::RunStore& store, int64_t run);

// How often the run captured feature maps: its project's training.capture.feature_maps_every
// (0: off); unset when the run's project snapshot cannot be read.
std::optional<int64_t> feature_maps_interval(const store::RunStore& store, int64_t run);

// One channel of one example of a feature map: min, max and mean of its finite values (NaN when
// it has none) and how many are NaN or infinite.
struct ChannelStats {
    double min = 0;
    double max = 0;
    double mean = 0;
    int64_t nonfinite = 0;
};
ChannelStats channel_stats(const store::FeatureMap& map, int64_t example, int64_t channel);

// The table as `myelin runs layers` prints it: a line saying which steps the values are from,
// then one row per layer, "-" where nothing was recorded.
std::string format_layer_stats(const LayerStatsTable& table);

} // namespace myelin::train
