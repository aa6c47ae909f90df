// Evaluation speed on Fashion-MNIST's 10,000 test images with resources/examples/fashion_cnn:
// train::evaluate_examples (what `myelin eval` and the studio's Evaluation view run: metrics
// plus every example's outputs, probabilities, loss and the confusion cells) against the
// inference the CLI ran before it, Trainer::evaluate (metrics only), and Trainer::evaluate +
// Trainer::predict (the old `myelin eval --predictions`: two passes). Alternating rounds,
// median. Prints one JSON line.
//
//   myelin_bench_eval [--checkpoint FILE] [--rounds N] [--threads N] [--source-dir DIR]
#include "bench_stats.h"
#include <myelin/io/project.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/trainer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace myelin;
using myelin::bench::median;

namespace {

template <typename F> double seconds(F&& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

int main(int argc, char** argv) {
    int threads = 0, rounds = 5;
    std::string source = MYELIN_SOURCE_DIR, checkpoint;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--source-dir")) source = argv[i + 1];
        if (!std::strcmp(argv[i], "--checkpoint")) checkpoint = argv[i + 1];
    }
    const std::string dir = source + "/resources/examples";
    const io::Project project = io::load_project(dir + "/fashion_cnn.myelin");
    train::TrainerOptions options;
    options.project_dir = dir;
    options.threads = threads;
    options.resume_from = checkpoint; // empty: the initial weights (the speed is the same)
    train::Trainer trainer(project, options);
    const data::DatasetPtr test = train::evaluation_dataset(trainer);

    std::vector<double> evaluate, evaluate_predict, examples;
    double accuracy_a = 0, accuracy_b = 0;
    for (int r = 0; r < rounds + 1; ++r) { // round 0 warms caches and oneDNN's primitives
        const double a = seconds([&] { accuracy_a = trainer.evaluate(test).at("accuracy"); });
        const double p = seconds([&] { (void)trainer.predict(test); });
        const double b = seconds(
            [&] { accuracy_b = train::evaluate_examples(trainer, test).metrics.at("accuracy"); });
        if (r == 0) continue;
        evaluate.push_back(a);
        evaluate_predict.push_back(a + p);
        examples.push_back(b);
    }
    const double n = double(test->size());
    std::printf("{\"bench\": \"eval_fashion_cnn\", \"examples\": %.0f, \"threads\": %d, "
                "\"rounds\": %d, \"trainer_evaluate_per_s\": %.0f, "
                "\"trainer_evaluate_plus_predict_per_s\": %.0f, "
                "\"evaluate_examples_per_s\": %.0f, \"ratio_to_evaluate\": %.3f, "
                "\"same_accuracy\": %s}\n",
                n, threads, rounds, n / median(evaluate), n / median(evaluate_predict),
                n / median(examples), median(evaluate) / median(examples),
                accuracy_a == accuracy_b ? "true" : "false");
    return 0;
}
