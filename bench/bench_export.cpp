// Export costs: ONNX (build + checker + shape inference + serialise), PyTorch code and
// self-describing safetensors (+ model card) for the example models with fresh weights, and the
// written sizes. Prints numbers, asserts nothing.
#include <myelin/export/export.h>
#include <myelin/generator.h>
#include <myelin/graph/build.h>
#include <myelin/io/project.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

using namespace myelin;

namespace {

// Median of `runs` timings of `fn`, in milliseconds.
double median_ms(int runs, const std::function<void()>& fn) {
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        const auto start = std::chrono::steady_clock::now();
        fn();
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

} // namespace

int main() {
    const std::filesystem::path out =
        std::filesystem::temp_directory_path() / "myelin_bench_export";
    std::filesystem::create_directories(out);
    std::printf("%-16s %10s %10s %10s %12s %12s\n", "model", "onnx ms", "py ms", "st ms",
                "onnx bytes", "params");
    for (const char* name : {"fashion_mlp", "fashion_cnn", "fashion_resnet"}) {
        exporters::ExportSource source;
        source.project = io::load_project(std::string(MYELIN_SOURCE_DIR) + "/resources/examples/" +
                                          name + ".myelin");
        default_generator().manual_seed(1);
        auto model = graph::build(source.project.model);
        source.weights = model->state_dict();
        const double onnx = median_ms(5, [&] { exporters::export_onnx(source, out / "m.onnx"); });
        const double py = median_ms(5, [&] { exporters::export_pytorch(source, out / "m.py"); });
        const double st =
            median_ms(5, [&] { exporters::export_safetensors(source, out / "m.safetensors"); });
        std::printf("%-16s %10.1f %10.1f %10.1f %12lld %12lld\n", name, onnx, py, st,
                    (long long)std::filesystem::file_size(out / "m.onnx"),
                    (long long)model->num_parameters());
    }
    std::filesystem::remove_all(out);
    return 0;
}
