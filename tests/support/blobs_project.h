#pragma once
// A small classification project written into a folder: three Gaussian blobs in 4-d as a CSV
// (class names a, b, c) and an MLP (fc1 4->16, ReLU, fc2 16->3) trained with cross-entropy.
// Trains in a fraction of a second, so tests of the CLI and the studio can run whole trainings.
#include <QByteArray>
#include <QFile>
#include <QString>

#include <cstdint>

namespace myelin::test {

// `optimizer` is the project's optimizer object. Returns the project file's path.
inline QString writeBlobsProject(const QString& dir, int epochs, int rows = 300,
                                 const QByteArray& optimizer = R"({"kind": "Adam", "lr": 0.01})") {
    QByteArray csv = "x0,x1,x2,x3,label\n";
    uint32_t state = 12345;
    auto noise = [&] {
        state = state * 1664525u + 1013904223u;
        return (double(state >> 8) / double(1u << 24) - 0.5) * 1.2;
    };
    for (int i = 0; i < rows; ++i) {
        const int c = i % 3;
        for (int d = 0; d < 4; ++d)
            csv += QByteArray::number((d == c ? 2.0 : 0.0) + noise()) + ",";
        csv += QByteArray(1, "abc"[c]) + "\n";
    }
    QByteArray project = R"({"format_version": 1, "name": "blobs",
      "model": {"nodes": [
        {"id": 1, "kind": "Input", "attrs": {"shape": [4]}},
        {"id": 2, "kind": "Linear", "name": "fc1", "attrs": {"in_features": 4, "out_features": 16}},
        {"id": 3, "kind": "ReLU"},
        {"id": 4, "kind": "Linear", "name": "fc2", "attrs": {"in_features": 16, "out_features": 3}},
        {"id": 5, "kind": "Output"}],
        "edges": [{"from": 1, "to": 2}, {"from": 2, "to": 3}, {"from": 3, "to": 4}, {"from": 4, "to": 5}]},
      "data": {"source": {"kind": "csv", "path": "blobs.csv", "target_column": "label"},
               "batch_size": 16, "num_workers": 0},
      "training": {"loss": {"kind": "CrossEntropyLoss"}, "optimizer": OPTIMIZER,
                   "epochs": EPOCHS, "seed": 3}})";
    project.replace("EPOCHS", QByteArray::number(epochs));
    project.replace("OPTIMIZER", optimizer);
    auto write = [](const QString& path, const QByteArray& data) {
        QFile f(path);
        return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
    };
    if (!write(dir + "/blobs.csv", csv) || !write(dir + "/blobs.myelin", project)) return {};
    return dir + "/blobs.myelin";
}

} // namespace myelin::test
