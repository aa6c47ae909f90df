// Capture overhead: the trainer on resources/examples/fashion_cnn.myelin for a fixed number of
// optimizer steps, with the project's default capture settings (per-layer norms and update
// ratios every step, summaries every 100 steps, feature maps every 500) and with capture off.
// Prints one JSON line: steps/s of both and the overhead in percent (goal <= 5%).
//
//   myelin_bench_capture [--steps N] [--threads N] [--source-dir DIR]
#include <myelin/io/project.h>
#include <myelin/train/trainer.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

using namespace myelin;

namespace {

double seconds_per_step(const io::Project& project, const std::string& dir, int64_t steps,
                        int threads) {
    train::TrainerOptions o;
    o.project_dir = dir;
    o.max_steps = steps;
    o.threads = threads;
    train::Trainer trainer(project, o);
    // Time from the end of the 5th step (warm caches, allocator) to the last one.
    std::chrono::steady_clock::time_point start;
    int64_t timed = 0;
    train::CallbackSink sink([&](const train::Event& e) {
        if (auto* m = e.get<train::StepMetrics>()) {
            if (m->step == 5) start = std::chrono::steady_clock::now();
            if (m->step > 5) ++timed;
        }
    });
    trainer.set_sink(&sink);
    trainer.run();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return s / double(timed);
}

} // namespace

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
    // Alternate to spread machine noise over both.
    double with = 0, without = 0;
    for (int round = 0; round < 2; ++round) {
        without += seconds_per_step(off, dir, steps, threads);
        with += seconds_per_step(project, dir, steps, threads);
    }
    std::printf(
        "{\"workload\": \"capture_overhead_cnn\", \"myelin\": %.2f, \"unit\": \"%%\", "
        "\"ms_per_step_capture\": %.2f, \"ms_per_step_no_capture\": %.2f, \"steps\": %lld}\n",
        100.0 * (with - without) / without, 500.0 * with, 500.0 * without,
        static_cast<long long>(steps));
    return 0;
}
