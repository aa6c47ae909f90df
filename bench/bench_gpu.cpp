// The GPU section of bench/run.sh: where a CUDA device is usable, the trainer's step on the
// Fashion-MNIST MLP and CNN examples on cuda:0 against the CPU (capture off; samples/s from the
// 5th step to the last), the same in float16 mixed precision against float32 on the GPU, the
// LSTM language model (recurrent layers composed from device ops) against the CPU, and the
// device's sgemm, float16-operand GEMM (autocast's linear) and convolution throughput against its
// FP32 peak (SMs x FP32 lanes per SM x 2 x boost clock). Without a usable device it prints
// "GPU: skipped (<reason>)"; a part the device cannot run yet (training refused, an op without
// a CUDA kernel) prints "GPU: <workload> skipped (<reason>)". Otherwise one JSON line each.
//
// With --batches B1,B2,... the MLP and CNN steps run at each batch size (the CPU only at the
// project's own, 128: a CPU step of 1024 CNN examples would take the GPU kit's whole visit), each
// line naming its batch, for the kit's side-by-side table against PyTorch on the same GPU
// (bench/torch_gpu_step.py).
//
//   myelin_bench_gpu [--threads N] [--steps-mlp N] [--steps-cnn N] [--source-dir DIR]
//                    [--batches B1,B2,...]
#include <myelin/autocast.h>
#include <myelin/cuda.h>
#include <myelin/device.h>
#include <myelin/error.h>
#include <myelin/io/project.h>
#include <myelin/nn/functional.h>
#include <myelin/tensor.h>
#include <myelin/train/trainer.h>

#ifdef MYELIN_BENCH_CUDART
#include <cuda_runtime_api.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace myelin;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Samples per second of up to `steps` optimizer steps of `project` on `device`, timed from the
// end of the 5th step (each step reads its loss back, so the device has finished it) to the last
// step of the first epoch at most: the epoch's validation pass is not a training step (full
// batches only, so every timed step has batch_size examples).
double samples_per_second(io::Project project, const std::string& dir, int64_t steps, int threads,
                          Device device) {
    project.train.capture.layer_norms = false;
    project.train.capture.summaries_every = 0;
    project.train.capture.feature_maps_every = 0;
    project.data.drop_last = true;
    train::TrainerOptions o;
    o.project_dir = dir;
    o.max_steps = steps;
    o.threads = threads;
    o.device = device;
    train::Trainer trainer(project, o);
    Clock::time_point start, end;
    int64_t timed = 0, first_epoch = -1;
    train::CallbackSink sink([&](const train::Event& e) {
        if (auto* m = e.get<train::StepMetrics>()) {
            if (first_epoch < 0) first_epoch = m->epoch;
            if (m->epoch != first_epoch) return;
            if (m->step == 5) start = Clock::now();
            if (m->step > 5) {
                ++timed;
                end = Clock::now();
            }
        }
    });
    trainer.set_sink(&sink);
    const train::TrainResult r = trainer.run();
    if (r.status == train::RunStatus::Failed) throw Error(r.error);
    if (timed == 0) throw Error("fewer than 6 steps in the first epoch: nothing timed");
    return double(timed * project.data.batch_size) /
           std::chrono::duration<double>(end - start).count();
}

// FP32 lanes per SM by compute capability (CUDA C Programming Guide, "Arithmetic
// Instructions"); 0 where unknown.
int fp32_lanes_per_sm(int major, int minor) {
    if (major == 7) return 64;
    if (major == 8) return minor == 0 ? 64 : 128;
    if (major >= 9) return 128;
    return 0;
}

// The device's FP32 peak in GFLOP/s (needs the boost clock from the CUDA runtime); unset when
// this build cannot ask.
std::optional<double> fp32_peak_gflops(const GpuInfo& gpu) {
#ifdef MYELIN_BENCH_CUDART
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, gpu.index) != cudaSuccess || khz <= 0)
        return std::nullopt;
    const int lanes = fp32_lanes_per_sm(gpu.compute_major, gpu.compute_minor);
    if (lanes == 0) return std::nullopt;
    return double(gpu.multiprocessors) * lanes * 2.0 * double(khz) * 1e3 / 1e9;
