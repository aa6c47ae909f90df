// Trains the two reference models of ../shared/bench/torch_baseline.py (an MLP and a small CNN)
// on Fashion-MNIST with Myelin's raw C++ API, and prints one JSON line per model in the same
// shape as the PyTorch baseline, plus peak RSS.
//
//   myelin_train_fashion [--model mlp|cnn|all] [--epochs N] [--threads T] [--batch B]
//                        [--steps S]   (throughput only: time S steps after a warm-up, no eval)
//
// Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist/*.gz).
#include <myelin/autograd.h>
#include <myelin/generator.h>
#include <myelin/nn/layers.h>
#include <myelin/nn/loss.h>
#include <myelin/optim/optim.h>
#include <myelin/tensor.h>

#include <sys/resource.h>
#include <time.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace myelin;

namespace {

const char* kRoot = "/usr/share/datasets/fashion-mnist/";

std::vector<unsigned char> read_gz(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f)
        throw std::runtime_error("cannot open " + path +
                                 " (apt-get install dataset-fashion-mnist)");
    std::vector<unsigned char> data;
    unsigned char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0)
        data.insert(data.end(), buf, buf + n);
    gzclose(f);
    if (n < 0) throw std::runtime_error("corrupt gzip data in " + path);
    return data;
}

uint32_t be32(const unsigned char* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

// images -> float32 [N, 1, 28, 28] scaled to [0, 1]; labels -> int64 [N]
Tensor load_images(const std::string& name) {
    const auto d = read_gz(kRoot + name);
    if (d.size() < 16 || be32(d.data()) != 2051)
        throw std::runtime_error(name + ": not an IDX image file");
    const int64_t n = be32(&d[4]), r = be32(&d[8]), c = be32(&d[12]);
    if (d.size() != static_cast<size_t>(16 + n * r * c))
        throw std::runtime_error(name + ": truncated");
    std::vector<float> v(static_cast<size_t>(n * r * c));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = d[16 + i] / 255.0f;
    return from_vector(v, {n, 1, r, c});
}

Tensor load_labels(const std::string& name) {
    const auto d = read_gz(kRoot + name);
    if (d.size() < 8 || be32(d.data()) != 2049)
        throw std::runtime_error(name + ": not an IDX label file");
    const int64_t n = be32(&d[4]);
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        v[static_cast<size_t>(i)] = d[8 + static_cast<size_t>(i)];
    return from_vector(v, {n});
}

std::shared_ptr<nn::Sequential> make_model(const std::string& name) {
    using namespace nn;
    if (name == "mlp")
        return std::make_shared<Sequential>(
            std::make_shared<Flatten>(), std::make_shared<Linear>(784, 256),
            std::make_shared<ReLU>(), std::make_shared<Linear>(256, 128), std::make_shared<ReLU>(),
            std::make_shared<Linear>(128, 10));
    Conv2dOptions pad1;
    pad1.padding = 1;
    return std::make_shared<Sequential>(
        std::make_shared<Conv2d>(1, 32, 3, pad1), std::make_shared<ReLU>(),
        std::make_shared<MaxPool2d>(2), std::make_shared<Conv2d>(32, 64, 3, pad1),
        std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
        std::make_shared<Linear>(64 * 7 * 7, 128), std::make_shared<ReLU>(),
        std::make_shared<Linear>(128, 10));
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The process's CPU time (all threads): steadier than wall time on a shared machine.
double cpu_now() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

double peak_rss_mb() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;
}

} // namespace

int main(int argc, char** argv) {
    std::string which = "all";
    int epochs = 1, threads = 2, steps = 0;
    int64_t batch = 128;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error("missing value after " + a);
            return argv[++i];
        };
        if (a == "--model")
            which = next();
        else if (a == "--epochs")
            epochs = std::stoi(next());
        else if (a == "--threads")
            threads = std::stoi(next());
        else if (a == "--batch")
            batch = std::stoll(next());
        else if (a == "--steps")
            steps = std::stoi(next());
        else {
            std::fprintf(stderr, "unknown argument %s\n", a.c_str());
            return 2;
        }
    }
    try {
        set_num_threads(threads);
        manual_seed(0);
        const Tensor xtr = load_images("train-images-idx3-ubyte.gz"),
                     ytr = load_labels("train-labels-idx1-ubyte.gz");
        const Tensor xte = load_images("t10k-images-idx3-ubyte.gz"),
                     yte = load_labels("t10k-labels-idx1-ubyte.gz");
        const int64_t n = xtr.size(0);
        for (const std::string name : {"mlp", "cnn"}) {
            if (which != "all" && which != name) continue;
            auto model = make_model(name);
            optim::Adam opt(model->parameters(), {});
            double t_train = 0, cpu_train = 0;
            int64_t trained = 0, timed_steps = 0;
            for (int ep = 0; ep < epochs; ++ep) {
                model->train();
                const Tensor perm = randperm(n);
                const int64_t limit = steps > 0 ? std::min<int64_t>(n, (steps + 3) * batch) : n;
                double t0 = now(), c0 = cpu_now();
                for (int64_t i = 0; i < limit; i += batch) {
                    if (steps > 0 && i == 3 * batch) { // warm-up done: start the clock
                        t0 = now();
                        c0 = cpu_now();
                        trained = 0;
                        timed_steps = 0;
                    }
                    const Tensor idx = perm.narrow(0, i, std::min(batch, n - i));
                    opt.zero_grad();
                    const Tensor loss = nn::functional::cross_entropy(
                        (*model)(index_select(xtr, 0, idx)), index_select(ytr, 0, idx));
                    loss.backward();
                    opt.step();
                    trained += idx.numel();
                    ++timed_steps;
                }
                t_train += now() - t0;
                cpu_train += cpu_now() - c0;
            }
            double acc = -1, t_inf = 0;
            if (steps == 0) {
                model->eval();
                autograd::NoGradGuard no_grad;
                const double t0 = now();
                int64_t correct = 0;
                for (int64_t i = 0; i < xte.size(0); i += 1000) {
                    const Tensor pred = argmax((*model)(xte.narrow(0, i, 1000)), 1);
                    correct +=
                        sum(eq(pred, yte.narrow(0, i, 1000)).to(DType::Int64)).item<int64_t>();
                }
                t_inf = now() - t0;
                acc = static_cast<double>(correct) / static_cast<double>(xte.size(0));
            }
            std::printf(
                "{\"framework\": \"myelin\", \"model\": \"%s\", \"epochs\": %d, \"threads\": %d, "
                "\"batch\": %lld, "
                "\"train_samples_per_s\": %.1f, \"epoch_s\": %.3f, \"infer_samples_per_s\": %.1f, "
                "\"test_acc\": %.4f, \"peak_rss_mb\": %.1f, \"cpu_ms_per_step\": %.3f}\n",
                name.c_str(), epochs, threads, static_cast<long long>(batch),
                static_cast<double>(trained) / t_train, t_train / epochs,
                t_inf > 0 ? 10000 / t_inf : 0.0, acc, peak_rss_mb(),
                cpu_train * 1e3 / double(std::max<int64_t>(1, timed_steps)));
            std::fflush(stdout);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "myelin_train_fashion: %s\n", e.what());
        return 1;
    }
    return 0;
}
