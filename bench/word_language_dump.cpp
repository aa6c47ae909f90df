// Writes a text checkpoint's model inputs and outputs on its evaluation split, for comparing
// with another implementation (bench/word_language_parity.py loads the same checkpoint into
// PyTorch). The model, vocabulary and split are what `myelin eval` uses
// (train::trainer_for_checkpoint, train::evaluation_dataset); the model runs in eval mode.
// One CSV row per example: target, the token ids t0..t{T-1}, then logit0..logit{C-1} (%.9g).
// With --gradients, also the gradient of the mean cross-entropy over the first
// --gradient-examples rows (train mode) for every parameter, as safetensors under its name.
//
//   myelin_word_language_dump --checkpoint FILE --project P [--limit N] [--threads N] -o CSV
//                             [--gradients FILE --gradient-examples N]
#include <myelin/autograd.h>
#include <myelin/graph/build.h>
#include <myelin/io/project.h>
#include <myelin/io/safetensors.h>
#include <myelin/nn/loss.h>
#include <myelin/tensor.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/trainer.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>

using namespace myelin;

namespace {

int usage() {
    std::fprintf(stderr, "usage: myelin_word_language_dump --checkpoint FILE --project P "
                         "[--limit N] [--threads N] -o CSV [--gradients FILE "
                         "--gradient-examples N]\n");
    return 2;
}

// The gradient of the mean cross-entropy over the first `count` examples, in train mode.
void write_gradients(graph::GraphModule& model, const data::Dataset& dataset, int64_t count,
                     const std::string& path) {
    TensorList inputs;
    std::vector<int64_t> targets;
    for (int64_t i = 0; i < count; ++i) {
        data::Example e = dataset.get(i);
        inputs.push_back(e.input);
        targets.push_back(e.target.to_vector<int64_t>().at(0));
    }
    model.train();
    model.zero_grad();
    const Tensor target = from_vector(targets, Dims{count});
    nn::functional::cross_entropy(model(TensorList{stack(inputs, 0)}), target).backward();
    io::NamedTensors grads;
    for (const auto& [name, p] : model.named_parameters())
        if (p.grad().defined()) grads.emplace_back(name, p.grad());
    io::save_safetensors(path, grads);
}

int run(int argc, char** argv) {
    std::string checkpoint, project_path, out_path, gradients_path;
    int64_t limit = 0, gradient_examples = 64;
    int threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char* flag = argv[i];
        const char* value = argv[i + 1];
        if (!std::strcmp(flag, "--checkpoint"))
            checkpoint = value;
        else if (!std::strcmp(flag, "--project"))
            project_path = value;
        else if (!std::strcmp(flag, "--limit"))
            limit = std::atoll(value);
        else if (!std::strcmp(flag, "--threads"))
            threads = std::atoi(value);
        else if (!std::strcmp(flag, "-o"))
            out_path = value;
        else if (!std::strcmp(flag, "--gradients"))
            gradients_path = value;
        else if (!std::strcmp(flag, "--gradient-examples"))
            gradient_examples = std::atoll(value);
        else
            return usage();
    }
    if (checkpoint.empty() || project_path.empty() || out_path.empty()) return usage();

    const io::Project project = io::load_project(project_path);
    std::filesystem::path project_dir = std::filesystem::path(project_path).parent_path();
    if (project_dir.empty()) project_dir = ".";
    auto trainer = train::trainer_for_checkpoint(project, project_dir, checkpoint, threads);
    const data::DatasetPtr dataset = train::evaluation_dataset(*trainer);
    const int64_t n = limit > 0 ? std::min(limit, dataset->size()) : dataset->size();

    graph::GraphModule& model = trainer->model();
    if (!gradients_path.empty())
        write_gradients(model, *dataset, std::min(gradient_examples, n), gradients_path);
    model.eval();
    autograd::NoGradGuard no_grad;
    std::FILE* f = std::fopen(out_path.c_str(), "w");
    if (!f) throw Error("cannot write " + out_path);
    constexpr int64_t kBatch = 256;
    for (int64_t start = 0; start < n; start += kBatch) {
        TensorList inputs;
        std::vector<int64_t> targets;
        for (int64_t i = start; i < std::min(n, start + kBatch); ++i) {
            data::Example e = dataset->get(i);
            inputs.push_back(e.input);
            targets.push_back(e.target.to_vector<int64_t>().at(0));
        }
        const Tensor batch = stack(inputs, 0);
        const Tensor logits = model(TensorList{batch}).to(DType::Float64).contiguous();
        const std::vector<int64_t> ids = batch.contiguous().to_vector<int64_t>();
        const std::vector<double> values = logits.to_vector<double>();
        const int64_t steps = batch.size(1), classes = logits.size(1);
        for (size_t r = 0; r < targets.size(); ++r) {
            std::fprintf(f, "%lld", (long long)targets[r]);
            for (int64_t t = 0; t < steps; ++t)
                std::fprintf(f, ",%lld", (long long)ids[r * size_t(steps) + size_t(t)]);
            for (int64_t c = 0; c < classes; ++c)
                std::fprintf(f, ",%.9g", values[r * size_t(classes) + size_t(c)]);
            std::fprintf(f, "\n");
        }
    }
    if (std::fclose(f) != 0) throw Error("writing " + out_path + " failed");
    std::printf("wrote %lld examples to %s\n", (long long)n, out_path.c_str());
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "myelin_word_language_dump: %s\n", e.what());
        return 1;
    }
}
