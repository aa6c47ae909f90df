#pragma once
// The learning-rate range test (Smith 2015, "Cyclical Learning Rates"; fastai's lr_find): a
// short run on a fresh copy of the project's model whose learning rate grows exponentially from
// `start_lr` to `end_lr`, stopped when the (smoothed) loss diverges. The curve of smoothed loss
// against learning rate suggests a learning rate: where the loss falls fastest (the steepest
// descent on a log-lr axis), or a tenth of where it is lowest. The project, its files and any
// store are untouched; the run trains on the project's device with its precision, loss,
// optimizer (its state starts fresh), data and transforms, without its schedule.
#include <myelin/io/project.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace myelin::train {

struct LrFindOptions {
    double start_lr = 1e-7;
    double end_lr = 10.0;
    int64_t steps = 100; // at most; fewer when the loss diverges first
    // The smoothed loss is an exponential moving average with this factor, bias-corrected.
    double smoothing = 0.98;
    // Diverged: the smoothed loss above this many times its lowest (or not finite).
    double divergence = 4.0;
    uint64_t seed = 0; // 0: the project's
    // After every step: steps done, the step's learning rate and loss. May be empty.
    std::function<void(int64_t step, double lr, double loss)> progress;
    // Polled after every step: true stops the test (the result holds what was measured).
    std::function<bool()> cancelled;
    // Where to record the test as a run of its own (its steps' loss and lr), tagged
    // kLrFindTag so run lists leave it out unless asked; empty: not recorded.
    std::filesystem::path store_path;
    std::string run_name;     // default: "<project name> (LR range test)"
    std::string project_path; // recorded with the run
};

// The tag of range-test runs in the store.
inline constexpr const char* kLrFindTag = "lr-find";

struct LrFindResult {
    std::vector<double> lrs;      // the learning rate of each step
    std::vector<double> losses;   // its training loss
    std::vector<double> smoothed; // the bias-corrected moving average up to it
    bool diverged = false;        // stopped by the divergence rule (else: all steps ran)
    // The suggestions; 0 when the curve is too short to say (fewer than 10 points).
    double steepest_lr = 0; // where the smoothed loss falls fastest per decade of lr
    double min_lr = 0;      // where the smoothed loss is lowest
    double min_over_10 = 0; // min_lr / 10
    std::string note;       // why it stopped or why there is no suggestion
    int64_t run_id = 0;     // the store's run when recorded
};

// Throws myelin::Error when the project cannot be trained (the messages of a run's setup) or the
// options make no sense (a range that does not grow, fewer than 2 steps).
LrFindResult find_learning_rate(const io::Project& project,
                                const std::filesystem::path& project_dir,
                                const LrFindOptions& options = {});

// The suggestions from a measured curve (what find_learning_rate fills in), on their own for
// tests and for a curve read back from elsewhere. As fastai's lr_find: points after the
// divergence, the first tenth of the points and the last five are left out; the steepest
// descent is the most negative forward difference of the smoothed loss over log10(lr) (at the
// lower lr of the pair), the minimum the lowest smoothed loss.
void suggest_learning_rates(LrFindResult& result);

} // namespace myelin::train
