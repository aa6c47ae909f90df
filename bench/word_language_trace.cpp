// Trains a text project with the real Trainer (what `myelin train` runs, same seed, same
// numbers) and writes what another implementation needs to replay the very same run, for
// bench/word_language_trace.py (issue 18: is the gap to PyTorch a bug or noise?):
//
//   DIR/initial.safetensors   the model's state_dict before step 1 (Myelin's names)
//   DIR/train.csv, validation.csv, test.csv
//                             each split's examples in dataset order: target, ids t0..t{T-1}
//   DIR/steps.csv             one row per optimizer step: step, epoch, loss (the batch's mean
//                             cross-entropy, %.9g), gradient norm (all parameters, before the
//                             optimizer step, %.9g), then the batch's rows as indices into
//                             train.csv in batch order
//   DIR/step_K.safetensors    the state_dict after step K, for each K in --snapshots
//   DIR/result.txt            test_accuracy / test_loss / validation_accuracy of the final model
//
//   myelin_word_language_trace --project P -o DIR [--seed S] [--steps N] [--epochs N]
//                              [--threads N] [--snapshots K1,K2,...]
// --steps 0 (the default) trains the project's epochs to the end.
#include <myelin/io/project.h>
#include <myelin/io/safetensors.h>
#include <myelin/tensor.h>
#include <myelin/train/callbacks.h>
#include <myelin/train/trainer.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace myelin;
namespace fs = std::filesystem;

namespace {

int usage() {
    std::fprintf(stderr, "usage: myelin_word_language_trace --project P -o DIR [--seed S] "
                         "[--steps N] [--epochs N] [--threads N] [--snapshots K1,K2,...]\n");
    return 2;
}

// An example's identity: its token ids and target (the words are unique in the corpus).
std::string example_key(const std::vector<int64_t>& ids, int64_t target) {
    std::string key = std::to_string(target);
    for (int64_t id : ids)
        key += "," + std::to_string(id);
    return key;
}

int64_t target_of(const data::Example& e) {
    return e.target.to_vector<int64_t>().at(0);
}

// Writes a split as CSV rows "target,id0,...", returns each row's key -> its first index.
std::map<std::string, int64_t> write_split(const data::DatasetPtr& split, const fs::path& path) {
    std::map<std::string, int64_t> index;
    if (!split) return index;
    std::FILE* f = std::fopen(path.string().c_str(), "w");
    if (!f) throw Error("cannot write " + path.string());
    for (int64_t i = 0; i < split->size(); ++i) {
        const data::Example e = split->get(i);
        const std::vector<int64_t> ids = e.input.contiguous().to_vector<int64_t>();
        const int64_t target = target_of(e);
        std::fprintf(f, "%lld", (long long)target);
        for (int64_t id : ids)
            std::fprintf(f, ",%lld", (long long)id);
        std::fprintf(f, "\n");
        index.emplace(example_key(ids, target), i);
    }
    if (std::fclose(f) != 0) throw Error("writing " + path.string() + " failed");
    return index;
}

void save_state(graph::GraphModule& model, const fs::path& path) {
    io::save_safetensors(path, model.state_dict());
}

// Records every step's loss, gradient norm and batch (as training-split indices), and the
// state_dict after the chosen steps.
class StepTrace : public train::TrainerCallback {
  public:
    StepTrace(std::map<std::string, int64_t> train_index, fs::path dir, std::set<int64_t> snapshots)
        : train_index_(std::move(train_index)), dir_(std::move(dir)),
          snapshots_(std::move(snapshots)) {
        file_ = std::fopen((dir_ / "steps.csv").string().c_str(), "w");
        if (!file_) throw Error("cannot write " + (dir_ / "steps.csv").string());
    }
    ~StepTrace() override {
        if (file_) std::fclose(file_);
    }
    StepTrace(const StepTrace&) = delete;
    StepTrace& operator=(const StepTrace&) = delete;

