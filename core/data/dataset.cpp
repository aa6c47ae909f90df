#include <myelin/data/dataset.h>
#include <myelin/error.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace myelin::data {

void Dataset::check_index(int64_t index, const char* what) const {
    if (index < 0 || index >= size())
        throw IndexError(std::string(what) + ": index " + std::to_string(index) +
                         " is out of range for a dataset of size " + std::to_string(size()));
}

int64_t Dataset::label(int64_t index) const {
    Tensor target = get(index).target;
    if (!target.defined() || target.numel() != 1 || !is_integral(target.dtype(), true))
        throw Error("Dataset::label: example " + std::to_string(index) +
                    " has no integer class target");
    return target.item<int64_t>();
}

std::vector<int64_t> Dataset::class_counts() const {
    const auto names = classes();
    if (names.empty()) return {};
    std::vector<int64_t> counts(names.size(), 0);
    for (int64_t i = 0, n = size(); i < n; ++i) {
        const int64_t c = label(i);
        if (c < 0 || c >= static_cast<int64_t>(counts.size()))
            throw Error("Dataset::class_counts: example " + std::to_string(i) + " has label " +
                        std::to_string(c) + " outside the " + std::to_string(counts.size()) +
                        " classes");
        ++counts[static_cast<size_t>(c)];
    }
    return counts;
}

TensorDataset::TensorDataset(Tensor inputs, Tensor targets, std::vector<std::string> class_names)
    : inputs_(std::move(inputs)), targets_(std::move(targets)),
      class_names_(std::move(class_names)) {
    if (!inputs_.defined() || inputs_.dim() == 0)
        throw ShapeError("TensorDataset: inputs need a first (example) dimension");
    size_ = inputs_.size(0);
    if (targets_.defined()) {
        if (targets_.dim() == 0 || targets_.size(0) != size_)
            throw ShapeError("TensorDataset: inputs have " + std::to_string(size_) +
                             " examples but targets have shape " + targets_.shape().str());
        if (targets_.dim() == 1 && is_integral(targets_.dtype(), true))
            labels_ = targets_.to_vector<int64_t>();
    }
    if (!class_names_.empty()) {
        if (labels_.size() != static_cast<size_t>(size_))
            throw Error("TensorDataset: class names need 1-D integer class-index targets");
        for (size_t i = 0; i < labels_.size(); ++i)
            if (labels_[i] < 0 || labels_[i] >= static_cast<int64_t>(class_names_.size()))
                throw Error("TensorDataset: target " + std::to_string(i) + " is class " +
                            std::to_string(labels_[i]) + " but there are " +
                            std::to_string(class_names_.size()) + " class names");
    }
}

Example TensorDataset::get(int64_t index) const {
    check_index(index, "TensorDataset::get");
    return {inputs_.select(0, index), targets_.defined() ? targets_.select(0, index) : Tensor()};
}

std::optional<Example> Dataset::get_batch(const std::vector<int64_t>&) const {
    return std::nullopt;
}

std::optional<Example> TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
    if (indices.empty()) return std::nullopt;
    for (int64_t i : indices)
        check_index(i, "TensorDataset::get_batch");
    const Tensor rows = from_vector(indices, {int64_t(indices.size())});
    return Example{index_select(inputs_, 0, rows),
                   targets_.defined() ? index_select(targets_, 0, rows) : Tensor()};
}

int64_t TensorDataset::label(int64_t index) const {
    check_index(index, "TensorDataset::label");
    if (labels_.empty()) return Dataset::label(index);
    return labels_[static_cast<size_t>(index)];
}

Subset::Subset(DatasetPtr dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
    if (!dataset_) throw Error("Subset: dataset is null");
    const int64_t n = dataset_->size();
    for (int64_t i : indices_)
        if (i < 0 || i >= n)
            throw IndexError("Subset: index " + std::to_string(i) +
                             " is out of range for a dataset of size " + std::to_string(n));
}

