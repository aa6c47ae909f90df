#include <myelin/data/sampler.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/tensor.h>
#include <myelin/train/components.h>
#include <myelin/train/data_setup.h>
#include <myelin/train/trainer.h>

#include <cstdio>

namespace myelin::train {

int64_t held_out_count(int64_t n, double fraction) {
    return fraction > 0 ? std::max<int64_t>(1, int64_t(double(n) * fraction + 0.5)) : 0;
}

std::optional<int64_t> known_training_examples(const spec::DataSpec& spec) {
    const spec::DataSourceKind* kind = find_component(spec::data_source_kinds(), spec.source.kind);
    if (!kind || !kind->fixed_training_examples) return std::nullopt;
    const int64_t n = *kind->fixed_training_examples;
    return n - held_out_count(n, spec.validation_fraction);
}

std::optional<int64_t> known_steps_per_epoch(const spec::DataSpec& data, int64_t accumulation_steps,
                                             int processes) {
    const std::optional<int64_t> examples = known_training_examples(data);
    if (!examples || *examples <= 0 || data.batch_size <= 0 || processes < 1) return std::nullopt;
    const int64_t world = processes;
    const int64_t share = data.drop_last ? *examples / world : (*examples + world - 1) / world;
    const int64_t micro = data::batch_count(share, data.batch_size, data.drop_last);
    if (micro == 0) return std::nullopt;
    return optimizer_steps(micro, std::max<int64_t>(1, accumulation_steps));
}

namespace {

// Splits `dataset` into (rest, held out) with `fraction` held out, seeded.
std::pair<data::DatasetPtr, data::DatasetPtr>
hold_out(const data::DatasetPtr& dataset, double fraction, uint64_t seed, const char* what) {
    if (fraction <= 0) return {dataset, nullptr};
    int64_t n = dataset->size();
    int64_t held = held_out_count(n, fraction);
    if (held >= n)
        throw Error(std::string("the ") + what + " fraction " + std::to_string(fraction) +
                    " leaves no training examples (" + std::to_string(n) + " in total)");
    Generator gen(seed);
    auto parts = data::random_split(dataset, std::vector<int64_t>{n - held, held}, gen);
    return {parts[0], parts[1]};
}

// `choice` as built: a Normalize left to compute its values gets them written in.
std::string joined(const std::vector<double>& values) {
    std::string text;
    for (double v : values) {
        char number[32];
        std::snprintf(number, sizeof number, "%.9g", v);
        text += (text.empty() ? "" : ",") + std::string(number);
    }
    return text;
}
spec::Choice described(const spec::Choice& choice, const data::Transform& built) {
    spec::Choice out = choice;
    if (const auto* normalize = dynamic_cast<const data::Normalize*>(&built)) {
        out.options.set("mean", joined(normalize->mean()));
        out.options.set("std", joined(normalize->std_dev()));
    }
    return out;
}

// `split` with the dataset `from` under its Subsets replaced by `to`.
data::DatasetPtr rebased(const data::DatasetPtr& split, const data::DatasetPtr& from,
                         const data::DatasetPtr& to) {
    if (!split) return split;
    if (split == from) return to;
    if (const auto* subset = dynamic_cast<const data::Subset*>(split.get()))
        return std::make_shared<data::Subset>(rebased(subset->dataset(), from, to),
                                              subset->indices());
    return split;
}

// The indices of `split`'s examples in the dataset under its Subsets.
std::vector<int64_t> base_indices(const data::Dataset& split) {
    std::vector<int64_t> out(size_t(split.size()));
    for (int64_t i = 0; i < split.size(); ++i) {
        out[size_t(i)] = i;
        data::find_text_dataset(split, &out[size_t(i)]);
    }
    return out;
}

// A text source: the encoder (fitted on the training split unless one is given) on every split.
void encode_text(DataSplits& out, const data::DatasetPtr& raw,
                 const data::TextEncoding* text_encoding) {
    const auto& text = static_cast<const data::TextDataset&>(*raw);
    const data::TextEncoding encoding =
        text_encoding
            ? *text_encoding
            : data::fit_text_encoding(text.corpus(), base_indices(*out.train), text.options());
    out.text_encoder = std::make_shared<const data::TextEncoder>(encoding);
    const data::DatasetPtr encoded = text.with_encoder(out.text_encoder);
    out.train = rebased(out.train, raw, encoded);
    out.validation = rebased(out.validation, raw, encoded);
    out.test = rebased(out.test, raw, encoded);
}

class ComposeOrSingle {
  public:
    void add(data::TransformPtr t) { list_.push_back(std::move(t)); }
    data::TransformPtr get() const {
        if (list_.empty()) return nullptr;
        if (list_.size() == 1) return list_[0];
        return std::make_shared<data::Compose>(list_);
    }

