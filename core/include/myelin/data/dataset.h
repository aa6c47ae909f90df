#pragma once
// Datasets in the style of torch.utils.data: a Dataset maps an index to an Example (input,
// target). get() must be safe to call from several threads at once (the DataLoader's workers do),
// so datasets are immutable after construction and shared as shared_ptr<const Dataset>.
#include <myelin/generator.h>
#include <myelin/tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace myelin::data {

struct Example {
    Tensor input;
    Tensor target; // may be undefined for unlabelled data
};

class Dataset {
  public:
    virtual ~Dataset() = default;
    virtual int64_t size() const = 0;
    virtual Example get(int64_t index) const = 0;
    // Class names for classification data (target = class index); empty otherwise.
    virtual std::vector<std::string> classes() const { return {}; }
    // Class index of one example. The default reads get(index).target (a 0-dim integer tensor);
    // datasets holding their labels in memory override it to avoid loading the input.
    virtual int64_t label(int64_t index) const;
    // Examples per class (size == classes().size()); empty when the dataset has no classes.
    virtual std::vector<int64_t> class_counts() const;
    // The examples at `indices` already stacked (inputs [n, ...], targets [n, ...]), equal to
    // stacking get(i) for each; nullopt where the dataset cannot gather them at once (the
    // DataLoader then loads them one by one). In-memory datasets gather rows in one copy.
    virtual std::optional<Example> get_batch(const std::vector<int64_t>& indices) const;

  protected:
    // Throws IndexError naming the dataset when index is outside [0, size()).
    void check_index(int64_t index, const char* what) const;
};
using DatasetPtr = std::shared_ptr<const Dataset>;

// Rows of `inputs` paired with rows of `targets` (same first dimension); get() returns views.
class TensorDataset : public Dataset {
  public:
    TensorDataset(Tensor inputs, Tensor targets, std::vector<std::string> class_names = {});
    int64_t size() const override { return size_; }
    Example get(int64_t index) const override;
    std::vector<std::string> classes() const override { return class_names_; }
    int64_t label(int64_t index) const override;
    std::optional<Example> get_batch(const std::vector<int64_t>& indices) const override;
    const Tensor& inputs() const { return inputs_; }
    const Tensor& targets() const { return targets_; }

  private:
    Tensor inputs_, targets_;
    int64_t size_ = 0;
    std::vector<std::string> class_names_;
    std::vector<int64_t> labels_; // targets as int64 when they are 1-D integer class indices
};

class Subset : public Dataset {
  public:
    Subset(DatasetPtr dataset, std::vector<int64_t> indices);
    int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
    Example get(int64_t index) const override;
    std::vector<std::string> classes() const override { return dataset_->classes(); }
    int64_t label(int64_t index) const override;
    std::optional<Example> get_batch(const std::vector<int64_t>& indices) const override;
    const std::vector<int64_t>& indices() const { return indices_; }
    const DatasetPtr& dataset() const { return dataset_; }

  private:
    DatasetPtr dataset_;
    std::vector<int64_t> indices_;
};

// The datasets one after the other. Classes are the common class list when every part has the
// same one, otherwise none.
class ConcatDataset : public Dataset {
  public:
    explicit ConcatDataset(std::vector<DatasetPtr> datasets);
    int64_t size() const override { return offsets_.back(); }
    Example get(int64_t index) const override;
    std::vector<std::string> classes() const override { return classes_; }
    int64_t label(int64_t index) const override;

  private:
    std::pair<size_t, int64_t> locate(int64_t index) const;
    std::vector<DatasetPtr> datasets_;
    std::vector<int64_t> offsets_; // offsets_[k] = first index of datasets_[k]; back() = size
    std::vector<std::string> classes_;
};

// torch.utils.data.random_split: a random permutation (from `gen`) cut into parts of the given
// lengths, which must sum to the dataset size.
std::vector<std::shared_ptr<Subset>>
random_split(const DatasetPtr& dataset, const std::vector<int64_t>& lengths, Generator& gen);
// Fractions summing to 1: each part gets floor(n * fraction) and the remainder is handed out one
// by one, round-robin from the first part (PyTorch's rule).
std::vector<std::shared_ptr<Subset>>
random_split(const DatasetPtr& dataset, const std::vector<double>& fractions, Generator& gen);

} // namespace myelin::data
