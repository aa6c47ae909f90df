#pragma once
// A test device for machines without a GPU: a backend in the CUDA slot whose memory is host
// memory and whose primitives and NN kernels are the CPU's (the kernels counted per entry), so
// tests can check that ops, tensors and modules reach "the other device" and come back intact.
#include "backend/backend.h"
#include "backend/nn_kernels.h"
#include "backend/train_kernels.h"

#include <map>
#include <string>

namespace test_device {

using namespace myelin;
using backend::Backend;
using backend::NnKernels;
using backend::Primitive;
using backend::View;

inline constexpr Device kTestDevice{DeviceType::CUDA, 0};

// NN kernels that forward to the CPU's, counting calls per entry (and convolutions asked for
// float16 products, "f16"); supports() may refuse bf16 or float16.
class CountingKernels final : public NnKernels {
  public:
    std::map<std::string, int> calls;

    NnKernels& cpu() { return *backend::get(DeviceType::CPU).nn_kernels(); }
    void conv_forward(const backend::ConvGeometry& g, const View& x, const View& w, const View* b,
                      const View& y) override {
        ++calls["conv_forward"];
        calls["f16"] += g.f16;
        cpu().conv_forward(g, x, w, b, y);
    }
    void conv_backward_data(const backend::ConvGeometry& g, const View& gy, const View& w,
                            const View& gx) override {
        ++calls["conv_backward_data"];
        cpu().conv_backward_data(g, gy, w, gx);
    }
    void conv_backward_weights(const backend::ConvGeometry& g, const View& x, const View& gy,
                               const View& gw, const View* gb) override {
        ++calls["conv_backward_weights"];
        cpu().conv_backward_weights(g, x, gy, gw, gb);
    }
    void conv_backward(const backend::ConvGeometry& g, const View& x, const View& w, const View& gy,
                       const View* gx, const View* gw, const View* gb) override {
        ++calls["conv_backward"];
        calls["f16"] += g.f16;
        cpu().conv_backward(g, x, w, gy, gx, gw, gb);
    }
    bool max_pool_uses_codes(const backend::PoolGeometry& g) const override {
        return backend::get(DeviceType::CPU).nn_kernels()->max_pool_uses_codes(g);
    }
    void max_pool_forward(const backend::PoolGeometry& g, const View& x, const View& y,
                          const View* i, const View* c) override {
        ++calls["max_pool_forward"];
        cpu().max_pool_forward(g, x, y, i, c);
    }
    void max_pool_backward(const backend::PoolGeometry& g, const View& gy, const View* i,
                           const View* c, const View& gx) override {
        ++calls["max_pool_backward"];
        cpu().max_pool_backward(g, gy, i, c, gx);
    }
    void avg_pool_forward(const backend::PoolGeometry& g, backend::AvgDivisor d, const View& x,
                          const View& y) override {
        ++calls["avg_pool_forward"];
        cpu().avg_pool_forward(g, d, x, y);
    }
    void avg_pool_backward(const backend::PoolGeometry& g, backend::AvgDivisor d, const View& gy,
                           const View& gx) override {
        ++calls["avg_pool_backward"];
        cpu().avg_pool_backward(g, d, gy, gx);
    }
    void adaptive_avg_pool_forward(const backend::PoolGeometry& g, const View& x,
                                   const View& y) override {
        ++calls["adaptive_avg_pool_forward"];
        cpu().adaptive_avg_pool_forward(g, x, y);
    }
    void adaptive_avg_pool_backward(const backend::PoolGeometry& g, const View& gy,
                                    const View& gx) override {
        ++calls["adaptive_avg_pool_backward"];
        cpu().adaptive_avg_pool_backward(g, gy, gx);
    }
    void batch_norm_stats(const backend::BatchNormGeometry& g, const View& x, const View& m,
                          const View& v) override {
        ++calls["batch_norm_stats"];
        cpu().batch_norm_stats(g, x, m, v);
    }
    void batch_norm_forward(const backend::BatchNormGeometry& g, const View& x, const View* w,
                            const View* b, const View& m, const View& r, const View& y) override {
        ++calls["batch_norm_forward"];
        cpu().batch_norm_forward(g, x, w, b, m, r, y);
    }
    void batch_norm_backward(const backend::BatchNormGeometry& g, const View& x, const View* w,
                             const View& gy, const View& m, const View& r, bool batch_stats,
                             const View* gx, const View* gw, const View* gb) override {
        ++calls["batch_norm_backward"];
        cpu().batch_norm_backward(g, x, w, gy, m, r, batch_stats, gx, gw, gb);
    }
    void row_norm_forward(const backend::RowNormGeometry& g, const View& x, const View* w,
                          const View* b, double eps, const View& y, const View& m,
                          const View& r) override {
        ++calls["row_norm_forward"];
        cpu().row_norm_forward(g, x, w, b, eps, y, m, r);
    }
    void row_norm_backward_input(const backend::RowNormGeometry& g, const View& x, const View* w,
                                 const View& gy, const View& m, const View& r,
                                 const View& gx) override {
        ++calls["row_norm_backward_input"];
        cpu().row_norm_backward_input(g, x, w, gy, m, r, gx);
    }
    void row_norm_backward_affine(const backend::RowNormGeometry& g, const View& x, const View& gy,
                                  const View& m, const View& r, const View& gw,
                                  const View& gb) override {
        ++calls["row_norm_backward_affine"];
        cpu().row_norm_backward_affine(g, x, gy, m, r, gw, gb);
    }
    void recurrent_forward(const backend::RecurrentGeometry& g, const backend::RecurrentWeights& w,
                           const backend::RecurrentForwardArgs& a,
                           const backend::RecurrentSaved& s) override {
        ++calls["recurrent_forward"];
        cpu().recurrent_forward(g, w, a, s);
    }
    void recurrent_backward(const backend::RecurrentGeometry& g, const backend::RecurrentWeights& w,
                            const backend::RecurrentSaved& s,
                            const backend::RecurrentBackwardArgs& a) override {
        ++calls["recurrent_backward"];
        cpu().recurrent_backward(g, w, s, a);
    }
    void head_gemm(const backend::HeadGemmGeometry& g, const backend::HeadOperand& a,
                   const backend::HeadOperand& b, const backend::HeadResult& c) override {
        ++calls["head_gemm"];
        cpu().head_gemm(g, a, b, c);
    }
    void attention_softmax(DType t, const void* x, int64_t rows, int64_t S, void* P,
                           const kernels::DropoutStream* drop, void* attn, uint8_t* keep) override {
        ++calls["attention_softmax"];
        cpu().attention_softmax(t, x, rows, S, P, drop, attn, keep);
    }
    void attention_softmax_backward(DType t, const void* P, const void* dattn, int64_t rows,
                                    int64_t S, const kernels::DropoutStream* drop,
                                    const uint8_t* keep, void* dS) override {
        ++calls["attention_softmax_backward"];
        cpu().attention_softmax_backward(t, P, dattn, rows, S, drop, keep, dS);
    }
    bool matmul(const backend::MatmulGeometry& g, const backend::MatmulOperand& a,
                const backend::MatmulOperand& b, const void* bias, void* y) override {
        ++calls["matmul"];
        return cpu().matmul(g, a, b, bias, y);
    }
};

// A device in the CUDA slot whose memory is host memory: every primitive is the CPU's.
class HostBackedDevice final : public Backend {
  public:
    NnKernels* table = nullptr;
    bool refuse_bf16 = false;
    bool refuse_f16 = false;