Example Subset::get(int64_t index) const {
    check_index(index, "Subset::get");
    return dataset_->get(indices_[static_cast<size_t>(index)]);
}

std::optional<Example> Subset::get_batch(const std::vector<int64_t>& indices) const {
    std::vector<int64_t> inner;
    inner.reserve(indices.size());
    for (int64_t i : indices) {
        check_index(i, "Subset::get_batch");
        inner.push_back(indices_[static_cast<size_t>(i)]);
    }
    return dataset_->get_batch(inner);
}

int64_t Subset::label(int64_t index) const {
    check_index(index, "Subset::label");
    return dataset_->label(indices_[static_cast<size_t>(index)]);
}

ConcatDataset::ConcatDataset(std::vector<DatasetPtr> datasets) : datasets_(std::move(datasets)) {
    offsets_.push_back(0);
    for (const auto& d : datasets_) {
        if (!d) throw Error("ConcatDataset: a dataset is null");
        offsets_.push_back(offsets_.back() + d->size());
    }
    if (!datasets_.empty()) {
        classes_ = datasets_.front()->classes();
        for (const auto& d : datasets_)
            if (d->classes() != classes_) {
                classes_.clear();
                break;
            }
    }
}

std::pair<size_t, int64_t> ConcatDataset::locate(int64_t index) const {
    check_index(index, "ConcatDataset::get");
    // offsets_ is sorted: the part is the last offset <= index.
    const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), index) - 1;
    const auto part = static_cast<size_t>(it - offsets_.begin());
    return {part, index - *it};
}

Example ConcatDataset::get(int64_t index) const {
    const auto [part, local] = locate(index);
    return datasets_[part]->get(local);
}

int64_t ConcatDataset::label(int64_t index) const {
    const auto [part, local] = locate(index);
    return datasets_[part]->label(local);
}

std::vector<std::shared_ptr<Subset>>
random_split(const DatasetPtr& dataset, const std::vector<int64_t>& lengths, Generator& gen) {
    if (!dataset) throw Error("random_split: dataset is null");
    int64_t total = 0;
    for (int64_t l : lengths) {
        if (l < 0) throw Error("random_split: lengths must be non-negative");
        total += l;
    }
    if (total != dataset->size())
        throw Error("random_split: sum of input lengths (" + std::to_string(total) +
                    ") does not equal the length of the input dataset (" +
                    std::to_string(dataset->size()) + ")");
    const std::vector<int64_t> perm = randperm(total, DType::Int64, &gen).to_vector<int64_t>();
    std::vector<std::shared_ptr<Subset>> parts;
    auto begin = perm.begin();
    for (int64_t l : lengths) {
        parts.push_back(std::make_shared<Subset>(dataset, std::vector<int64_t>(begin, begin + l)));
        begin += l;
    }
    return parts;
}

std::vector<std::shared_ptr<Subset>>
random_split(const DatasetPtr& dataset, const std::vector<double>& fractions, Generator& gen) {
    if (!dataset) throw Error("random_split: dataset is null");
    double sum = 0.0;
    for (double f : fractions) {
        if (!(f >= 0.0 && f <= 1.0))
            throw Error("random_split: fraction " + std::to_string(f) + " is not within [0, 1]");
        sum += f;
    }
    if (fractions.empty() || std::abs(sum - 1.0) > 1e-9)
        throw Error("random_split: fractions must sum to 1 (they sum to " + std::to_string(sum) +
                    ")");
    const int64_t n = dataset->size();
    std::vector<int64_t> lengths;
    for (double f : fractions)
        lengths.push_back(static_cast<int64_t>(std::floor(static_cast<double>(n) * f)));
    const int64_t remainder = n - std::accumulate(lengths.begin(), lengths.end(), int64_t(0));
    for (int64_t i = 0; i < remainder; ++i)
        ++lengths[static_cast<size_t>(i) % lengths.size()];
    return random_split(dataset, lengths, gen);
}

} // namespace myelin::data
