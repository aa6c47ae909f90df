#pragma once
// Seconds per optimizer step of a project's training, as the trainer reports its steps: timed
// from the end of the 5th step (warm primitive caches and allocator) to the last of `steps`.
// Shared by the capture-overhead and mixed-precision benchmarks.
#include <myelin/io/project.h>
#include <myelin/train/trainer.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace myelin::bench {

inline double seconds_per_step(const io::Project& project, const std::string& dir, int64_t steps,
                               int threads) {
    train::TrainerOptions o;
    o.project_dir = dir;
    o.max_steps = steps;
    o.threads = threads;
    train::Trainer trainer(project, o);
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
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return s / double(timed);
}

} // namespace myelin::bench
