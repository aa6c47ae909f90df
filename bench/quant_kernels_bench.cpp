// int8 kernels (quant/kernels.h) against the float32 path at fashion_cnn's sizes, batch 256:
// conv 1->32 3x3 pad 1 + ReLU + 2x2 max pool on 28x28, conv 32->64 + ReLU + pool, linear
// 3136->128 + ReLU, linear 128->10. One process runs one path (`f32` or `int8`) over `part`
// (`conv`: both conv + pool stages, `linear`: both linears, `all`: the whole stack) for N
// batches, so a whole-process timer compares the two (the set-up is the same small cost in
// both). It also prints its own steady-clock time per batch.
//
//   quant_kernels_bench f32|int8 conv|linear|all [batches=40]
//
// Built as build/bench/myelin_quant_kernels_bench.
#include <myelin/autograd.h>
#include <myelin/generator.h>
#include <myelin/nn/functional.h>
#include <myelin/quant/kernels.h>
#include <myelin/quant/quantize.h>
#include <myelin/tensor.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using myelin::Tensor;
namespace F = myelin::nn::functional;
namespace quant = myelin::quant;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s f32|int8 conv|linear|all [batches]\n", argv[0]);
        return 2;
    }
    const std::string path = argv[1], part = argv[2];
    const int batches = argc > 3 ? std::atoi(argv[3]) : 40;
    const bool conv = part != "linear", linear = part != "conv";
    myelin::autograd::NoGradGuard no_grad;
    myelin::Generator gen(1);
    const int64_t N = 256;
    const Tensor x = myelin::rand({N, 1, 28, 28}, {}, &gen);
    const Tensor w1 = myelin::randn({32, 1, 3, 3}, {}, &gen) * 0.3,
                 b1 = myelin::randn({32}, {}, &gen) * 0.1;
    const Tensor w2 = myelin::randn({64, 32, 3, 3}, {}, &gen) * 0.06,
                 b2 = myelin::randn({64}, {}, &gen) * 0.1;
    const Tensor w3 = myelin::randn({128, 3136}, {}, &gen) * 0.02,
                 b3 = myelin::randn({128}, {}, &gen) * 0.1;
    const Tensor w4 = myelin::randn({10, 128}, {}, &gen) * 0.1,
                 b4 = myelin::randn({10}, {}, &gen) * 0.1;
    const Tensor flat = myelin::rand({N, 3136}, {}, &gen); // the linear-only input

    F::Conv2dOptions co;
    co.padding = {1, 1};
    F::Pool2dOptions po;
    const auto q1 = quant::quantize_weight_per_channel(w1),
               q2 = quant::quantize_weight_per_channel(w2);
    const auto q3 = quant::quantize_weight_per_channel(w3),
               q4 = quant::quantize_weight_per_channel(w4);
    quant::Conv2dOptions qco;
    qco.padding = {1, 1};
    // Output parameters as a calibration would give them (ReLU outputs from 0).
    const quant::QParams in_q{1.0f / 255, 0}, c1_q{0.01f, 0}, c2_q{0.02f, 0}, l3_q{0.05f, 0};

    double checksum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < batches; ++i) {
        if (path == "f32") {
            Tensor h = conv ? x : flat;
            if (conv) {
                h = F::max_pool2d(myelin::relu(F::conv2d(h, w1, b1, co)), po);
                h = F::max_pool2d(myelin::relu(F::conv2d(h, w2, b2, co)), po);
                h = h.flatten(1);
            }
            if (linear) h = F::linear(myelin::relu(F::linear(h, w3, b3)), w4, b4);
            checksum += h.sum().item();
        } else {
            quant::QTensor h = quant::quantize_per_tensor(conv ? x : flat, in_q);
            if (conv) {
                h = quant::quantized_max_pool2d(quant::quantized_conv2d(h, q1, b1, qco, true, c1_q),
                                                {2, 2}, {2, 2});
                h = quant::quantized_max_pool2d(quant::quantized_conv2d(h, q2, b2, qco, true, c2_q),
                                                {2, 2}, {2, 2});
                h.data = h.data.reshape({N, 3136}); // NCHW order, as the float flatten
            }
            if (linear) {
                const quant::QTensor h3 = quant::quantized_linear(h, q3, b3, true, l3_q);
                checksum += quant::quantized_linear_f32(h3, q4, b4, false).sum().item();
            } else {
                checksum += double(h.data.to(myelin::DType::Float32).sum().item());
            }
        }
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s %s: %.3f ms per batch of %lld (%d batches; checksum %.3g)\n", path.c_str(),
                part.c_str(), ms / batches, static_cast<long long>(N), batches, checksum);
    return 0;
}