#else
    (void)gpu;
    return std::nullopt;
#endif
}

// Seconds per call of `op`, whose result is read back to the host to know the device finished:
// `reps` calls then one read-back, minus a read-back alone.
double device_seconds(const std::function<Tensor()>& op, int reps) {
    Tensor out = op(); // warm-up: kernels chosen, workspace allocated
    out.to(kCPU);
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < reps; ++i)
        out = op();
    out.to(kCPU);
    const double total = seconds_since(start);
    const Clock::time_point copy = Clock::now();
    out.to(kCPU);
    return (total - seconds_since(copy)) / reps;
}

void throughput_line(const char* workload, double gflop, double seconds,
                     std::optional<double> peak) {
    const double rate = gflop / seconds;
    std::printf("{\"workload\": \"%s\", \"myelin\": %.1f, \"unit\": \"GFLOP/s\"", workload, rate);
    if (peak)
        std::printf(", \"peak_gflops\": %.1f, \"pct_of_peak\": %.1f", *peak, 100.0 * rate / *peak);
    std::printf("}\n");
}

void skipped(const char* workload, const std::string& why) {
    std::printf("GPU: %s skipped (%s)\n", workload, why.c_str());
}

} // namespace

int main(int argc, char** argv) {
    int threads = 0;
    int64_t steps_mlp = 200, steps_cnn = 60;
    std::string source = MYELIN_SOURCE_DIR;
    std::vector<int64_t> batches; // empty: the project's own
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--steps-mlp")) steps_mlp = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--steps-cnn")) steps_cnn = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--source-dir")) source = argv[i + 1];
        if (!std::strcmp(argv[i], "--batches"))
            for (const char* p = argv[i + 1]; *p;) {
                char* end = nullptr;
                const long long b = std::strtoll(p, &end, 10);
                if (end == p || b <= 0) {
                    std::fprintf(stderr, "myelin_bench_gpu: --batches: expected sizes like "
                                         "128,1024\n");
                    return 2;
                }
                batches.push_back(b);
                p = *end == ',' ? end + 1 : end;
            }
    }
    const CudaStatus& cuda = cuda_status();
    if (!cuda.usable()) {
        std::printf("GPU: skipped (%s)\n", cuda.reason.c_str());
        return 0;
    }
    const GpuInfo& gpu = cuda.devices[0];
    const Device device = cuda_device(0);
    const std::optional<double> peak = fp32_peak_gflops(gpu);
    std::printf("{\"gpu\": \"%s\", \"build\": \"%s\"}\n", gpu.summary().c_str(),
                cuda.build.c_str());

    // The trainer on the examples: cuda:0 against the CPU.
    const std::string dir = source + "/resources/examples";
    std::optional<std::string> refusal;
    try {
        check_training_device(device);
    } catch (const Error& e) {
        refusal = e.what();
    }
    for (const char* model : {"mlp", "cnn"}) {
        const std::string workload = std::string("gpu_train_step_") + model;
        if (refusal) {
            skipped(workload.c_str(), *refusal);
            continue;
        }
        try {
            const io::Project shipped =
                io::load_project(dir + "/fashion_" + std::string(model) + ".myelin");
            const int64_t steps = std::string(model) == "mlp" ? steps_mlp : steps_cnn;
            std::vector<int64_t> sizes = batches;
            if (sizes.empty()) sizes.push_back(shipped.data.batch_size);
            for (const int64_t batch : sizes) {
                io::Project project = shipped;
                project.data.batch_size = batch;
                const double on_gpu = samples_per_second(project, dir, steps, threads, device);
                // float16 mixed precision (autocast + loss scaling), also on cuda:0.
                io::Project half = project;
                half.train.precision = myelin::spec::Precision::Float16;
                const double on_gpu_half = samples_per_second(half, dir, steps, threads, device);
                std::printf("{\"workload\": \"%s\", \"batch\": %lld, \"cuda\": %.1f, "
                            "\"cuda_float16\": %.1f, \"unit\": \"samples/s\", \"steps\": %lld",
                            workload.c_str(), static_cast<long long>(batch), on_gpu, on_gpu_half,
                            static_cast<long long>(steps));
                if (batch == shipped.data.batch_size) {
                    const double on_cpu = samples_per_second(project, dir, steps, threads, kCPU);
                    std::printf(", \"cpu\": %.1f, \"cuda_over_cpu\": %.2f, \"threads\": %d", on_cpu,
                                on_gpu / on_cpu, threads);
                }
                std::printf(", \"float16_over_float32\": %.2f}\n", on_gpu_half / on_gpu);
                std::fflush(stdout);
            }
        } catch (const std::exception& e) {
            skipped(workload.c_str(), e.what());
        }
    }
    // A sequence model: the LSTM language model's step (its recurrent layer composed from device
    // ops on the GPU, the fused kernels on the CPU).
    if (!refusal) {
        const char* workload = "gpu_train_step_word_language_lstm";
        try {
            const io::Project project = io::load_project(dir + "/word_language_lstm.myelin");
            const double on_gpu = samples_per_second(project, dir, steps_cnn, threads, device);
            const double on_cpu = samples_per_second(project, dir, steps_cnn, threads, kCPU);
            std::printf("{\"workload\": \"%s\", \"cuda\": %.1f, \"cpu\": %.1f, \"unit\": "
                        "\"samples/s\", \"ratio\": %.2f}\n",
                        workload, on_gpu, on_cpu, on_gpu / on_cpu);
        } catch (const std::exception& e) {
            skipped(workload, e.what());
        }
    }

    // Throughput against the FP32 peak (TF32 off, as the backend's default).
    try {
        const int64_t n = 8192;
        const Tensor a = randn({n, n}).to(device);
        const Tensor b = randn({n, n}).to(device);
        const double s = device_seconds([&] { return matmul(a, b); }, 10);
        throughput_line("gpu_sgemm_8192", 2.0 * double(n) * double(n) * double(n) / 1e9, s, peak);
    } catch (const std::exception& e) {
        skipped("gpu_sgemm_8192", e.what());
    }
    try {
        // linear under float16 autocast: float16 operands on cuBLAS's tensor cores, float32
        // output (against the FP32 peak, so above 1 means the tensor cores are working).
        const int64_t n = 8192;
        const Tensor x = randn({n, n}).to(device);
        const Tensor w = randn({n, n}).to(device);
        AutocastGuard half(DType::Float16);
        const double s = device_seconds([&] { return nn::functional::linear(x, w); }, 10);
        throughput_line("gpu_linear_float16_8192", 2.0 * double(n) * double(n) * double(n) / 1e9, s,
                        peak);
    } catch (const std::exception& e) {
        skipped("gpu_linear_float16_8192", e.what());
    }
    try {
        // A ResNet stage's 3x3 convolution: batch 64, 64 -> 64 channels, 56x56, padding 1.
        const Tensor x = randn({64, 64, 56, 56}).to(device);
        const Tensor w = randn({64, 64, 3, 3}).to(device);
        nn::functional::Conv2dOptions options;
        options.padding = {1, 1};
        const double s =
            device_seconds([&] { return nn::functional::conv2d(x, w, {}, options); }, 20);
        const double gflop = 2.0 * 64 * 64 * 56 * 56 * 64 * 9 / 1e9;
        throughput_line("gpu_conv2d_64x64x56x56_3x3", gflop, s, peak);
    } catch (const std::exception& e) {
        skipped("gpu_conv2d_64x64x56x56_3x3", e.what());
    }
    return 0;
}
