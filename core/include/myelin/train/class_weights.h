#pragma once
// Class weights for the losses that take them (CrossEntropyLoss, NLLLoss, BCE*): what "balance
// classes" fills in, and how the weights a loss is built with read in a report.
#include <myelin/spec/components.h>
#include <myelin/spec/training.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace myelin::train {

// scikit-learn's "balanced" weights, the usual recipe with PyTorch's CrossEntropyLoss:
// n_samples / (n_classes * count_c), over the classes that have examples. A class with no
// examples gets 1 (it adds nothing to the training loss either way).
std::vector<double> balanced_class_weights(const std::vector<int64_t>& counts);

// The training split's classes and their example counts, as the trainer will split them (reads
// the data: call it off the GUI thread). Empty for data without classes.
struct ClassCounts {
    std::vector<std::string> names;
    std::vector<int64_t> counts;
};
ClassCounts training_class_counts(const spec::DataSpec& data,
                                  const std::filesystem::path& project_dir, uint64_t seed);

// The table options of `loss` that are set, as the loss uses them, one line each:
// "weight: T-shirt/top 2, Trouser 1, ..." in class order (or by output). Throws as make_loss
// does for a name the data does not have. Empty when none is set.
std::vector<std::string> describe_loss_weights(const spec::Choice& loss,
                                               const spec::LossContext& context);

// The model's outputs per example: the last dimension of its Output ([N, K] -> K, [N] -> 1);
// 0 when the shape cannot be inferred.
int64_t model_outputs(const graph::ModelSpec& model);

// The project's loss context without building a Trainer: the data's class names (reads the
// data when the loss has a table option set) and the model's outputs. Used by `myelin check`.
spec::LossContext loss_context_for(const spec::TrainSpec& train, const spec::DataSpec& data,
                                   const graph::ModelSpec& model,
                                   const std::filesystem::path& project_dir);

} // namespace myelin::train
