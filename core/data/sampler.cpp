#include <myelin/data/limits.h>
#include <myelin/data/sampler.h>
#include <myelin/error.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace myelin::data {

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
    if (n < 0) throw Error("SequentialSampler: size must be non-negative");
}

std::vector<int64_t> SequentialSampler::indices(Generator&) const {
    std::vector<int64_t> out(static_cast<size_t>(n_));
    std::iota(out.begin(), out.end(), int64_t(0));
    return out;
}

RandomSampler::RandomSampler(int64_t n, bool replacement, int64_t num_samples)
    : n_(n), num_samples_(num_samples < 0 ? n : num_samples), replacement_(replacement) {
    if (n < 0) throw Error("RandomSampler: size must be non-negative");
    if (!replacement && num_samples_ > n)
        throw Error("RandomSampler: num_samples (" + std::to_string(num_samples_) +
                    ") exceeds the dataset size (" + std::to_string(n) + ") without replacement");
    if (replacement && n == 0 && num_samples_ > 0)
        throw Error("RandomSampler: cannot draw from an empty dataset");
}

std::vector<int64_t> RandomSampler::indices(Generator& gen) const {
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(num_samples_));
    if (replacement_) {
        for (int64_t i = 0; i < num_samples_; ++i)
            out.push_back(static_cast<int64_t>(gen.below(static_cast<uint64_t>(n_))));
        return out;
    }
    out = randperm(n_, DType::Int64, &gen).to_vector<int64_t>();
    out.resize(static_cast<size_t>(num_samples_));
    return out;
}

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples,
                                             bool replacement)
    : weights_(std::move(weights)), num_samples_(num_samples), replacement_(replacement) {
    if (num_samples < 0) throw Error("WeightedRandomSampler: num_samples must be non-negative");
    int64_t nonzero = 0;
    double total = 0.0;
    for (size_t i = 0; i < weights_.size(); ++i) {
        const double w = weights_[i];
        if (!(w >= 0.0) || !std::isfinite(w))
            throw Error("WeightedRandomSampler: weight " + std::to_string(i) + " (" +
                        std::to_string(w) + ") must be finite and non-negative");
        nonzero += w > 0.0;
        total += w;
        cumulative_.push_back(total);
    }
    if (num_samples > 0 && total <= 0.0)
        throw Error("WeightedRandomSampler: the weights sum to zero");
    if (!replacement && num_samples > nonzero)
        throw Error("WeightedRandomSampler: cannot draw " + std::to_string(num_samples) +
                    " samples without replacement from " + std::to_string(nonzero) +
                    " non-zero weights");
}

std::vector<int64_t> WeightedRandomSampler::indices(Generator& gen) const {
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(num_samples_));
    if (replacement_) {
        const double total = cumulative_.empty() ? 0.0 : cumulative_.back();
        for (int64_t i = 0; i < num_samples_; ++i) {
            const double u = gen.uniform_double() * total;
            auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
            // Skip zero-weight entries sharing the same cumulative value (u landed on a boundary).
            auto idx = std::min<size_t>(static_cast<size_t>(it - cumulative_.begin()),
                                        cumulative_.size() - 1);
            while (weights_[idx] == 0.0 && idx + 1 < weights_.size())
                ++idx;
            out.push_back(static_cast<int64_t>(idx));
        }
        return out;
    }
    // Efraimidis–Spirakis: the k largest u^(1/w) keys have the distribution of k successive
    // weighted draws without replacement, in O(n log n) instead of O(n k).
    std::vector<std::pair<double, int64_t>> keys;
    for (size_t i = 0; i < weights_.size(); ++i) {
        if (weights_[i] <= 0.0) continue;
        double u = gen.uniform_double();
        if (u <= 0.0) u = 1e-300;
        keys.emplace_back(std::log(u) / weights_[i], static_cast<int64_t>(i));
    }
    std::partial_sort(keys.begin(), keys.begin() + num_samples_, keys.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    for (int64_t i = 0; i < num_samples_; ++i)
        out.push_back(keys[static_cast<size_t>(i)].second);
    return out;
}

DistributedSampler::DistributedSampler(SamplerPtr inner, int world, int rank, bool drop_last)
    : inner_(std::move(inner)), world_(world), rank_(rank), drop_last_(drop_last) {
    if (!inner_) throw Error("DistributedSampler: sampler is null");
    if (world < 1 || rank < 0 || rank >= world)
        throw Error("DistributedSampler: rank " + std::to_string(rank) + " of a world of " +
                    std::to_string(world) + " does not exist");
}

int64_t DistributedSampler::size() const {
    const int64_t n = inner_->size();
    return drop_last_ ? n / world_ : (n + world_ - 1) / world_;
}

std::vector<int64_t> DistributedSampler::indices(Generator& gen) const {
    std::vector<int64_t> all = inner_->indices(gen);
    if (world_ == 1) return all;
    const int64_t per_rank = size();
    std::vector<int64_t> out;
    out.reserve(size_t(per_rank));
    const size_t n = all.size();
    for (int64_t i = 0; i < per_rank && n > 0; ++i)
        out.push_back(all[size_t(i * world_ + rank_) % n]); // wraps into the padding
    return out;
}

std::vector<double> class_balanced_weights(const Dataset& dataset) {
    const auto counts = dataset.class_counts();
    if (counts.empty()) throw Error("class_balanced_weights: the dataset has no classes");
    std::vector<double> weights(static_cast<size_t>(dataset.size()));
    for (int64_t i = 0; i < dataset.size(); ++i)
        weights[static_cast<size_t>(i)] =
            1.0 / static_cast<double>(counts[static_cast<size_t>(dataset.label(i))]);
    return weights;
}

BatchSampler::BatchSampler(SamplerPtr sampler, int64_t batch_size, bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
    if (!sampler_) throw Error("BatchSampler: sampler is null");
    if (batch_size <= 0)
        throw Error("BatchSampler: batch_size must be positive, got " + std::to_string(batch_size));
    if (batch_size > kMaxBatchSize)
        throw Error("BatchSampler: batch_size " + std::to_string(batch_size) + " is more than " +
                    std::to_string(kMaxBatchSize) + " (the limit)");
}

int64_t batch_count(int64_t examples, int64_t batch_size, bool drop_last) {
    return drop_last ? examples / batch_size : (examples + batch_size - 1) / batch_size;
}

int64_t BatchSampler::size() const {
    return batch_count(sampler_->size(), batch_size_, drop_last_);
}

std::vector<std::vector<int64_t>> BatchSampler::batches(Generator& gen) const {
    const std::vector<int64_t> indices = sampler_->indices(gen);
    std::vector<std::vector<int64_t>> out;
    for (size_t start = 0; start < indices.size(); start += static_cast<size_t>(batch_size_)) {
        const size_t end = std::min(indices.size(), start + static_cast<size_t>(batch_size_));
        if (drop_last_ && end - start < static_cast<size_t>(batch_size_)) break;
        out.emplace_back(indices.begin() + static_cast<std::ptrdiff_t>(start),
                         indices.begin() + static_cast<std::ptrdiff_t>(end));
    }
    return out;
}

} // namespace myelin::data
