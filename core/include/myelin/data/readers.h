#pragma once
// File readers: IDX (the MNIST family, plain or gzip), NumPy .npy and CSV. Every malformed or
// truncated input gives a myelin::Error naming the file and what was wrong.
#include <myelin/data/dataset.h>
#include <myelin/tensor.h>

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

} // namespace myelin::data
