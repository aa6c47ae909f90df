// The built-in data sources (Fashion-MNIST, IDX, CSV, NPY, image folders) and transforms: their
// options and how each is loaded or built.
#include "builtin_kinds.h"

#include <myelin/data/limits.h>
#include <myelin/data/readers.h>
#include <myelin/error.h>
#include <myelin/tensor.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace myelin::spec::builtin {

using graph::AttrDesc;
using graph::Attrs;
using namespace graph::attr;

namespace {

// The training part of Fashion-MNIST (train-images-idx3-ubyte).
constexpr int64_t kFashionMnistTrainImages = 60000;

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

std::vector<std::string> numbered_classes(int64_t count) {
    std::vector<std::string> names;
    for (int64_t c = 0; c < count; ++c)
        names.push_back(std::to_string(c));
    return names;
}

AttrDesc task(std::string doc) {
    return choice("task", "classification", {"classification", "regression"}, std::move(doc));
}
AttrDesc test_fraction(std::string doc) {
    return number("test_fraction", 0.2, std::move(doc), 0.0, 1.0);
}

SourceData load_fashion_mnist(const Attrs& o, const SourceContext& context) {
    std::string dir = context.path(o, "directory");
    try {
        return {data::load_fashion_mnist(dir, true), data::load_fashion_mnist(dir, false), 0};
    } catch (const Error& e) {
        throw Error(std::string(e.what()) +
                    " (Fashion-MNIST comes with the Debian package dataset-fashion-mnist)");
    }
}

SourceData load_idx(const Attrs& o, const SourceContext& context) {
    auto names = split_list(o.get_string("class_names"));
    std::string images = context.required_path(o, "train_images");
    std::string labels = context.required_path(o, "train_labels");
    if (names.empty()) {
        Tensor label_tensor = data::read_idx(labels);
        names = numbered_classes(label_tensor.numel() ? amax(label_tensor).item<int64_t>() + 1 : 0);
    }
    SourceData out;
    out.train = data::load_idx_dataset(images, labels, names);
    if (!o.get_string("test_images").empty())
        out.test = data::load_idx_dataset(context.required_path(o, "test_images"),
                                          context.required_path(o, "test_labels"), names);
    return out;
}

SourceData load_csv(const Attrs& o, const SourceContext& context) {
    data::CsvOptions csv;
    csv.header = o.get_bool("header");
    csv.target_column = o.get_string("target_column");
    if (csv.target_column.empty())
        throw Error("data source csv: option 'target_column' is required");
    csv.target_kind = o.get_string("task") == "regression" ? data::CsvTargetKind::Numeric
                                                           : data::CsvTargetKind::Categorical;
    csv.feature_columns = split_list(o.get_string("feature_columns"));
    return {data::read_csv(context.required_path(o, "path"), csv), nullptr,
            o.get_float("test_fraction")};
}

SourceData load_npy(const Attrs& o, const SourceContext& context) {
    std::string features_path = context.required_path(o, "features");
    std::string targets_path = context.required_path(o, "targets");
    Tensor x = data::read_npy(features_path), y = data::read_npy(targets_path);
    if (x.dim() < 1 || y.dim() != 1 || x.size(0) != y.size(0))
        throw Error("data source npy: features " + features_path + " " + x.sizes().str() +
                    " and targets " + targets_path + " " + y.sizes().str() +
                    " must have the same first dimension (targets 1-d)");
    std::vector<std::string> names;
    if (o.get_string("task") == "classification") {
        if (!is_integral(y.dtype(), false))
            throw Error("data source npy: classification needs integer targets in " + targets_path +
                        ", got " + dtype_name(y.dtype()));
        y = y.to(DType::Int64);
        if (y.numel() && amin(y).item<int64_t>() < 0)
            throw Error("data source npy: negative class index in " + targets_path);
        names = numbered_classes(y.numel() ? amax(y).item<int64_t>() + 1 : 0);
    } else {
        y = y.to(DType::Float32);
    }
    if (is_floating(x.dtype())) x = x.to(DType::Float32);
    return {std::make_shared<data::TensorDataset>(x, y, names), nullptr,
            o.get_float("test_fraction")};
}

// An image folder decodes its images a batch at a time: what it holds is the list of files, a
// path and a label each (measured: 1 million files listed in 129 MB). Counting stops past the
// reader's limit, which refuses the folder anyway.
int64_t image_folder_listing_bytes(const std::filesystem::path& root) {
    constexpr int64_t kBytesPerListedFile = 128;
    int64_t files = 0;
    std::error_code error;
    for (std::filesystem::recursive_directory_iterator it(root, error), end;
         !error && it != end && files <= data::kMaxFolderFiles; it.increment(error)) {
        std::error_code entry_error;
        files += it->is_regular_file(entry_error) ? 1 : 0;
    }
    return files * kBytesPerListedFile;
}

SourceData load_image_folder(const Attrs& o, const SourceContext& context) {
    data::ImageFolderOptions img;
    img.height = o.get_int("height");
    img.width = o.get_int("width");
    img.channels = o.get_string("color") == "grey" ? 1 : 3;
    return {data::read_image_folder(context.required_path(o, "root"), img), nullptr,
            o.get_float("test_fraction")};
}

} // namespace