  private:
    std::vector<data::TransformPtr> list_;
};

} // namespace

DataSplits make_data(const spec::DataSpec& spec, const std::filesystem::path& project_dir,
                     uint64_t seed, const data::TextEncoding* text_encoding) {
    const spec::DataSourceKind& kind =
        spec::kind_of(spec::data_source_kinds(), spec.source, "data source");
    const std::string& source = spec.source.kind;
    spec::SourceData loaded = kind.load(spec::checked_options(kind, spec.source),
                                        spec::SourceContext(source, project_dir));
    if (!loaded.train) throw Error("data source " + source + " loaded no training examples");
    data::DatasetPtr all_train = std::move(loaded.train), test = std::move(loaded.test);
    const data::DatasetPtr all_train_source = all_train;
    const double test_fraction = loaded.test_fraction;

    DataSplits out;
    if (all_train->size() == 0) throw Error("data source " + source + " has no examples");
    out.class_names = all_train->classes();

    if (!test)
        std::tie(all_train, test) = hold_out(all_train, test_fraction, seed ^ 0x7e57, "test");
    std::tie(out.train, out.validation) =
        hold_out(all_train, spec.validation_fraction, seed ^ 0x5a1d, "validation");
    out.test = test;
    const auto* raw_text = dynamic_cast<const data::TextDataset*>(all_train_source.get());
    if (raw_text && !raw_text->encoder()) encode_text(out, all_train_source, text_encoding);
    if (raw_text) out.notes = raw_text->corpus().notes;
    // As PyTorch's DataLoader: a batch larger than the training split is one short batch per
    // epoch (with drop_last there is none, and the trainer refuses).
    if (!spec.drop_last && spec.batch_size > out.train->size())
        out.notes.push_back("the batch size " + std::to_string(spec.batch_size) +
                            " is larger than the training split (" +
                            std::to_string(out.train->size()) + " examples): each epoch is one " +
                            "batch of " + std::to_string(out.train->size()));

    // Transforms: deterministic ones apply everywhere; random augmentation only to training.
    ComposeOrSingle train_t, eval_t;
    data::Example first = out.train->get(0);
    for (const spec::Choice& t : spec.transforms) {
        const spec::TransformKind& kind = spec::kind_of(spec::transform_kinds(), t, "transform");
        spec::TransformContext context{*out.train, first, eval_t.get()};
        spec::BuiltTransform built = kind.build(spec::checked_options(kind, t), context);
        if (!built.transform) continue;
        train_t.add(built.transform);
        if (built.training_only) continue;
        eval_t.add(built.transform);
        out.preprocessing.push_back(described(t, *built.transform));
    }
    out.train_transform = train_t.get();
    out.eval_transform = eval_t.get();
    Generator gen(seed);
    Tensor sample = out.eval_transform ? (*out.eval_transform)(first.input, gen) : first.input;
    out.input_shape = sample.sizes();
    out.input_dtype = sample.dtype();
    return out;
}

} // namespace myelin::train
