// The learning-rate range test (train/lr_finder.h): a Trainer on a copy of the project without
// its schedule, early stopping or captures, whose callback sets each step's learning rate and
// reads its loss, and stops it when the smoothed loss diverges.
#include <myelin/train/lr_finder.h>

#include <myelin/error.h>
#include <myelin/store/run_store.h>
#include <myelin/train/callbacks.h>
#include <myelin/train/store_sink.h>
#include <myelin/train/trainer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>

namespace myelin::train {

namespace {

class RangeTest final : public TrainerCallback {
  public:
    RangeTest(const LrFindOptions& options, LrFindResult& result)
        : options_(options), result_(result) {}

    void on_run_start(Trainer& trainer) override {
        // Parameter groups keep their ratios to the first group's lr (per-layer multipliers).
        const auto& groups = trainer.optimizer().param_groups();
        const double first = groups.empty() ? 1.0 : groups.front().options.at("lr");
        for (const auto& g : groups)
            ratios_.push_back(first > 0 ? g.options.at("lr") / first : 1.0);
    }

    void before_step(Trainer& trainer) override {
        lr_ = lr_at(trainer.step());
        auto& groups = trainer.optimizer().param_groups();
        for (size_t g = 0; g < groups.size(); ++g)
            groups[g].options["lr"] = lr_ * (g < ratios_.size() ? ratios_[g] : 1.0);
    }

    void after_optimizer_step(Trainer& trainer, StepMetrics& metrics) override {
        const double loss = metrics.loss;
        average_ = options_.smoothing * average_ + (1 - options_.smoothing) * loss;
        const double corrected =
            average_ / (1 - std::pow(options_.smoothing, double(result_.lrs.size() + 1)));
        result_.lrs.push_back(lr_);
        result_.losses.push_back(loss);
        result_.smoothed.push_back(corrected);
        best_ = std::min(best_, corrected);
        if (options_.progress) options_.progress(int64_t(result_.lrs.size()), lr_, loss);
        if (!std::isfinite(corrected) || corrected > options_.divergence * best_) {
            result_.diverged = true;
            result_.note = "the loss diverged at learning rate " + format(lr_);
            trainer.stop();
        } else if (options_.cancelled && options_.cancelled()) {
            result_.note = "cancelled after " + std::to_string(result_.lrs.size()) + " steps";
            trainer.stop();
        }
    }

    double last_lr() const { return lr_; }

    static std::string format(double value) {
        char text[32];
        std::snprintf(text, sizeof text, "%.3g", value);
        return text;
    }

  private:
    double lr_at(int64_t step) const {
        const double t = options_.steps > 1 ? double(step) / double(options_.steps - 1) : 0.0;
        return options_.start_lr * std::pow(options_.end_lr / options_.start_lr, t);
    }

