#pragma once
// A small convolutional project written into a folder: 240 noisy 1x8x8 images in three classes
// (horizontal stripes, vertical stripes, a centred diamond) as .npy arrays, and a CNN (conv
// 1->8 3x3, ReLU, 2x2 max pool, flatten, linear 128->3) with feature maps captured every
// `feature_maps_every` steps (0: off). 10 steps per epoch; trains in well under a second, so the
// core, CLI and studio tests of feature maps can run whole trainings.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace myelin::test {

// A .npy file of float32 or int64 values.
template <typename T>
bool writeNpy(const std::string& path, const std::vector<T>& values,
              const std::vector<int64_t>& shape) {
    std::string dims;
    for (int64_t d : shape)
        dims += std::to_string(d) + ", ";
    std::string header = std::string("{'descr': '") + (std::is_same_v<T, float> ? "<f4" : "<i8") +
                         "', 'fortran_order': False, 'shape': (" + dims + "), }";
    while ((10 + header.size() + 1) % 64 != 0)
        header += ' ';
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const uint16_t length = uint16_t(header.size());
    out.write(reinterpret_cast<const char*>(&length), 2);
    out << header;
    out.write(reinterpret_cast<const char*>(values.data()),
              std::streamsize(values.size() * sizeof(T)));
    return bool(out);
}

// The data alone: x.npy [240, 1, 8, 8] float32 and y.npy [240] int64 in `dir` (seeded, so every
// call writes the same values); false when a file could not be written.
inline bool writeStripesData(const std::string& dir) {
    const int n = 240;
    std::mt19937 rng(11);
    std::normal_distribution<float> noise(0.0f, 0.4f);
    std::vector<float> x;
    std::vector<int64_t> y;
    for (int i = 0; i < n; ++i) {
        const int c = i % 3;
        for (int h = 0; h < 8; ++h)
            for (int w = 0; w < 8; ++w) {
                const float v = c == 0   ? float(h % 2)
                                : c == 1 ? float(w % 2)
                                         : float(std::abs(h - 3.5f) + std::abs(w - 3.5f) < 3.0f);
                x.push_back(v + noise(rng));
            }
        y.push_back(c);
    }
    return writeNpy(dir + "/x.npy", x, {n, 1, 8, 8}) && writeNpy(dir + "/y.npy", y, {n});
}

// Returns the project file's path, or "" when a file could not be written.
inline std::string writeStripesProject(const std::string& dir, int epochs, int feature_maps_every) {
    if (!writeStripesData(dir)) return {};
    const std::string project = R"({"format_version": 1, "name": "stripes",
  "model": {"nodes": [
    {"id": 1, "kind": "Input", "attrs": {"shape": [1, 8, 8]}},
    {"id": 2, "kind": "Conv2d", "name": "conv",
     "attrs": {"in_channels": 1, "out_channels": 8, "kernel_size": 3, "padding": 1}},
    {"id": 3, "kind": "ReLU", "name": "act"},
    {"id": 4, "kind": "MaxPool2d", "name": "pool", "attrs": {"kernel_size": 2}},
    {"id": 5, "kind": "Flatten", "name": "flat"},
    {"id": 6, "kind": "Linear", "name": "fc", "attrs": {"in_features": 128, "out_features": 3}},
    {"id": 7, "kind": "Output"}],
    "edges": [{"from": 1, "to": 2}, {"from": 2, "to": 3}, {"from": 3, "to": 4},
              {"from": 4, "to": 5}, {"from": 5, "to": 6}, {"from": 6, "to": 7}]},
  "data": {"source": {"kind": "npy", "features": "x.npy", "targets": "y.npy",
                      "task": "classification", "test_fraction": 0.2},
           "validation_fraction": 0.2, "batch_size": 16, "num_workers": 0},
  "training": {"loss": {"kind": "CrossEntropyLoss"},
               "optimizer": {"kind": "SGD", "lr": 0.05, "momentum": 0.9},
               "epochs": )" + std::to_string(epochs) +
                                R"(, "seed": 2,
               "capture": {"feature_maps_every": )" +
                                std::to_string(feature_maps_every) + R"(}}})";
    std::ofstream out(dir + "/stripes.myelin");
    out << project;
    return out ? dir + "/stripes.myelin" : std::string();
}

} // namespace myelin::test
