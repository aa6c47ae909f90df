#pragma once
// File readers: IDX (the MNIST family, plain or gzip), NumPy .npy and CSV. Every malformed or
// truncated input gives a myelin::Error naming the file and what was wrong.
#include <myelin/data/dataset.h>
#include <myelin/data/limits.h>
#include <myelin/tensor.h>

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace myelin::data {

// One IDX file (big-endian dims; element type 0x08 = uint8) as a uint8 tensor of its dims.
// gzip files are recognised by content, so "x.gz" and plain "x" both work.
Tensor read_idx(const std::string& path);

// Images [N, 1, H, W] (uint8, or float32 in [0, 1] when as_float) with int64 labels [N] and the
// given class names (labels must index them).
std::shared_ptr<TensorDataset> load_idx_dataset(const std::string& images_path,
                                                const std::string& labels_path,
                                                std::vector<std::string> class_names,
                                                bool as_float = false);

const std::vector<std::string>& fashion_mnist_classes();
// `dir` holds {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (Debian: dataset-fashion-mnist
// installs them in /usr/share/datasets/fashion-mnist).
std::shared_ptr<TensorDataset> load_fashion_mnist(const std::string& dir, bool train,
                                                  bool as_float = false);

// A .npy file (format versions 1, 2, 3): little-endian float32/float64/int64/uint8 in C order.
Tensor read_npy(const std::string& path);
// The same from a seekable stream (a file or a string stream: its size is checked against the
// header before the data is allocated); `source_name` names it in error messages.
Tensor read_npy(std::istream& in, const std::string& source_name);

// ---- CSV ------------------------------------------------------------------------------------

enum class CsvTargetKind {
    Numeric,     // regression: float32 targets [N]
    Categorical, // classification: int64 class indices [N] into the sorted distinct values
};

struct CsvOptions {
    bool header = true; // the first record names the columns; without it columns are "0", "1", ...
    char delimiter = ',';      // any character but '"', '\r' and '\n'
    std::string target_column; // empty: unlabelled (targets left undefined)
    CsvTargetKind target_kind = CsvTargetKind::Numeric;
    std::vector<std::string> feature_columns; // in this order; empty: every column but the target
};

// A CSV file held in memory: features float32 [N, F], targets float32 [N] (numeric) or int64 [N]
// (categorical; classes() are the distinct values in sorted byte order). Fields follow RFC 4180
// (quoted fields may hold delimiters, doubled quotes and line breaks; CRLF or LF line ends); a
// UTF-8 byte order mark and blank lines are skipped, spaces around numbers are ignored. Missing
// (empty) or non-numeric feature values, missing targets, unknown columns and ragged rows are
// myelin::Errors naming the file, the row (1-based line number where the record starts) and the
// column.
class CsvDataset : public Dataset {
  public:
    explicit CsvDataset(const std::string& path, const CsvOptions& options = {});
    // The CSV text from a stream; `source_name` names it in error messages.
    CsvDataset(std::istream& in, const std::string& source_name, const CsvOptions& options = {});
    int64_t size() const override { return size_; }
    Example get(int64_t index) const override;
    std::vector<std::string> classes() const override { return class_names_; }
    int64_t label(int64_t index) const override;
    std::vector<int64_t> class_counts() const override { return class_counts_; }
    const Tensor& features() const { return features_; }
    const Tensor& targets() const { return targets_; }
    const std::vector<std::string>& feature_names() const { return feature_names_; }
    const std::string& target_name() const { return target_name_; }

  private:
    void parse(const std::string& source_name, const std::string& text, const CsvOptions& options);

    Tensor features_, targets_;
    int64_t size_ = 0;
    std::vector<std::string> feature_names_;
    std::string target_name_;
    std::vector<std::string> class_names_;
    std::vector<int64_t> labels_; // categorical targets
    std::vector<int64_t> class_counts_;
};

std::shared_ptr<CsvDataset> read_csv(const std::string& path, const CsvOptions& options = {});

// The records of a CSV file as text fields, parsed as above (quotes, CRLF, byte order mark,
// blank lines skipped); for readers that want the fields as written (text columns).
struct CsvRecord {
    int64_t line = 0; // 1-based line number where the record starts
    std::vector<std::string> fields;
};
std::vector<CsvRecord> read_csv_records(const std::string& path, char delimiter = ',');
std::shared_ptr<CsvDataset> read_csv(std::istream& in, const std::string& source_name,
                                     const CsvOptions& options = {});

// ---- Image folders --------------------------------------------------------------------------

struct ImageFolderOptions {
    int64_t height = 0, width = 0;       // every image is resized (bilinear) to height x width; > 0
    int64_t channels = 3;                // 1 (grey) or 3 (RGB)
    bool as_float = false;               // float32 in [0, 1] instead of uint8
    int64_t max_files = kMaxFolderFiles; // more image files are refused (lower only in tests)
};

// torchvision's ImageFolder: `root/<class>/<image>` with class names = the sorted subfolder names.
// Files ending in .png, .jpg or .jpeg (any case) are listed once at construction (sorted by
// path); get() decodes one lazily (PNG via libpng, JPEG via libjpeg, recognised by content) and
// returns input [C, H, W] and an int64 class-index target. get() is thread-safe. The listing
// refuses more than max_files image files (stopping there) and empty (0-byte) image files,
// naming the first few; a corrupt or unsupported file gives a myelin::Error naming it when read.
class ImageFolderDataset : public Dataset {
  public:
    ImageFolderDataset(const std::string& root, const ImageFolderOptions& options);
    int64_t size() const override { return static_cast<int64_t>(files_.size()); }
    Example get(int64_t index) const override;
    std::vector<std::string> classes() const override { return class_names_; }
    int64_t label(int64_t index) const override;
    const std::vector<std::string>& files() const { return files_; }

  private:
    ImageFolderOptions options_;
    std::vector<std::string> class_names_;
    std::vector<std::string> files_;
    std::vector<int64_t> labels_;
};

std::shared_ptr<ImageFolderDataset> read_image_folder(const std::string& root,
                                                      const ImageFolderOptions& options);

// One PNG or JPEG file decoded to uint8 [C, H, W] at its own size (C = 1 or 3).
Tensor read_image(const std::string& path, int64_t channels = 3);

} // namespace myelin::data
