#pragma once
// A small residual CNN with BatchNorm (fashion_resnet's shape at 8x8): conv 1->8, BatchNorm2d,
// ReLU, conv 8->8, BatchNorm2d, Add (the residual), ReLU, 2x2 max pool, flatten, linear 128->3,
// over `rows` noisy stripe images (test 20%, validation 20% of the rest). With rows 2000 the
// training split is 1280 examples: 10 batches of 128 (or 2 x 64) per epoch, no padding.
#include "stripes_project.h"

#include <QByteArray>
#include <QFile>
#include <QString>

#include <random>

namespace myelin::test {

inline QString writeBatchNormProject(const QString& dir, int rows, int batch, int epochs,
                                     const QByteArray& optimizer = R"({"kind": "SGD", "lr": 0.05,
                                        "momentum": 0.9})") {
    std::mt19937 rng(5);
    std::normal_distribution<float> noise(0.0f, 0.5f);
    std::vector<float> x;
    std::vector<int64_t> y;
    for (int i = 0; i < rows; ++i) {
        const int c = i % 3;
        for (int h = 0; h < 8; ++h)
            for (int w = 0; w < 8; ++w) {
                const float v = c == 0   ? float(h % 2)
                                : c == 1 ? float(w % 2)
                                         : float(std::abs(h - 3.5f) + std::abs(w - 3.5f) < 3.0f);
                x.push_back(3.0f * v + 1.5f + noise(rng)); // off-centre: BatchNorm has work
            }
        y.push_back(c);
    }
    const std::string d = dir.toStdString();
    if (!writeNpy(d + "/x.npy", x, {rows, 1, 8, 8}) || !writeNpy(d + "/y.npy", y, {rows}))
        return {};
    QByteArray project = R"({"format_version": 1, "name": "bn_resnet",
  "model": {"nodes": [
    {"id": 1, "kind": "Input", "attrs": {"shape": [1, 8, 8]}},
    {"id": 2, "kind": "Conv2d", "name": "conv1",
     "attrs": {"in_channels": 1, "out_channels": 8, "kernel_size": 3, "padding": 1}},
    {"id": 3, "kind": "BatchNorm2d", "name": "bn1", "attrs": {"num_features": 8}},
    {"id": 4, "kind": "ReLU", "name": "act1"},
    {"id": 5, "kind": "Conv2d", "name": "conv2",
     "attrs": {"in_channels": 8, "out_channels": 8, "kernel_size": 3, "padding": 1}},
    {"id": 6, "kind": "BatchNorm2d", "name": "bn2", "attrs": {"num_features": 8}},
    {"id": 7, "kind": "Add", "name": "add", "attrs": {"num_inputs": 2}},
    {"id": 8, "kind": "ReLU", "name": "act2"},
    {"id": 9, "kind": "MaxPool2d", "name": "pool", "attrs": {"kernel_size": 2}},
    {"id": 10, "kind": "Flatten", "name": "flat"},
    {"id": 11, "kind": "Linear", "name": "fc", "attrs": {"in_features": 128, "out_features": 3}},
    {"id": 12, "kind": "Output"}],
    "edges": [{"from": 1, "to": 2}, {"from": 2, "to": 3}, {"from": 3, "to": 4},
              {"from": 4, "to": 5}, {"from": 5, "to": 6}, {"from": 6, "to": 7},
              {"from": 4, "to": 7, "port": 1}, {"from": 7, "to": 8}, {"from": 8, "to": 9},
              {"from": 9, "to": 10}, {"from": 10, "to": 11}, {"from": 11, "to": 12}]},
  "data": {"source": {"kind": "npy", "features": "x.npy", "targets": "y.npy",
                      "task": "classification", "test_fraction": 0.2},
           "validation_fraction": 0.2, "batch_size": BATCH, "num_workers": 0},
  "training": {"loss": {"kind": "CrossEntropyLoss"}, "optimizer": OPTIMIZER,
               "epochs": EPOCHS, "seed": 4}})";
    project.replace("BATCH", QByteArray::number(batch));
    project.replace("EPOCHS", QByteArray::number(epochs));
    project.replace("OPTIMIZER", optimizer);
    QFile f(dir + "/bn.myelin");
    if (!f.open(QIODevice::WriteOnly) || f.write(project) != project.size()) return {};
    return dir + "/bn.myelin";
}

} // namespace myelin::test
