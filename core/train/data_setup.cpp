#include <myelin/data/readers.h>
#include <myelin/data/sampler.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/tensor.h>
#include <myelin/train/components.h>
#include <myelin/train/data_setup.h>
#include <myelin/train/trainer.h>

#include <cstdlib>
#include <sstream>

namespace myelin::train {

namespace {

std::string resolve(const std::filesystem::path& dir, const std::string& path) {
    if (path.empty()) return path;
    std::filesystem::path p(path);
    return (p.is_absolute() ? p : dir / p).lexically_normal().string();
}

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
        if (a != std::string::npos) out.push_back(item.substr(a, b - a + 1));
    }
    return out;
}

std::vector<double> parse_numbers(const std::string& text, const char* what) {
    std::vector<double> out;
    for (const auto& item : split_list(text)) {
        char* end = nullptr;
        double v = std::strtod(item.c_str(), &end);
        if (end == item.c_str() || *end != '\0')
            throw Error(std::string("Normalize: ") + what +
                        " must be comma-separated numbers, got '" + item + "'");
        out.push_back(v);
    }
    return out;
}

} // namespace

int64_t held_out_count(int64_t n, double fraction) {
    return fraction > 0 ? std::max<int64_t>(1, int64_t(double(n) * fraction + 0.5)) : 0;
}

// The training part of Fashion-MNIST (train-images-idx3-ubyte).
constexpr int64_t kFashionMnistTrainImages = 60000;

std::optional<int64_t> known_training_examples(const spec::DataSpec& spec) {
    if (spec.source.kind != "fashion-mnist") return std::nullopt;
    return kFashionMnistTrainImages -
           held_out_count(kFashionMnistTrainImages, spec.validation_fraction);
}

