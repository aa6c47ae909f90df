#pragma once
// Evaluation of a trained model on a dataset, kept per example: what `myelin eval` prints and
// the studio's Evaluation view shows. One pass over the data in the order of the dataset, with
// the Trainer's eval transforms, batches and autocast, so its metrics equal
// Trainer::evaluate's; beside them it keeps, per example, the model's output, the target, the
// loss and (classification) the predicted class and probabilities, and from those the confusion
// matrix with the examples of each cell, per-class scores and the examples of highest loss.
//
// Threading: evaluate_examples runs on the calling thread (the studio's worker); `progress`
// and `cancelled` are called on it between batches.
#include <myelin/data/dataset.h>
#include <myelin/train/metrics.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace myelin::io {
struct Project;
}

namespace myelin::train {

class Trainer;

struct EvaluationOptions {
    int64_t top_losses = 25; // how many examples of highest loss to list
    // After every batch: batches done, batches in all. May be empty.
    std::function<void(int64_t done, int64_t total)> progress;
    // Polled before every batch; true stops the pass (the result is then marked cancelled).
    std::function<bool()> cancelled;
};

struct Evaluation {
    std::string split;      // "test" or "validation": which part of the data was evaluated
    int64_t size = 0;       // examples
    MetricMap metrics;      // loss and the task's metrics, as Trainer::evaluate computes them
    bool cancelled = false; // stopped before the end: nothing below is complete

    // Per example, in dataset order.
    int64_t outputs_per_example = 0; // D: classes for classification
    std::vector<float> outputs;      // [size, D]: the model's raw outputs (logits)
    std::vector<double> losses;      // the loss of each example alone (mean over its elements)

    // Classification (class_names not empty).
    std::vector<std::string> class_names;
    std::vector<int64_t> targets;     // true class
    std::vector<int64_t> predicted;   // argmax of the output (the first on ties, NaN largest)
    std::vector<float> probabilities; // [size, classes]: softmax of the output
    ConfusionMatrix confusion;        // rows: true class, columns: predicted
    std::vector<std::vector<int64_t>> cell_examples; // [true * classes + predicted]: indices
    std::vector<ClassScores> per_class;

    // Regression: the target values beside `outputs`, [size, D].
    std::vector<float> target_values;

    // Indices of the examples of highest loss, highest first (ties: lower index first).
    std::vector<int64_t> top_losses;

    bool classification() const { return !class_names.empty(); }
    int64_t num_classes() const { return int64_t(class_names.size()); }
    float probability(int64_t example, int64_t cls) const {
        return probabilities[size_t(example * num_classes() + cls)];
    }
    float output(int64_t example, int64_t k) const {
        return outputs[size_t(example * outputs_per_example + k)];
    }
    float target_value(int64_t example, int64_t k) const {
        return target_values[size_t(example * outputs_per_example + k)];
    }
    const std::vector<int64_t>& cell(int64_t true_class, int64_t predicted_class) const {
        return cell_examples[size_t(true_class * num_classes() + predicted_class)];
    }
    // The confusion matrix's row of `true_class` divided by its sum (zeros for an empty row).
    std::vector<double> normalized_row(int64_t true_class) const;
};

// The part of the Trainer's data an evaluation uses: the test part, else the validation part.
// Throws Error when the data has neither. `split` receives "test" or "validation".
data::DatasetPtr evaluation_dataset(const Trainer& trainer, std::string* split = nullptr);

// Evaluates the Trainer's model (as it is: load a checkpoint through TrainerOptions::resume_from)
// on `dataset` (one of its splits, or any dataset giving the same examples).
Evaluation evaluate_examples(Trainer& trainer, const data::DatasetPtr& dataset,
                             const EvaluationOptions& options = {});

// A Trainer for `project` with the model tensors of `checkpoint` loaded (its optimizer state
// is not needed), for evaluation: throws Error when the checkpoint is missing or unreadable or
// does not fit the project's model (with a resume's message, naming each tensor). The
// default generator is left as it was (but it is process-wide and unsynchronised: do not build
// one while another thread trains).
std::unique_ptr<Trainer> trainer_for_checkpoint(const io::Project& project,
                                                const std::filesystem::path& project_dir,
                                                const std::filesystem::path& checkpoint,
                                                int threads = 0);

} // namespace myelin::train
