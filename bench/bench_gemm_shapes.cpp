// The GEMMs of one training step of the Fashion-MNIST MLP (784 -> 256 -> 128 -> 10, batch 128)
// in OpenBLAS, as Myelin's linear calls it today (transposes as BLAS flags, bias and ReLU as
// separate passes), against oneDNN's matmul (transposes as strides, bias and ReLU fused as
// post-ops in the forward) and oneDNN's inner product (forward, backward data, backward weights
// with the bias gradient in the same pass). Prints one JSON line per shape and library with the
// median GFLOP/s and microseconds per call of `rounds` alternated rounds, and the median of the
// rounds' speed ratios.
//
//   myelin_bench_gemm_shapes [--threads N] [--rounds N] [--ms N]
#include "bench_stats.h"

#include <cblas.h>
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

dnnl::engine& engine() {
    static dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}
dnnl::stream& stream() {
    static dnnl::stream s(engine());
    return s;
}

std::vector<float> random_buffer(int64_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v)
        x = d(rng);
    return v;
}

// Seconds per call of `fn`, run for at least `ms` milliseconds.
double seconds_per_call(const std::function<void()>& fn, double ms) {
    int64_t calls = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
        for (int i = 0; i < 10; ++i)
            fn();
        calls += 10;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (elapsed * 1e3 < ms);
    return elapsed / double(calls);
}

// One product C [M, N] = A [M, K] @ B [K, N] of the step; A^T / B^T stored when ta / tb.
struct Shape {
    const char* name;
    int64_t M, N, K;
    bool ta, tb;
    bool bias, relu; // forward of a Linear: C += bias, then ReLU
};

// oneDNN matmul over the same buffers; bias and ReLU as a bias argument and an eltwise post-op.
struct DnnlMatmul {
    dnnl::matmul prim;
    std::unordered_map<int, memory> args;
    std::vector<uint8_t> scratch;

    DnnlMatmul(const Shape& s, float* a, float* b, float* bias, float* c) {
        const memory::desc ad({s.M, s.K}, f32, s.ta ? tag::ba : tag::ab);
        const memory::desc bd({s.K, s.N}, f32, s.tb ? tag::ba : tag::ab);
        const memory::desc cd({s.M, s.N}, f32, tag::ab);
        const memory::desc biasd({1, s.N}, f32, tag::ab);
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        if (s.relu) {
            dnnl::post_ops po;
            po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
            attr.set_post_ops(po);
        }
        const auto d =
            s.bias ? dnnl::matmul::desc(ad, bd, biasd, cd) : dnnl::matmul::desc(ad, bd, cd);
        const dnnl::matmul::primitive_desc pd(d, attr, engine());
        prim = dnnl::matmul(pd);
        scratch.resize(pd.scratchpad_desc().get_size() + 1);
        args = {{DNNL_ARG_SRC, memory(ad, engine(), a)},
                {DNNL_ARG_WEIGHTS, memory(bd, engine(), b)},
                {DNNL_ARG_DST, memory(cd, engine(), c)},
                {DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), engine(), scratch.data())}};
        if (s.bias) args.emplace(DNNL_ARG_BIAS, memory(biasd, engine(), bias));
        std::printf("  oneDNN matmul %s: %s\n", s.name, pd.impl_info_str());
    }
    void run() {
        prim.execute(stream(), args);
        stream().wait();
    }
};

void bench_shape(const Shape& s, int threads, int rounds, double ms) {
    const auto a = random_buffer(s.M * s.K, 1), b = random_buffer(s.K * s.N, 2),
               bias = random_buffer(s.N, 3);
    std::vector<float> c(static_cast<size_t>(s.M * s.N));
    float* cp = c.data();
    const double flop = 2.0 * double(s.M) * double(s.N) * double(s.K);
    // Myelin today: RowMajor sgemm with transpose flags, then a bias pass and a ReLU pass.
    auto blas = [&] {
        cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans,
                    s.tb ? CblasTrans : CblasNoTrans, int(s.M), int(s.N), int(s.K), 1.0f, a.data(),
                    int(s.ta ? s.M : s.K), b.data(), int(s.tb ? s.K : s.N), 0.0f, cp, int(s.N));
        if (s.bias)
            for (int64_t r = 0; r < s.M; ++r)
                for (int64_t q = 0; q < s.N; ++q)
                    cp[r * s.N + q] += bias[size_t(q)];
        if (s.relu)
            for (int64_t i = 0; i < s.M * s.N; ++i)
                cp[i] = std::max(cp[i], 0.0f);
    };
    DnnlMatmul mm(s, const_cast<float*>(a.data()), const_cast<float*>(b.data()),
                  const_cast<float*>(bias.data()), cp);
    // Alternated rounds (the machine is shared): the median of each and of the per-round ratio.
    for (int i = 0; i < 20; ++i) {
        blas();
        mm.run();
    }
    std::vector<double> t_blas, t_dnnl, ratio;
    for (int r = 0; r < rounds; ++r) {
        t_blas.push_back(seconds_per_call(blas, ms));
        t_dnnl.push_back(seconds_per_call([&] { mm.run(); }, ms));
        ratio.push_back(t_blas.back() / t_dnnl.back());
    }
    using myelin::bench::median;
    const double us_blas = median(t_blas) * 1e6, us_dnnl = median(t_dnnl) * 1e6;
    std::printf("{\"shape\": \"%s\", \"M\": %lld, \"N\": %lld, \"K\": %lld, \"threads\": %d, "
                "\"openblas_gflops\": %.1f, \"openblas_us\": %.2f, \"onednn_gflops\": %.1f, "
                "\"onednn_us\": %.2f, \"onednn_speedup\": %.2f}\n",
                s.name, (long long)s.M, (long long)s.N, (long long)s.K, threads,
                flop / us_blas * 1e-3, us_blas, flop / us_dnnl * 1e-3, us_dnnl, median(ratio));
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
    int threads = 1, rounds = 5;
    double ms = 200;
    for (int i = 1; i < argc; ++i) {
        auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
        if (!std::strcmp(argv[i], "--threads")) threads = std::max(1, next());
        if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, next());
        if (!std::strcmp(argv[i], "--ms")) ms = std::max(1, next());
    }
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    const int64_t B = 128;
    // Forward y = x W^T (+ bias, ReLU), backward dX = dY W and dW = dY^T X, for each layer;
    // the first layer's dX is not computed in training (the input needs no gradient).
    const Shape shapes[] = {
        {"fc1_fwd", B, 256, 784, false, true, true, true},
        {"fc1_dW", 256, 784, B, true, false, false, false},
        {"fc1_dX", B, 784, 256, false, false, false, false},
        {"fc2_fwd", B, 128, 256, false, true, true, true},
        {"fc2_dX", B, 256, 128, false, false, false, false},
        {"fc2_dW", 128, 256, B, true, false, false, false},
        {"fc3_fwd", B, 10, 128, false, true, true, false},
        {"fc3_dX", B, 128, 10, false, false, false, false},
        {"fc3_dW", 10, 128, B, true, false, false, false},
    };
    for (const Shape& s : shapes)
        bench_shape(s, threads, rounds, ms);
    return 0;
}