    Backend& cpu() const { return backend::get(DeviceType::CPU); }
    DeviceType type() const override { return DeviceType::CUDA; }
    bool host_addressable() const override { return true; } // its memory is host memory
    BackendInfo info() const override { return {DeviceType::CUDA, "Test", "test:0"}; }
    bool supports(Primitive p, DType t) const override {
        if (!table &&
            (p == Primitive::Recurrent || p == Primitive::AttentionHeads || p == Primitive::Matmul))
            return false; // composed, as on CUDA without its NN table
        return !(refuse_bf16 && t == DType::BFloat16) && !(refuse_f16 && t == DType::Float16);
    }
    void* allocate(size_t n) override { return cpu().allocate(n); }
    void deallocate(void* p, size_t n) override { cpu().deallocate(p, n); }
    void copy_from_host(void* d, const void* s, size_t n) override {
        cpu().copy_from_host(d, s, n);
    }
    void copy_to_host(void* d, const void* s, size_t n) override { cpu().copy_to_host(d, s, n); }
    void copy(const View& s, const View& d) override { cpu().copy(s, d); }
    void fill(const View& d, double v) override { cpu().fill(d, v); }
    void unary(backend::UnaryOp op, const View& x, const View& o,
               const backend::OpParams& p) override {
        cpu().unary(op, x, o, p);
    }
    void binary(backend::BinaryOp op, const View& a, const View& b, const View& o,
                const backend::OpParams& p) override {
        cpu().binary(op, a, b, o, p);
    }
    void where(const View& c, const View& a, const View& b, const View& o) override {
        cpu().where(c, a, b, o);
    }
    void reduce(backend::ReduceOp op, const View& x, int dims, const View& o, const View* i,
                const backend::OpParams& p) override {
        cpu().reduce(op, x, dims, o, i, p);
    }
    void softmax(const View& x, int dim, bool log, const View& o) override {
        cpu().softmax(x, dim, log, o);
    }
    void softmax_backward(const View& y, const View& gy, int dim, bool log,
                          const View& gx) override {
        cpu().softmax_backward(y, gy, dim, log, gx);
    }
    void batched_gemm(const View& a, const View& b, const View& c, bool acc) override {
        cpu().batched_gemm(a, b, c, acc);
    }
    void index_select(const View& x, int dim, const View& i, const View& o) override {
        cpu().index_select(x, dim, i, o);
    }
    void gather(const View& x, int dim, const View& i, const View& o) override {
        cpu().gather(x, dim, i, o);
    }
    void scatter_add(const View& s, int dim, const View& i, const View& src) override {
        cpu().scatter_add(s, dim, i, src);
    }
    bool int_range(const View& x, int64_t* lo, int64_t* hi) override {
        return cpu().int_range(x, lo, hi);
    }
    NnKernels* nn_kernels() override { return table; }
    // Host memory: the CPU's training table runs on it as it is.
    backend::TrainKernels* train_kernels() override { return cpu().train_kernels(); }
};

// Registers a test device in the CUDA slot when no real CUDA backend holds it (never destroyed:
// tensors on it may be freed during exit); nullptr when a GPU is present.
inline HostBackedDevice* register_if_no_gpu(CountingKernels** kernels = nullptr) {
    if (backend::find(DeviceType::CUDA)) return nullptr;
    auto* device = new HostBackedDevice;
    auto* counting = new CountingKernels;
    device->table = counting;
    if (kernels) *kernels = counting;
    backend::register_backend(DeviceType::CUDA, device);
    return device;
}

} // namespace test_device
