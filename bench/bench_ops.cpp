// Core op micro-benchmarks. Each reports items/s or FLOP/s counters that bench/run.sh turns into
// one JSON line per workload beside PyTorch's number for the same op and thread count.
#include <myelin/autograd.h>
#include <myelin/tensor.h>

#include <benchmark/benchmark.h>
#include <omp.h>

using namespace myelin;

static void BM_sgemm_1024(benchmark::State& state) {
    const Tensor a = randn({1024, 1024}), b = randn({1024, 1024});
    for (auto _ : state)
        benchmark::DoNotOptimize(mm(a, b));
    state.counters["flops"] =
        benchmark::Counter(2.0 * 1024 * 1024 * 1024, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_sgemm_1024)->Unit(benchmark::kMillisecond)->UseRealTime();

// Register-resident FMA chains: the machine's single-precision peak (FLOP/s) on all threads.
static void BM_fma_peak(benchmark::State& state) {
    using v16 = float __attribute__((vector_size(64)));
    constexpr int kChains = 12;
    constexpr int64_t kIters = 1 << 20;
    for (auto _ : state) {
        float sink = 0;
#pragma omp parallel reduction(+ : sink)
        {
            v16 acc[kChains];
            const v16 m = v16{} + 0.999999f;
            const v16 c = v16{} + 1e-7f;
            for (int i = 0; i < kChains; ++i)
                acc[i] = v16{} + static_cast<float>(i);
            for (int64_t it = 0; it < kIters; ++it)
                for (int i = 0; i < kChains; ++i)
                    acc[i] = acc[i] * m + c;
            for (int i = 0; i < kChains; ++i)
                sink += acc[i][0];
        }
        benchmark::DoNotOptimize(sink);
    }
    state.counters["flops"] =
        benchmark::Counter(2.0 * 16 * kChains * kIters * omp_get_max_threads(),
                           benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_fma_peak)->Unit(benchmark::kMillisecond)->UseRealTime();

static constexpr int64_t k4M = 4 * 1024 * 1024;

static void BM_add_4M(benchmark::State& state) {
    const Tensor a = randn({k4M}), b = randn({k4M});
    for (auto _ : state)
        benchmark::DoNotOptimize(add(a, b));
    state.SetItemsProcessed(state.iterations() * k4M);
}
BENCHMARK(BM_add_4M)->Unit(benchmark::kMicrosecond)->UseRealTime();

static void BM_mul_4M(benchmark::State& state) {
    const Tensor a = randn({k4M}), b = randn({k4M});
    for (auto _ : state)
        benchmark::DoNotOptimize(mul(a, b));
    state.SetItemsProcessed(state.iterations() * k4M);
}
BENCHMARK(BM_mul_4M)->Unit(benchmark::kMicrosecond)->UseRealTime();

static void BM_relu_4M(benchmark::State& state) {
    const Tensor a = randn({k4M});
    for (auto _ : state)
        benchmark::DoNotOptimize(relu(a));
    state.SetItemsProcessed(state.iterations() * k4M);
}
BENCHMARK(BM_relu_4M)->Unit(benchmark::kMicrosecond)->UseRealTime();

static void BM_softmax_4096x1000(benchmark::State& state) {
    const Tensor a = randn({4096, 1000});
    for (auto _ : state)
        benchmark::DoNotOptimize(softmax(a, 1));
    state.SetItemsProcessed(state.iterations() * 4096 * 1000);
}
BENCHMARK(BM_softmax_4096x1000)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Per-op overhead: a 16-element add of two tensors that require grad, forward + backward.
static void BM_small_add_fwd_bwd(benchmark::State& state) {
    const Tensor a = randn({16}).requires_grad_(), b = randn({16}).requires_grad_();
    const Tensor g = ones({16});
    for (auto _ : state) {
        Tensor c = add(a, b);
        c.backward(g);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_small_add_fwd_bwd)->Unit(benchmark::kMicrosecond)->UseRealTime();

int main(int argc, char** argv) {
    if (const char* t = std::getenv("MYELIN_NUM_THREADS")) set_num_threads(std::atoi(t));
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
