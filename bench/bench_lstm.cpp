// LSTM training step against PyTorch (bench/torch_lstm_step.py builds the same): an LSTM (input
// 64, hidden 256) over batch 64 x 32 steps, a Linear(256, 10) on the last hidden state,
// cross-entropy, backward, Adam. Alternating rounds of `steps` steps after a warm-up; prints the
// median milliseconds per step and the samples per second as one JSON line. --bidirectional and
// --layers change the LSTM, --gru / --rnn the layer. cpu_ms_per_step: the process's CPU time.
//
//   myelin_bench_lstm [--steps N] [--rounds N] [--threads N] [--layers N] [--bidirectional]
//                     [--gru | --rnn]
#include <myelin/device.h>
#include <myelin/generator.h>
#include <myelin/nn/layers.h>
#include <myelin/nn/loss.h>
#include <myelin/nn/recurrent.h>
#include <myelin/optim/optim.h>
#include <myelin/tensor.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

using namespace myelin;

int main(int argc, char** argv) {
    int steps = 20, rounds = 5, threads = 2, layers = 1;
    bool bidirectional = false;
    std::string kind = "lstm";
    for (int i = 1; i < argc; ++i) {
        auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
        if (!std::strcmp(argv[i], "--steps")) steps = std::max(1, next());
        if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, next());
        if (!std::strcmp(argv[i], "--threads")) threads = std::max(1, next());
        if (!std::strcmp(argv[i], "--layers")) layers = std::max(1, next());
        if (!std::strcmp(argv[i], "--bidirectional")) bidirectional = true;
        if (!std::strcmp(argv[i], "--gru")) kind = "gru";
        if (!std::strcmp(argv[i], "--rnn")) kind = "rnn";
    }
    set_num_threads(threads);
    manual_seed(0);
    const int64_t B = 64, T = 32, I = 64, H = 256, C = 10;
    const nn::RecurrentOptions ro{.num_layers = layers, .bidirectional = bidirectional};
    std::shared_ptr<nn::RNNBase> rnn;
    if (kind == "lstm") rnn = std::make_shared<nn::LSTM>(I, H, ro);
    if (kind == "gru") rnn = std::make_shared<nn::GRU>(I, H, ro);
    if (kind == "rnn") rnn = std::make_shared<nn::RNN>(I, H, ro);
    const int64_t D = bidirectional ? 2 : 1;
    auto head = std::make_shared<nn::Linear>(D * H, C);
    std::vector<Tensor> params = rnn->parameters();
    for (const Tensor& p : head->parameters())
        params.push_back(p);
    optim::Adam adam(params, {});
    Generator gen(1);
    const Tensor x = randn({T, B, I}, {}, &gen);
    const Tensor y = randint(0, C, {B}, TensorOptions(DType::Int64), &gen);

    auto step = [&] {
        adam.zero_grad();
        const TensorList outs = rnn->outputs({x});
        const Tensor last = outs[0].select(0, T - 1); // [B, D*H]
        const Tensor loss = nn::functional::cross_entropy((*head)(last), y);
        loss.backward();
        adam.step();
    };
    for (int k = 0; k < 3; ++k)
        step();
    // Wall time, and the process's CPU time (on a loaded machine the fairer number: it does not
    // count the time other processes hold the cores).
    std::vector<double> ms, cpu_ms;
    for (int r = 0; r < rounds; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const std::clock_t c0 = std::clock();
        for (int k = 0; k < steps; ++k)
            step();
        const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
        ms.push_back(dt.count() * 1000.0 / steps);
        cpu_ms.push_back(double(std::clock() - c0) * 1000.0 / CLOCKS_PER_SEC / steps);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(cpu_ms.begin(), cpu_ms.end());
    const double median = ms[ms.size() / 2];
    std::printf("{\"bench\": \"train_step_%s\", \"layers\": %d, \"bidirectional\": %s, "
                "\"threads\": %d, \"ms_per_step\": %.3f, \"cpu_ms_per_step\": %.3f, "
                "\"samples_per_s\": %.1f}\n",
                kind.c_str(), layers, bidirectional ? "true" : "false", threads, median,
                cpu_ms[cpu_ms.size() / 2], B * 1000.0 / median);
    return 0;
}
