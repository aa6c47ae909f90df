// Capture overhead: the trainer on resources/examples/fashion_cnn.myelin for a fixed number of
// optimizer steps, with the project's default capture settings (per-layer norms and update
// ratios every step, summaries every 100 steps, feature maps every 500) and with capture off.
// Prints one JSON line: the median overhead in percent over alternating rounds (goal <= 5%),
// its range, and the median time per step of both.
//
//   myelin_bench_capture [--steps N] [--threads N] [--source-dir DIR]
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

int main(int argc, char** argv) {
    int64_t steps = 60;
    int threads = 0;
    std::string source = MYELIN_SOURCE_DIR;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--source-dir")) source = argv[i + 1];
    }
    const std::string dir = source + "/resources/examples";
    io::Project project = io::load_project(dir + "/fashion_cnn.myelin");
    project.data.validation_fraction = 0.1;
    io::Project off = project;
    off.train.capture.layer_norms = false;
    off.train.capture.summaries_every = 0;
    off.train.capture.feature_maps_every = 0;
    // Alternate, and take the median round: a 2-vCPU VM's neighbours swing single rounds by
    // +-15%, more than the overhead being measured.
    constexpr int kRounds = 5;
    std::vector<double> overheads, with, without;
    for (int round = 0; round < kRounds; ++round) {
        without.push_back(seconds_per_step(off, dir, steps, threads));
        with.push_back(seconds_per_step(project, dir, steps, threads));
        overheads.push_back(100.0 * (with.back() - without.back()) / without.back());
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    std::printf("{\"workload\": \"capture_overhead_cnn\", \"myelin\": %.2f, \"unit\": \"%%\", "
                "\"min\": %.2f, \"max\": %.2f, \"ms_per_step_capture\": %.2f, "
                "\"ms_per_step_no_capture\": %.2f, \"steps\": %lld, \"rounds\": %d}\n",
                median(overheads), *std::min_element(overheads.begin(), overheads.end()),
                *std::max_element(overheads.begin(), overheads.end()), 1000.0 * median(with),
                1000.0 * median(without), static_cast<long long>(steps), kRounds);
    return 0;
}
