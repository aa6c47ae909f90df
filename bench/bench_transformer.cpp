// Transformer-encoder training step (the train_step_transformer): 2 encoder layers,
// d_model 128, 4 heads, dim_feedforward 512, batch first, sequences of 64, batch 32; mean over
// the steps, a linear head to 10 classes, cross-entropy, Adam. Random inputs and labels (fixed
// seed), timed over --steps steps after 3 warm-up steps, median of --rounds rounds. The same
// step in PyTorch: bench/torch_transformer_step.py. Prints one JSON line.
// --workload mha times only the self-attention of one layer (MultiheadAttention forward and
// backward on the same [32, 64, 128] input): the part nn/attention.h computes itself.
//
//   myelin_bench_transformer [--workload step|mha] [--steps N] [--rounds N] [--threads N]
//                            [--dropout P]
#include <myelin/autograd.h>
#include <myelin/device.h>
#include <myelin/generator.h>
#include <myelin/nn/attention.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/layers.h>
#include <myelin/nn/loss.h>
#include <myelin/optim/optim.h>
#include <myelin/tensor.h>

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace myelin;

int main(int argc, char** argv) {
    int steps = 20, rounds = 3, threads = 0;
    double dropout = 0.1;
    std::string workload = "step";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--workload")) workload = argv[i + 1];
        if (!std::strcmp(argv[i], "--steps")) steps = std::max(1, std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--dropout")) dropout = std::atof(argv[i + 1]);
    }
    if (threads > 0) set_num_threads(threads);
    const int64_t batch = 32, seq = 64, d_model = 128, classes = 10;
    manual_seed(0);
    nn::TransformerEncoderLayerOptions o;
    o.dim_feedforward = 512;
    o.dropout = dropout;
    o.batch_first = true;
    nn::TransformerEncoder encoder(nn::TransformerEncoderLayer(d_model, 4, o), 2);
    auto head = std::make_shared<nn::Linear>(d_model, classes);
    std::vector<Tensor> params = encoder.parameters();
    for (const Tensor& p : head->parameters())
        params.push_back(p);
    optim::Adam adam(params);
    nn::CrossEntropyLoss loss_fn;
    Generator g(1);
    const Tensor x = randn({batch, seq, d_model}, {}, &g);
    const Tensor y = randint(0, classes, {batch}, DType::Int64, &g);
    nn::MultiheadAttention mha(d_model, 4, {.dropout = dropout, .batch_first = true});
    const Tensor grad_out = randn({batch, seq, d_model}, {}, &g);
    auto step = [&] {
        if (workload == "mha") {
            mha.zero_grad();
            mha(x).backward(grad_out);
            return;
        }
        adam.zero_grad();
        const Tensor h = encoder(x).mean({1});
        Tensor loss = loss_fn((*head)(h), y);
        loss.backward();
        adam.step();
    };
    // CPU time of the process beside wall time: on a loaded machine it moves less.
    auto cpu_now = [] {
        timespec ts{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    };
    std::vector<double> per_step, cpu_per_step;
    for (int r = 0; r < rounds; ++r) {
        for (int w = 0; w < 3; ++w)
            step();
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_now();
        for (int s = 0; s < steps; ++s)
            step();
        cpu_per_step.push_back((cpu_now() - c0) / steps);
        per_step.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps);
    }
    std::sort(per_step.begin(), per_step.end());
    std::sort(cpu_per_step.begin(), cpu_per_step.end());
    const double med = per_step[per_step.size() / 2];
    const double cpu_med = cpu_per_step[cpu_per_step.size() / 2];
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    std::printf("{\"workload\": \"%s\", \"ms_per_step\": %.3f, "
                "\"train_samples_per_s\": %.1f, \"min_ms\": %.3f, \"max_ms\": %.3f, "
                "\"cpu_ms_per_step\": %.3f, \"dropout\": %g, \"threads\": %d, "
                "\"peak_rss_mb\": %.1f}\n",
                workload == "mha" ? "mha_fwd_bwd" : "train_step_transformer", 1000.0 * med,
                batch / med, 1000.0 * per_step.front(), 1000.0 * per_step.back(), 1000.0 * cpu_med,
                dropout, threads, static_cast<double>(u.ru_maxrss) / 1024.0);
}
