#pragma once
// Turns a project's DataSpec into datasets: the source (Fashion-MNIST, IDX, CSV, NPY, image
// folder), the seeded test / validation splits, and the transforms (random augmentation on the
// training set only; Normalize without values computes them from the training split).
#include <myelin/data/dataset.h>
#include <myelin/data/text.h>
#include <myelin/data/transforms.h>
#include <myelin/dims.h>
#include <myelin/io/project.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace myelin::train {

struct DataSplits {
    data::DatasetPtr train;
    data::DatasetPtr validation;          // null when validation_fraction is 0
    data::DatasetPtr test;                // null when the source has no test part
    data::TransformPtr train_transform;   // null: none
    data::TransformPtr eval_transform;    // the deterministic part (scaling, normalization)
    std::vector<std::string> class_names; // empty for regression
    Dims input_shape;                     // one example, after transforms
    // The deterministic transforms (what inference applies), Normalize with its mean and std
    // written in even where the spec leaves them to be computed.
    std::vector<spec::Choice> preprocessing;
    DType input_dtype = DType::Float32;
    // Text sources: the encoder every split uses (vocabulary from the training split, or the
    // one a checkpoint saved); null for other sources.
    std::shared_ptr<const data::TextEncoder> text_encoder;
    // What the source says for people: lines skipped, duplicates dropped, how a file was read.
    std::vector<std::string> notes;
    bool classification() const { return !class_names.empty(); }
};

// How many of `n` examples a hold-out of `fraction` (validation or test) takes: 0 for a fraction
// of 0, else the rounded share and at least 1. make_data refuses a hold-out that takes all.
int64_t held_out_count(int64_t n, double fraction);

// The training examples of a source whose size is fixed, known without reading a file:
// Fashion-MNIST's 60,000 training images less the validation hold-out. Unset for sources sized
// by their files (CSV, IDX, NPY, image folders).
std::optional<int64_t> known_training_examples(const spec::DataSpec& spec);
// The optimizer steps per epoch the trainer will take, from the spec alone (the hold-out, then
// batches, then accumulation, as the trainer counts them); unset when the source's size is not
// known without reading it, or no batch fits. With `processes` > 1 (data-parallel), the steps of
// each process: it reads its share of the examples, padded to equal shares (or cut to them with
// drop_last), as DistributedSampler hands them out.
std::optional<int64_t> known_steps_per_epoch(const spec::DataSpec& data, int64_t accumulation_steps,
                                             int processes = 1);

// Paths in the spec are relative to `project_dir`. Throws myelin::Error naming the source,
// the option and the file on any problem. A text source encodes with `text_encoding` when
// given (a checkpoint's), else with a vocabulary built from the training split.
DataSplits make_data(const spec::DataSpec& spec, const std::filesystem::path& project_dir,
                     uint64_t seed, const data::TextEncoding* text_encoding = nullptr);

} // namespace myelin::train