std::vector<DataSourceKind> data_sources() {
    std::vector<DataSourceKind> kinds;
    kinds.push_back(
        kind<DataSourceKind>("fashion-mnist",
                             "Fashion-MNIST from the Debian package dataset-fashion-mnist (70,000 "
                             "28x28 grey images, 10 classes).",
                             {folder("directory", "/usr/share/datasets/fashion-mnist",
                                     "Folder holding the four IDX files.")},
                             load_fashion_mnist));
    kinds.back().fixed_training_examples = kFashionMnistTrainImages;
    kinds.back().fixed_training_examples_label = "Fashion-MNIST training images";
    // 70,000 uint8 images of 28x28 and their labels, held in memory as read.
    kinds.back().memory_bytes = [](const Attrs&, const SourceContext&) {
        return int64_t(70000) * (28 * 28 + 1);
    };
    kinds.push_back(
        kind<DataSourceKind>("idx", "MNIST-style IDX files (plain or .gz): images and labels.",
                             {file("train_images", "Training images (IDX, uint8)."),
                              file("train_labels", "Training labels (IDX, uint8)."),
                              file("test_images", "Test images (optional)."),
                              file("test_labels", "Test labels (optional)."),
                              text("class_names", "", "Comma-separated class names (optional).")},
                             load_idx));
    kinds.push_back(kind<DataSourceKind>(
        "csv", "A table: feature columns and one target column.",
        {file("path", "The CSV file."), text("target_column", "", "Column to predict."),
         text("feature_columns", "", "Comma-separated feature columns (empty: all others)."),
         task("Categorical target (class indices) or numeric target."),
         flag("header", true, "The first row names the columns."),
         test_fraction("Rows held out for the final test.")},
        load_csv));
    kinds.push_back(kind<DataSourceKind>("npy", "NumPy arrays: features [N, ...] and targets [N].",
                                         {file("features", "Features .npy file."),
                                          file("targets", "Targets .npy file."),
                                          task("int64 class targets or float targets."),
                                          test_fraction("Rows held out for the final test.")},
                                         load_npy));
    kinds.push_back(kind<DataSourceKind>(
        "image-folder", "One subfolder per class with PNG/JPEG images.",
        {folder("root", "", "The folder."), integer("height", 32, "Resize height.", 1),
         integer("width", 32, "Resize width.", 1),
         choice("color", "rgb", {"rgb", "grey"}, "Channels."),
         test_fraction("Images held out for the final test.")},
        load_image_folder));
    kinds.back().memory_bytes = [](const Attrs& o, const SourceContext& context) {
        return image_folder_listing_bytes(context.required_path(o, "root"));
    };
    for (auto& k : text_data_sources())
        kinds.push_back(std::move(k));
    return kinds;
}

namespace {

BuiltTransform build_normalize(const Attrs& a, const TransformContext& context) {
    auto mean = parse_numbers(a.get_string("mean"), "mean");
    auto std = parse_numbers(a.get_string("std"), "std");
    if (mean.empty() != std.empty())
        throw Error("Normalize: give both mean and std, or neither (computed)");
    if (mean.empty())
        std::tie(mean, std) = data::compute_mean_std(context.train, context.deterministic_before);
    for (double s : std)
        if (!(s > 0)) throw Error("Normalize: std must be > 0 (a constant channel?)");
    return {std::make_shared<data::Normalize>(mean, std), false};
}

BuiltTransform build_random_crop(const Attrs& a, const TransformContext& context) {
    const Tensor& input = context.first.input;
    if (input.dim() < 2)
        throw Error("RandomCrop needs image examples [C, H, W], got " + input.sizes().str());
    return {
        std::make_shared<data::RandomCrop>(input.size(-2), input.size(-1), a.get_int("padding")),
        true};
}

} // namespace

std::vector<TransformKind> transforms() {
    std::vector<TransformKind> kinds;
    kinds.push_back(
        kind<TransformKind>("ScaleTo01", "uint8 [0, 255] to float [0, 1].", {},
                            [](const Attrs&, const TransformContext&) {
                                return BuiltTransform{std::make_shared<data::ScaleTo01>(), false};
                            }));
    kinds.push_back(kind<TransformKind>(
        "Normalize", "(x - mean) / std per channel; empty: computed from the training set.",
        {text("mean", "", "Comma-separated per-channel means (empty: computed)."),
         text("std", "", "Comma-separated per-channel stds (empty: computed).")},
        build_normalize));
    kinds.push_back(kind<TransformKind>(
        "RandomHorizontalFlip", "Mirrors images left-right with probability p.",
        {number("p", 0.5, "Probability of flipping.", 0.0, 1.0)},
        [](const Attrs& a, const TransformContext&) {
            return BuiltTransform{std::make_shared<data::RandomHorizontalFlip>(a.get_float("p")),
                                  true};
        }));
    kinds.push_back(kind<TransformKind>(
        "RandomCrop", "Pads then crops a random window of the original size.",
        {integer("padding", 4, "Zero padding on each side.", 0.0)}, build_random_crop));
    kinds.push_back(
        kind<TransformKind>("RandomAffineShift", "Shifts images by up to max_dx / max_dy pixels.",
                            {integer("max_dx", 2, "Largest horizontal shift.", 0.0),
                             integer("max_dy", 2, "Largest vertical shift.", 0.0)},
                            [](const Attrs& a, const TransformContext&) {
                                return BuiltTransform{std::make_shared<data::RandomAffineShift>(
                                                          a.get_int("max_dx"), a.get_int("max_dy")),
                                                      true};
                            }));
    return kinds;
}

} // namespace myelin::spec::builtin
