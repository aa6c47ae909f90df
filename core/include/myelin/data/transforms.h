#pragma once
// Transforms of one example's input (torchvision.transforms). The DataLoader applies them on its
// worker threads with a generator seeded by (seed, epoch, batch), so random transforms give the
// same result whatever the number of workers. Image transforms take [C, H, W] (or [H, W]).
#include <myelin/data/dataset.h>
#include <myelin/generator.h>
#include <myelin/tensor.h>

#include <memory>
#include <utility>
#include <vector>

namespace myelin::data {

class Transform {
  public:
    virtual ~Transform() = default;
    virtual Tensor operator()(const Tensor& input, Generator& gen) const = 0;
    // True when the transform maps each element on its own, the same way for every example and
    // without the generator, so applying it to a stacked batch gives the same values as applying
    // it to each example (the DataLoader then transforms whole batches).
    virtual bool elementwise() const { return false; }
};
using TransformPtr = std::shared_ptr<const Transform>;

// uint8 [0, 255] → float32 [0, 1] (ToTensor's scaling); float inputs pass through unchanged.
class ScaleTo01 : public Transform {
  public:
    Tensor operator()(const Tensor& input, Generator& gen) const override;
    bool elementwise() const override { return true; }
};

// (x - mean[c]) / std[c] per channel (dim 0); a single mean/std applies to every channel.
class Normalize : public Transform {
  public:
    Normalize(std::vector<double> mean, std::vector<double> std);
    Tensor operator()(const Tensor& input, Generator& gen) const override;
    // The values it applies (checkpoints record them: exported models preprocess alike).
    const std::vector<double>& mean() const { return mean_; }
    const std::vector<double>& std_dev() const { return std_; }

  private:
    std::vector<double> mean_, std_;
};

// Per-channel mean and (population) std of every input of the dataset, accumulated in double;
// `transform` (e.g. ScaleTo01) is applied first when given.
std::pair<std::vector<double>, std::vector<double>>
compute_mean_std(const Dataset& dataset, const TransformPtr& transform = nullptr);

class RandomHorizontalFlip : public Transform {
  public:
    explicit RandomHorizontalFlip(double p = 0.5);
    Tensor operator()(const Tensor& input, Generator& gen) const override;

  private:
    double p_;
};

// Zero-pads by `padding` on every side, then crops a random height x width window.
class RandomCrop : public Transform {
  public:
    RandomCrop(int64_t height, int64_t width, int64_t padding = 0);
    Tensor operator()(const Tensor& input, Generator& gen) const override;

  private:
    int64_t height_, width_, padding_;
};

// Translates by integer offsets dx in [-max_dx, max_dx], dy in [-max_dy, max_dy]; uncovered
// pixels are zero.
class RandomAffineShift : public Transform {
  public:
    RandomAffineShift(int64_t max_dx, int64_t max_dy);
    Tensor operator()(const Tensor& input, Generator& gen) const override;

  private:
    int64_t max_dx_, max_dy_;
};

class Compose : public Transform {
  public:
    explicit Compose(std::vector<TransformPtr> transforms);
    Tensor operator()(const Tensor& input, Generator& gen) const override;
    bool elementwise() const override;

  private:
    std::vector<TransformPtr> transforms_;
};

} // namespace myelin::data
