#pragma once
// Samplers decide the order of indices of one epoch. They are stateless: the DataLoader passes a
// generator seeded for the epoch, so an epoch's order depends only on (seed, epoch).
#include <myelin/data/dataset.h>
#include <myelin/generator.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace myelin::data {

class Sampler {
  public:
    virtual ~Sampler() = default;
    virtual int64_t size() const = 0; // indices per epoch
    virtual std::vector<int64_t> indices(Generator& gen) const = 0;
};
using SamplerPtr = std::shared_ptr<const Sampler>;

class SequentialSampler : public Sampler {
  public:
    explicit SequentialSampler(int64_t n);
    int64_t size() const override { return n_; }
    std::vector<int64_t> indices(Generator& gen) const override;

  private:
    int64_t n_;
};

// A permutation of [0, n); with replacement, num_samples uniform draws.
class RandomSampler : public Sampler {
  public:
    explicit RandomSampler(int64_t n, bool replacement = false, int64_t num_samples = -1);
    int64_t size() const override { return num_samples_; }
    std::vector<int64_t> indices(Generator& gen) const override;

  private:
    int64_t n_, num_samples_;
    bool replacement_;
};

// Index i is drawn with probability proportional to weights[i] (torch.multinomial semantics:
// without replacement each index appears at most once, so num_samples <= nonzero weights).
class WeightedRandomSampler : public Sampler {
  public:
    WeightedRandomSampler(std::vector<double> weights, int64_t num_samples,
                          bool replacement = true);
    int64_t size() const override { return num_samples_; }
    std::vector<int64_t> indices(Generator& gen) const override;

  private:
    std::vector<double> weights_;
    std::vector<double> cumulative_;
    int64_t num_samples_;
    bool replacement_;
};

// DistributedSampler (torch.utils.data.distributed): rank `rank` of `world` ranks takes every
// world-th index of the inner sampler's order, starting at position `rank`. The order depends on
// the epoch's generator only, so it is the same on every rank; it is padded by wrapping around to
// a multiple of `world` (with drop_last, cut to one instead), so every rank gets the same number
// of indices and together they cover every index once (padding aside). world = 1: the inner
// order unchanged.
class DistributedSampler : public Sampler {
  public:
    DistributedSampler(SamplerPtr inner, int world, int rank, bool drop_last);
    int64_t size() const override;
    std::vector<int64_t> indices(Generator& gen) const override;

  private:
    SamplerPtr inner_;
    int world_, rank_;
    bool drop_last_;
};

// Per-example weights 1 / count(class of example): balanced classes in expectation when fed to
// WeightedRandomSampler. Throws when the dataset has no classes.
std::vector<double> class_balanced_weights(const Dataset& dataset);

// Batches per epoch over `examples` examples: the last short batch counts unless drop_last.
int64_t batch_count(int64_t examples, int64_t batch_size, bool drop_last);

// Groups a sampler's indices into batches of batch_size; the last short batch is dropped when
// drop_last is set.
class BatchSampler {
  public:
    BatchSampler(SamplerPtr sampler, int64_t batch_size, bool drop_last);
    int64_t size() const; // batches per epoch
    std::vector<std::vector<int64_t>> batches(Generator& gen) const;
    int64_t batch_size() const { return batch_size_; }
    bool drop_last() const { return drop_last_; }

  private:
    SamplerPtr sampler_;
    int64_t batch_size_;
    bool drop_last_;
};

} // namespace myelin::data