    void after_forward(train::Trainer&, const train::ForwardPass& pass) override {
        loss_ = pass.loss_value();
        const Tensor ids = pass.batch.input.contiguous();
        const std::vector<int64_t> flat = ids.to_vector<int64_t>();
        const std::vector<int64_t> targets = pass.batch.target.contiguous().to_vector<int64_t>();
        const size_t steps = static_cast<size_t>(ids.size(1));
        rows_.clear();
        for (size_t r = 0; r < targets.size(); ++r) {
            const std::vector<int64_t> row(flat.begin() + long(r * steps),
                                           flat.begin() + long((r + 1) * steps));
            auto it = train_index_.find(example_key(row, targets[r]));
            if (it == train_index_.end())
                throw Error("a training batch row is not in the training split");
            rows_.push_back(it->second);
        }
    }
    void after_backward(train::Trainer& trainer) override {
        double sum = 0;
        for (const Tensor& p : trainer.model().parameters())
            if (p.grad().defined()) {
                const std::vector<double> g = p.grad().to(DType::Float64).to_vector<double>();
                for (double v : g)
                    sum += v * v;
            }
        grad_norm_ = std::sqrt(sum);
    }
    void after_optimizer_step(train::Trainer& trainer, train::StepMetrics&) override {
        std::fprintf(file_, "%lld,%lld,%.9g,%.9g", (long long)trainer.step(),
                     (long long)trainer.epoch(), loss_, grad_norm_);
        for (int64_t i : rows_)
            std::fprintf(file_, ",%lld", (long long)i);
        std::fprintf(file_, "\n");
        if (snapshots_.count(trainer.step()))
            save_state(trainer.model(),
                       dir_ / ("step_" + std::to_string(trainer.step()) + ".safetensors"));
    }

  private:
    std::map<std::string, int64_t> train_index_;
    fs::path dir_;
    std::set<int64_t> snapshots_;
    std::FILE* file_ = nullptr;
    std::vector<int64_t> rows_;
    double loss_ = 0, grad_norm_ = 0;
};

std::set<int64_t> parse_steps(const std::string& text) {
    std::set<int64_t> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) out.insert(std::stoll(item));
    return out;
}

int run(int argc, char** argv) {
    std::string project_path, out_dir, snapshots;
    train::TrainerOptions options;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char* flag = argv[i];
        const char* value = argv[i + 1];
        if (!std::strcmp(flag, "--project"))
            project_path = value;
        else if (!std::strcmp(flag, "-o"))
            out_dir = value;
        else if (!std::strcmp(flag, "--seed"))
            options.seed = std::stoull(value);
        else if (!std::strcmp(flag, "--steps"))
            options.max_steps = std::atoll(value);
        else if (!std::strcmp(flag, "--epochs"))
            options.epochs = std::atoll(value);
        else if (!std::strcmp(flag, "--threads"))
            options.threads = std::atoi(value);
        else if (!std::strcmp(flag, "--snapshots"))
            snapshots = value;
        else
            return usage();
    }
    if (project_path.empty() || out_dir.empty()) return usage();
    const fs::path dir(out_dir);
    fs::create_directories(dir);

    const io::Project project = io::load_project(project_path);
    options.project_dir = fs::path(project_path).parent_path();
    if (options.project_dir.empty()) options.project_dir = ".";
    train::Trainer trainer(project, options);
    save_state(trainer.model(), dir / "initial.safetensors");
    auto train_index = write_split(trainer.data().train, dir / "train.csv");
    write_split(trainer.data().validation, dir / "validation.csv");
    write_split(trainer.data().test, dir / "test.csv");
    trainer.add_callback(
        std::make_shared<StepTrace>(std::move(train_index), dir, parse_steps(snapshots)));
    const train::TrainResult result = trainer.run();
    if (result.status == train::RunStatus::Failed) throw Error("training failed: " + result.error);

    std::FILE* f = std::fopen((dir / "result.txt").string().c_str(), "w");
    if (!f) throw Error("cannot write " + (dir / "result.txt").string());
    auto put = [&](const char* name, const train::MetricMap& m, const char* key) {
        if (auto it = m.find(key); it != m.end()) std::fprintf(f, "%s %.9g\n", name, it->second);
    };
    std::fprintf(f, "steps %lld\n", (long long)result.steps);
    put("test_accuracy", result.test, "accuracy");
    put("test_loss", result.test, "loss");
    put("validation_accuracy", result.validation, "accuracy");
    std::fclose(f);
    std::printf("%lld steps traced into %s\n", (long long)result.steps, dir.string().c_str());
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "myelin_word_language_trace: %s\n", e.what());
        return 1;
    }
}