std::optional<int64_t> known_steps_per_epoch(const spec::DataSpec& data,
                                             int64_t accumulation_steps) {
    const std::optional<int64_t> examples = known_training_examples(data);
    if (!examples || *examples <= 0 || data.batch_size <= 0) return std::nullopt;
    const int64_t micro = data::batch_count(*examples, data.batch_size, data.drop_last);
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
                     uint64_t seed) {
    const spec::ComponentKind* kind = find_component(spec::data_source_kinds(), spec.source.kind);
    if (!kind) throw Error("unknown data source '" + spec.source.kind + "'");
    graph::Attrs o = graph::with_defaults(kind->options, spec.source.options);
    const std::string& source = spec.source.kind;
    auto require = [&](const char* option) {
        std::string v = o.get_string(option);
        if (v.empty())
            throw Error("data source " + source + ": option '" + option + "' is required");
        return resolve(project_dir, v);
    };

    DataSplits out;
    data::DatasetPtr all_train, test;
    double test_fraction = 0;
    if (source == "fashion-mnist") {
        std::string dir = resolve(project_dir, o.get_string("directory"));
        try {
            all_train = data::load_fashion_mnist(dir, true);
            test = data::load_fashion_mnist(dir, false);
        } catch (const Error& e) {
            throw Error(std::string(e.what()) +
                        " (Fashion-MNIST comes with the Debian package dataset-fashion-mnist)");
        }
    } else if (source == "idx") {
        auto names = split_list(o.get_string("class_names"));
        std::string images = require("train_images"), labels = require("train_labels");
        Tensor label_tensor = data::read_idx(labels);
        if (names.empty()) {
            int64_t classes = label_tensor.numel() ? amax(label_tensor).item<int64_t>() + 1 : 0;
            for (int64_t c = 0; c < classes; ++c)
                names.push_back(std::to_string(c));
        }
        all_train = data::load_idx_dataset(images, labels, names);
        if (!o.get_string("test_images").empty())
            test = data::load_idx_dataset(require("test_images"), require("test_labels"), names);
    } else if (source == "csv") {
        data::CsvOptions csv;
        csv.header = o.get_bool("header");
        csv.target_column = o.get_string("target_column");
        if (csv.target_column.empty())
            throw Error("data source csv: option 'target_column' is required");
        csv.target_kind = o.get_string("task") == "regression" ? data::CsvTargetKind::Numeric
                                                               : data::CsvTargetKind::Categorical;
        csv.feature_columns = split_list(o.get_string("feature_columns"));
        all_train = data::read_csv(require("path"), csv);
        test_fraction = o.get_float("test_fraction");
    } else if (source == "npy") {
        std::string features_path = require("features"), targets_path = require("targets");
        Tensor x = data::read_npy(features_path), y = data::read_npy(targets_path);
        if (x.dim() < 1 || y.dim() != 1 || x.size(0) != y.size(0))
            throw Error("data source npy: features " + features_path + " " + x.sizes().str() +
                        " and targets " + targets_path + " " + y.sizes().str() +
                        " must have the same first dimension (targets 1-d)");
        std::vector<std::string> names;
        if (o.get_string("task") == "classification") {
            if (!is_integral(y.dtype(), false))
                throw Error("data source npy: classification needs integer targets in " +
                            targets_path + ", got " + dtype_name(y.dtype()));
            y = y.to(DType::Int64);
            int64_t classes = y.numel() ? amax(y).item<int64_t>() + 1 : 0;
            if (y.numel() && amin(y).item<int64_t>() < 0)
                throw Error("data source npy: negative class index in " + targets_path);
            for (int64_t c = 0; c < classes; ++c)
                names.push_back(std::to_string(c));
        } else {
            y = y.to(DType::Float32);
        }
        if (is_floating(x.dtype())) x = x.to(DType::Float32);
        all_train = std::make_shared<data::TensorDataset>(x, y, names);
        test_fraction = o.get_float("test_fraction");
    } else if (source == "image-folder") {
        data::ImageFolderOptions img;
        img.height = o.get_int("height");
        img.width = o.get_int("width");
        img.channels = o.get_string("color") == "grey" ? 1 : 3;
        all_train = data::read_image_folder(require("root"), img);
        test_fraction = o.get_float("test_fraction");
    } else {
        throw Error("data source '" + source + "' cannot be loaded");
    }
    if (all_train->size() == 0) throw Error("data source " + source + " has no examples");
    out.class_names = all_train->classes();

    if (!test)
        std::tie(all_train, test) = hold_out(all_train, test_fraction, seed ^ 0x7e57, "test");
    std::tie(out.train, out.validation) =
        hold_out(all_train, spec.validation_fraction, seed ^ 0x5a1d, "validation");
    out.test = test;

    // Transforms: deterministic ones apply everywhere; random augmentation only to training.
    ComposeOrSingle train_t, eval_t;
    data::Example first = out.train->get(0);
    for (size_t i = 0; i < spec.transforms.size(); ++i) {
        const spec::Choice& t = spec.transforms[i];
        const spec::ComponentKind* tk = find_component(spec::transform_kinds(), t.kind);
        if (!tk) throw Error("unknown transform '" + t.kind + "'");
        graph::Attrs a = graph::with_defaults(tk->options, t.options);
        if (t.kind == "ScaleTo01") {
            auto s = std::make_shared<data::ScaleTo01>();
            train_t.add(s);
            eval_t.add(s);
        } else if (t.kind == "Normalize") {
            auto mean = parse_numbers(a.get_string("mean"), "mean");
            auto std = parse_numbers(a.get_string("std"), "std");
            if (mean.empty() != std.empty())
                throw Error("Normalize: give both mean and std, or neither (computed)");
            if (mean.empty())
                std::tie(mean, std) = data::compute_mean_std(*out.train, eval_t.get());
            for (double s : std)
                if (!(s > 0)) throw Error("Normalize: std must be > 0 (a constant channel?)");
            auto n = std::make_shared<data::Normalize>(mean, std);
            train_t.add(n);
            eval_t.add(n);
        } else if (t.kind == "RandomHorizontalFlip") {
            train_t.add(std::make_shared<data::RandomHorizontalFlip>(a.get_float("p")));
        } else if (t.kind == "RandomCrop") {
            if (first.input.dim() < 2)
                throw Error("RandomCrop needs image examples [C, H, W], got " +
                            first.input.sizes().str());
            int64_t h = first.input.size(-2), w = first.input.size(-1);
            train_t.add(std::make_shared<data::RandomCrop>(h, w, a.get_int("padding")));
        } else if (t.kind == "RandomAffineShift") {
            train_t.add(std::make_shared<data::RandomAffineShift>(a.get_int("max_dx"),
                                                                  a.get_int("max_dy")));
        }
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