    const LrFindOptions& options_;
    LrFindResult& result_;
    std::vector<double> ratios_;
    double lr_ = 0;
    double average_ = 0;
    double best_ = std::numeric_limits<double>::infinity();
};

} // namespace

void suggest_learning_rates(LrFindResult& r) {
    r.steepest_lr = r.min_lr = r.min_over_10 = 0;
    // The points before the divergence (the smoothed loss above 4x its lowest so far is past it).
    size_t n = 0;
    double best = std::numeric_limits<double>::infinity();
    for (; n < r.smoothed.size(); ++n) {
        if (!std::isfinite(r.smoothed[n]) || r.smoothed[n] > 4 * best) break;
        best = std::min(best, r.smoothed[n]);
    }
    if (n < 10) {
        if (r.note.empty() || !r.diverged)
            r.note = "too few steps before the loss diverged to suggest a learning rate (" +
                     std::to_string(n) + "); start from a lower start_lr";
        return;
    }
    // As fastai's lr_find (its `steep` and `minimum` suggestions): the first tenth of the points
    // (the loss barely moves there) and the last five (the divergence under way) are left out.
    const size_t first = std::min(r.lrs.size() / 10, n / 2); // n / 2: a curve cut short early
    const size_t end = std::max(first + 2, n - std::min<size_t>(n, r.diverged ? 4 : 5));
    const size_t last = std::min(end, n);
    const size_t lowest =
        size_t(std::min_element(r.smoothed.begin() + long(first), r.smoothed.begin() + long(last)) -
               r.smoothed.begin());
    r.min_lr = r.lrs[lowest];
    r.min_over_10 = r.min_lr / 10;
    // The most negative forward difference of the smoothed loss over log10(lr), at its left point.
    double steepest = 0;
    for (size_t i = first; i + 1 < last; ++i) {
        const double run = std::log10(r.lrs[i + 1]) - std::log10(r.lrs[i]);
        if (!(run > 0)) continue;
        const double slope = (r.smoothed[i + 1] - r.smoothed[i]) / run;
        if (slope < steepest) {
            steepest = slope;
            r.steepest_lr = r.lrs[i];
        }
    }
}

LrFindResult find_learning_rate(const io::Project& project,
                                const std::filesystem::path& project_dir,
                                const LrFindOptions& options) {
    if (!(options.start_lr > 0) || !(options.end_lr > options.start_lr) ||
        !std::isfinite(options.end_lr))
        throw Error("the learning-rate range must grow from a start above 0: got " +
                    RangeTest::format(options.start_lr) + " to " +
                    RangeTest::format(options.end_lr));
    if (options.steps < 2)
        throw Error("the range test needs at least 2 steps, got " + std::to_string(options.steps));
    if (!(options.smoothing >= 0 && options.smoothing < 1) || !(options.divergence > 1))
        throw Error("smoothing must be in [0, 1) and divergence above 1");
    // A copy of the project with nothing but the learning rate steering it.
    io::Project copy = project;
    copy.train.scheduler.reset();
    copy.train.early_stopping.enabled = false;
    copy.train.validate_every_steps = 0;
    copy.train.capture.layer_norms = false;
    copy.train.capture.summaries_every = 0;
    copy.train.capture.feature_maps_every = 0;
    TrainerOptions trainer_options;
    trainer_options.project_dir = project_dir;
    trainer_options.device = training_device(copy);
    trainer_options.max_steps = options.steps;
    trainer_options.epochs = 1'000'000; // max_steps ends it
    if (options.seed != 0) trainer_options.seed = options.seed;
    // Recorded: a run of its own, created before the Trainer so a failed setup is recorded too.
    std::optional<store::RunStore> store;
    int64_t run_id = 0;
    if (!options.store_path.empty()) {
        store.emplace(store::RunStore::open(options.store_path));
        store::RunInfo info = run_info(copy, trainer_options);
        info.name = !options.run_name.empty()
                        ? options.run_name
                        : (project.name.empty() ? "project" : project.name) + " (LR range test)";
        info.project_path = options.project_path;
        run_id = store->create_run(info);
        store->set_run_tags(run_id, {kLrFindTag});
        store->set_run_note(run_id, "learning-rate range test from " +
                                        RangeTest::format(options.start_lr) + " to " +
                                        RangeTest::format(options.end_lr));
    }
    std::optional<Trainer> built;
    try {
        built.emplace(copy, trainer_options);
    } catch (const Error& e) {
        if (store) store->finish_run(run_id, store::RunStatus::Failed, e.what());
        throw;
    }
    Trainer& trainer = *built;
    std::optional<StoreSink> sink;
    if (store) {
        sink.emplace(*store, run_id);
        trainer.set_sink(&*sink);
    }
    LrFindResult result;
    result.run_id = run_id;
    auto test = std::make_shared<RangeTest>(options, result);
    trainer.add_callback(test);
    const TrainResult run = trainer.run();
    if (store) store->flush();
    if (run.status == RunStatus::Failed) {
        // A non-finite loss stops the run before the step ends: the divergence, at this lr.
        if (result.lrs.empty() && test->last_lr() <= options.start_lr)
            throw Error("the range test could not train: " + run.error);
        result.diverged = true;
        result.note = "the loss became non-finite at learning rate " +
                      RangeTest::format(test->last_lr()) + " (" + run.error + ")";
    } else if (result.note.empty()) {
        const auto lowest = std::min_element(result.smoothed.begin(), result.smoothed.end());
        result.note =
            lowest + 1 == result.smoothed.end()
                ? "the loss still fell at the last step: a better learning rate may lie beyond "
                  "end_lr"
                : "the loss was lowest at learning rate " +
                      RangeTest::format(result.lrs[size_t(lowest - result.smoothed.begin())]) +
                      " and rose after it (not 4x: no divergence)";
    }
    suggest_learning_rates(result);
    return result;
}

} // namespace myelin::train
