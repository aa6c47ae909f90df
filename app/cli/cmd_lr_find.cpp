// `myelin lr-find PROJECT`: the learning-rate range test (train/lr_finder.h) on the project as it
// is, printed as a table of the curve and the suggested learning rates. Nothing is written.
#include <myelin/error.h>
#include <myelin/optim/optimizer.h>
#include <myelin/spec/components.h>
#include <myelin/store/run_store.h>
#include <myelin/train/lr_finder.h>

#include "cli_common.h"

#include <cstdio>

namespace myelin::cli {

namespace {

// The project's optimizer lr (its option, or the kind's default).
double project_lr(const io::Project& project) {
    const spec::OptimizerKind* kind =
        spec::find_component(spec::optimizer_kinds(), project.train.optimizer.kind);
    if (!kind) return 0;
    return graph::with_defaults(kind->options, project.train.optimizer.options).get_float("lr");
}

} // namespace

int cmd_lr_find(const Args& args) {
    const std::filesystem::path path = args.positional()[0];
    train::LrFindOptions options;
    options.steps = args.get_int("--steps", 2).value_or(options.steps);
    options.start_lr = args.get_positive("--start-lr").value_or(options.start_lr);
    options.end_lr = args.get_positive("--end-lr").value_or(options.end_lr);
    if (auto seed = args.get_int("--seed", 0)) options.seed = uint64_t(*seed);
    options.store_path = args.get("--store").value_or(store::default_store_path().string());
    options.project_path = std::filesystem::absolute(path).lexically_normal().string();
    try {
        const io::Project project = io::load_project(path);
        std::printf("learning-rate range test of %s: %lld steps from %.3g to %.3g\n",
                    path.string().c_str(), (long long)options.steps, options.start_lr,
                    options.end_lr);
        const train::LrFindResult r = train::find_learning_rate(
            project, path.parent_path().empty() ? "." : path.parent_path(), options);
        std::printf("\n%12s  %12s  %12s\n", "lr", "loss", "smoothed");
        const size_t every = std::max<size_t>(1, r.lrs.size() / 20);
        for (size_t i = 0; i < r.lrs.size(); ++i)
            if (i % every == 0 || i + 1 == r.lrs.size())
                std::printf("%12.4g  %12.5g  %12.5g\n", r.lrs[i], r.losses[i], r.smoothed[i]);
        std::printf("\n%s\n", r.note.c_str());
        if (r.steepest_lr > 0) {
            std::printf("suggested learning rate: %.3g (steepest descent of the loss)\n",
                        r.steepest_lr);
            std::printf("  or %.3g (a tenth of where the loss is lowest, %.3g)\n", r.min_over_10,
                        r.min_lr);
        }
        std::printf("the project's learning rate: %.3g (%s)\n", project_lr(project),
                    project.train.optimizer.kind.c_str());
        std::printf("recorded as run %lld in %s (tagged %s: `myelin runs list --all` shows it)\n",
                    (long long)r.run_id, options.store_path.string().c_str(), train::kLrFindTag);
        return r.steepest_lr > 0 ? kExitOk : kExitError;
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return kExitError;
    }
}

} // namespace myelin::cli
