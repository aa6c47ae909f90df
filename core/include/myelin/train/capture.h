#pragma once
// What the trainer captures from tensors: summaries (statistics + histogram) of activations and
// gradients, and the norms behind the per-layer gradient norm, weight norm and update/weight
// ratio plotted every step. All of it is computed in double on the host, over the tensor's
// values read once or twice, OpenMP-parallel from 64k elements. Partial sums are combined in a
// fixed order, so a result does not depend on the number of threads.
#include <cstdint>
#include <vector>

namespace myelin {
class Tensor;
}

namespace myelin::train {

struct TensorSummary {
    int64_t numel = 0;        // all elements
    int64_t finite_count = 0; // the elements every statistic below is computed over
    int64_t nan_count = 0;
    int64_t inf_count = 0;  // +inf and -inf
    int64_t zero_count = 0; // exact zeros (+0 and -0)
    double mean = 0.0;
    double std = 0.0; // unbiased (n - 1), like torch.std; 0 with fewer than 2 finite values
    double min = 0.0;
    double max = 0.0; // min, max, mean, std are 0 when there is no finite value
    // Equal-width bins over [hist_low, hist_high], numpy.histogram's rules: each bin holds
    // [edge_k, edge_{k+1}) except the last, which also holds hist_high. The range is
    // [min, max]; [min - 0.5, max + 0.5] when min == max (numpy's), [0, 1] with no finite value.
    // The counts sum to finite_count.
    double hist_low = 0.0;
    double hist_high = 1.0;
    std::vector<int64_t> histogram;

    int64_t nonfinite_count() const { return nan_count + inf_count; }
    double zero_fraction() const { // of all elements
        return numel > 0 ? static_cast<double>(zero_count) / static_cast<double>(numel) : 0.0;
    }
    // histogram.size() + 1 edges: hist_low + k * (hist_high - hist_low) / bins, the last being
    // exactly hist_high (numpy.linspace). These are the edges the counts were binned with.
    std::vector<double> bin_edges() const;
};

// Any dtype, device, strides; autograd is not involved. Throws Error when bins < 1 or the tensor
// is undefined.
TensorSummary summarize(const Tensor& x, int bins = 64);

// Sum of squares and L2 norm in double accumulation (Inf/NaN propagate: a non-finite gradient
// shows as a non-finite norm). For a layer's norm over several parameters, add the parameters'
// sums of squares and take the square root once.
double sum_of_squares(const Tensor& x);
// Σx², Σ|x|, max |x| and the count of x in one pass (a layer's gradient statistics).
struct MagnitudeStats {
    double sum_squares = 0.0;
    double sum_abs = 0.0;
    double max_abs = 0.0;
    int64_t count = 0;
    MagnitudeStats& operator+=(const MagnitudeStats& other);
    double mean_abs() const { return count > 0 ? sum_abs / double(count) : 0.0; }
};
MagnitudeStats magnitude_stats(const Tensor& x);
double l2_norm(const Tensor& x);

// Squared norms of an optimizer step, from the weights before and after it, in one pass over
// both (same shape; dtypes may differ). Sums of squares, so the parameters of one layer add up.
struct UpdateSquares {
    double update = 0.0; // ||after - before||²
    double weight = 0.0; // ||before||²

    UpdateSquares& operator+=(const UpdateSquares& o) {
        update += o.update;
        weight += o.weight;
        return *this;
    }
    // ||update|| / ||weight before the step|| (CS231n's update/param scale ratio; ~1e-3 is the
    // healthy rule of thumb); 0 when the weights were all zero.
    double ratio() const;
};
UpdateSquares update_squares(const Tensor& before, const Tensor& after);
inline double update_ratio(const Tensor& before, const Tensor& after) {
    return update_squares(before, after).ratio();
}

// A detached, contiguous host copy that shares no storage with x (for FeatureMap events: the
// trainer may overwrite or free the original after the event is queued).
Tensor snapshot(const Tensor& x);

} // namespace myelin::train
