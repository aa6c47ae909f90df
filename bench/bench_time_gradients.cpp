// Gradient through time, what it costs: (1) the trainer on
// resources/examples/word_language_lstm.myelin (Debian's word lists) with the probe every step
// (training.capture.feature_maps_every = 1: a forward + backward of the loss on the 4 probe
// examples after each step) against feature_maps_every = 0, alternating rounds; (2) one
// bidirectional LSTM layer's forward + backward on a training batch (64 x 24 x 32, hidden 64,
// lengths) with a RecordRecurrentGradients scope against without (the per-step norm in the
// backward's time loop); (3) the probe's work timed alone: the model's forward + backward of the
// loss on the first 4 validation examples in eval mode, recording. Prints JSON lines: medians
// and ranges in ms.
//
//   myelin_bench_time_gradients [--steps N] [--threads N] [--source-dir DIR]
#include "bench_stats.h"
#include "trainer_timing.h"

#include <myelin/data/dataloader.h>
#include <myelin/data/dataset.h>
#include <myelin/graph/build.h>
#include <myelin/io/project.h>
#include <myelin/nn/loss.h>
#include <myelin/nn/recurrent.h>
#include <myelin/nn/recurrent_gradients.h>
#include <myelin/tensor.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace myelin;
using myelin::bench::median;
using myelin::bench::seconds_per_step;

namespace {

// Milliseconds of one forward + backward of `layer` on `x` with `lengths`, recording or not.
double layer_step_ms(nn::LSTM& layer, const Tensor& x, const Tensor& lengths, bool record) {
    auto recorder = std::make_shared<nn::RecurrentGradientRecorder>();
    const auto start = std::chrono::steady_clock::now();
    TensorList outs;
    {
        std::optional<nn::RecordRecurrentGradients> scope;
        if (record) scope.emplace(recorder, "lstm");
        outs = layer.outputs({x, lengths});
    }
    outs[0].sum().backward();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    layer.zero_grad();
    return ms;
}

} // namespace

int main(int argc, char** argv) {
    int64_t steps = 40;
    int threads = 1;
    std::string source = MYELIN_SOURCE_DIR;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--source-dir")) source = argv[i + 1];
    }
    const std::string dir = source + "/resources/examples";
    io::Project probe = io::load_project(dir + "/word_language_lstm.myelin");
    probe.train.capture.feature_maps_every = 1;
    io::Project off = probe;
    off.train.capture.feature_maps_every = 0;
    constexpr int kRounds = 5;
    std::vector<double> with, without, per_probe;
    for (int round = 0; round < kRounds; ++round) {
        without.push_back(1000.0 * seconds_per_step(off, dir, steps, threads));
        with.push_back(1000.0 * seconds_per_step(probe, dir, steps, threads));
        per_probe.push_back(with.back() - without.back());
    }
    std::printf("{\"workload\": \"time_gradient_probe_word_language_lstm\", "
                "\"ms_per_step_probe_every_step\": %.2f, \"ms_per_step_no_probe\": %.2f, "
                "\"ms_per_probe\": %.2f, \"ms_per_probe_min\": %.2f, \"ms_per_probe_max\": %.2f, "
                "\"steps\": %lld, \"rounds\": %d, \"threads\": %d}\n",
                median(with), median(without), median(per_probe),
                *std::min_element(per_probe.begin(), per_probe.end()),
                *std::max_element(per_probe.begin(), per_probe.end()),
                static_cast<long long>(steps), kRounds, threads);

    if (threads > 0) set_num_threads(threads);
    nn::RecurrentOptions o;
    o.bidirectional = true;
    o.batch_first = true;
    nn::LSTM layer(32, 64, o);
    const Tensor x = randn({64, 24, 32});
    std::vector<int64_t> lens(64);
    for (size_t b = 0; b < lens.size(); ++b)
        lens[b] = 4 + int64_t(b % 21);
    const Tensor lengths = from_vector(lens, Dims{64});
    for (int i = 0; i < 5; ++i) // warm up
        layer_step_ms(layer, x, lengths, i % 2 == 1);
    std::vector<double> on, plain;
    for (int i = 0; i < 60; ++i) {
        plain.push_back(layer_step_ms(layer, x, lengths, false));
        on.push_back(layer_step_ms(layer, x, lengths, true));
    }
    std::printf("{\"workload\": \"time_gradient_sink_lstm_layer\", \"shape\": \"64x24x32 "
                "hidden 64 bidirectional\", \"ms_forward_backward_recording\": %.3f, "
                "\"ms_forward_backward_plain\": %.3f, \"repeats\": %d}\n",
                median(on), median(plain), int(on.size()));

    // The probe's work alone, as TimeGradientProbe does it (minus putting .grad aside).
    train::TrainerOptions options;
    options.project_dir = dir;
    options.threads = threads;
    train::Trainer trainer(off, options);
    std::vector<data::Example> examples;
    for (int64_t i = 0; i < 4; ++i)
        examples.push_back(trainer.data().validation->get(i));
    const data::Example batch = data::default_collate(examples);
    auto& model = trainer.model();
    model.eval();
    std::vector<double> probe_ms;
    for (int i = 0; i < 105; ++i) {
        auto recorder = std::make_shared<nn::RecurrentGradientRecorder>();
        const auto start = std::chrono::steady_clock::now();
        Tensor loss;
        {
            nn::RecordRecurrentGradients scope(recorder, "lstm");
            loss = trainer.loss()(model(batch.input), batch.target);
        }
        loss.backward();
        (void)recorder->take();
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        model.zero_grad();
        if (i >= 5) probe_ms.push_back(ms);
    }
    std::printf("{\"workload\": \"time_gradient_probe_alone\", \"ms_median\": %.3f, "
                "\"ms_min\": %.3f, \"repeats\": %d}\n",
                median(probe_ms), *std::min_element(probe_ms.begin(), probe_ms.end()),
                int(probe_ms.size()));
    return 0;
}
