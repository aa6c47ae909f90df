// bfloat16 autocast vs float32: the trainer on resources/examples/fashion_cnn.myelin for a fixed
// number of optimizer steps with training.precision "float32" and "bfloat16" (capture off: this
// times the arithmetic). Alternating rounds, median. With --accuracy-epochs N it also trains
// each precision for N epochs and reports the test accuracy. Prints one JSON line.
//
//   myelin_bench_amp [--steps N] [--rounds N] [--threads N] [--accuracy-epochs N]
//                    [--source-dir DIR]
#include "trainer_timing.h"

#include <myelin/io/project.h>
#include <myelin/train/trainer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace myelin;
using myelin::bench::seconds_per_step;

namespace {

double test_accuracy(const io::Project& project, const std::string& dir, int64_t epochs,
                     int threads) {
    train::TrainerOptions o;
    o.project_dir = dir;
    o.epochs = epochs;
    o.threads = threads;
    train::Trainer trainer(project, o);
    const train::TrainResult r = trainer.run();
    auto it = r.test.find("accuracy");
    return it == r.test.end() ? -1.0 : it->second;
}

} // namespace

int main(int argc, char** argv) {
    int64_t steps = 60, accuracy_epochs = 0;
    int threads = 0, rounds = 5;
    std::string source = MYELIN_SOURCE_DIR;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--accuracy-epochs")) accuracy_epochs = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--source-dir")) source = argv[i + 1];
    }
    const std::string dir = source + "/resources/examples";
    io::Project f32 = io::load_project(dir + "/fashion_cnn.myelin");
    f32.train.precision = myelin::spec::Precision::Float32;
    f32.train.capture.layer_norms = false;
    f32.train.capture.summaries_every = 0;
    f32.train.capture.feature_maps_every = 0;
    io::Project bf16 = f32;
    bf16.train.precision = myelin::spec::Precision::BFloat16;
    // Alternate, and take the median round: a 2-vCPU VM's neighbours swing single rounds by
    // +-15%.
    std::vector<double> t32, t16, speedups;
    for (int round = 0; round < rounds; ++round) {
        t32.push_back(seconds_per_step(f32, dir, steps, threads));
        t16.push_back(seconds_per_step(bf16, dir, steps, threads));
        speedups.push_back(t32.back() / t16.back());
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    std::printf("{\"workload\": \"amp_bf16_cnn_step\", \"myelin\": %.3f, \"unit\": \"x speedup\", "
                "\"min\": %.3f, \"max\": %.3f, \"ms_per_step_float32\": %.2f, "
                "\"ms_per_step_bfloat16\": %.2f, \"batch\": %lld, \"steps\": %lld, \"rounds\": %d",
                median(speedups), *std::min_element(speedups.begin(), speedups.end()),
                *std::max_element(speedups.begin(), speedups.end()), 1000.0 * median(t32),
                1000.0 * median(t16), static_cast<long long>(f32.data.batch_size),
                static_cast<long long>(steps), rounds);
    if (accuracy_epochs > 0)
        std::printf(", \"epochs\": %lld, \"test_accuracy_float32\": %.4f, "
                    "\"test_accuracy_bfloat16\": %.4f",
                    static_cast<long long>(accuracy_epochs),
                    test_accuracy(f32, dir, accuracy_epochs, threads),
                    test_accuracy(bf16, dir, accuracy_epochs, threads));
    std::printf("}\n");
    return 0;
}
