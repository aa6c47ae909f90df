// linear for float32 CPU tensors on oneDNN's matmul (bench/bench_gemm_shapes.cpp: 10-30% faster
// than OpenBLAS's sgemm on the batch-128 products of an MLP, on one and two threads). Forward is
// one primitive with the bias fused; backward computes dx = g W and dW = g^T x as two more
// primitives that read the transposes through strides (no copies) and db as the column sums of g.
// Primitives are cached per shape and thread count: training reuses the same shapes every step.
#include "autograd/function.h"
#include "backend/backend.h"
#include "nn/dnnl_util.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <omp.h>

namespace myelin::nn::detail {

using autograd::Node;
using autograd::SavedTensor;
using dnnl::memory;
using myelin::detail::make_tensor;
namespace du = myelin::nn::dnnl_util;

namespace {

struct MatmulEntry {
    memory::desc a, b, bias, c;
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
};

du::PrimitiveCache<MatmulEntry>& matmul_cache() {
    static du::PrimitiveCache<MatmulEntry> cache;
    return cache;
}

// A [rows, cols] float32 matrix stored row-major (element (r, c) at r * ld + c) or, when
// `transposed`, column-major (at c * ld + r).
struct Operand {
    const float* data;
    int64_t ld;
    bool transposed;
};

memory::desc desc_of(int64_t rows, int64_t cols, const Operand& o) {
    return memory::desc({rows, cols}, memory::data_type::f32,
                        o.transposed ? memory::dims{1, o.ld} : memory::dims{o.ld, 1});
}

// Below this many multiply-adds a product runs on the calling thread alone, as OpenBLAS does
// (its SMP threshold, 4 x 65536): a thread team's fork and join cost more than they save, and
// on a busy machine every join waits for the partner thread to be scheduled.
constexpr int64_t kSerialMacs = int64_t(1) << 18;

// Sets the calling thread's OpenMP team size for its lifetime, then restores it.
class TeamSize {
  public:
    explicit TeamSize(int threads) : saved_(omp_get_max_threads()) {
        if (threads != saved_) omp_set_num_threads(threads);
    }
    ~TeamSize() {
        if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
    }
    TeamSize(const TeamSize&) = delete;
    TeamSize& operator=(const TeamSize&) = delete;

  private:
    int saved_;
};

// c [M, N] (row-major, contiguous) = a [M, K] @ b [K, N] (+ bias [N] on every row).
void matmul(const Operand& a, const Operand& b, const float* bias, float* c, int64_t M, int64_t N,
            int64_t K) {
    const TeamSize team(M * N * K < kSerialMacs ? 1 : omp_get_max_threads());
    // oneDNN sizes a primitive's work split by the thread count when it is created.
    const int threads = omp_get_max_threads();
    const auto e = matmul_cache().get(
        {M, N, K, a.ld, a.transposed, b.ld, b.transposed, bias != nullptr, threads}, [&] {
            auto entry = std::make_shared<MatmulEntry>();
            entry->a = desc_of(M, K, a);
            entry->b = desc_of(K, N, b);
            entry->c = memory::desc({M, N}, memory::data_type::f32, memory::format_tag::ab);
            entry->bias = memory::desc({1, N}, memory::data_type::f32, memory::format_tag::ab);
            const auto d = bias ? dnnl::matmul::desc(entry->a, entry->b, entry->bias, entry->c)
                                : dnnl::matmul::desc(entry->a, entry->b, entry->c);
            entry->pd = dnnl::matmul::primitive_desc(d, du::user_scratchpad(), du::engine());
            entry->prim = dnnl::matmul(entry->pd);
            return entry;
        });
    auto mem = [](const memory::desc& md, const float* p) {
        return memory(md, du::engine(), const_cast<float*>(p));
    };
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(e->a, a.data)},
                                         {DNNL_ARG_WEIGHTS, mem(e->b, b.data)},
                                         {DNNL_ARG_DST, mem(e->c, c)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, mem(e->bias, bias));
    const Tensor scratch = du::add_scratchpad(e->pd.scratchpad_desc(), args);
    e->prim.execute(du::stream(), args);
    du::stream().wait();
}

// The weight [N, K] as oneDNN reads it: row-major, or the transpose of a row-major [K, N] (a
// tied or transposed weight); anything else is copied once.
Tensor plain_weight(const Tensor& w) {
    const bool row_major = w.stride(1) == 1 && w.stride(0) >= w.size(1);
    const bool col_major = w.stride(0) == 1 && w.stride(1) >= w.size(0);
    return row_major || col_major ? w : w.contiguous();
}

Operand weight_operand(const Tensor& w, bool as_transpose) {
    const bool col_major = w.stride(1) != 1;
    const int64_t ld = col_major ? w.stride(1) : w.stride(0);
    return {w.data<float>(), ld, col_major != as_transpose};
}

} // namespace

bool linear_f32_applies(const Tensor& x, const Tensor& w, const Tensor& b) {
    // oneDNN reads host memory: the CPU's, or that of a host-backed device (the test device
    // that stands in for a GPU), which then computes the CPU's bits.
    const auto cpu_f32 = [](const Tensor& t) {
        if (t.dtype() != DType::Float32) return false;
        if (t.device().is_cpu()) return true;
        const backend::Backend* b = backend::find(t.device().type);
        return b != nullptr && b->host_addressable();
    };
    return cpu_f32(x) && cpu_f32(w) && (!b.defined() || cpu_f32(b)) && x.numel() > 0 &&
           w.numel() > 0;
}

Tensor linear_f32(const Tensor& x, const Tensor& w, const Tensor& b) {
    const int64_t K = w.size(1), N = w.size(0), M = x.numel() / K;
    const Tensor xc = x.detach().contiguous();
    const Tensor wp = plain_weight(w.detach());
    const Tensor bc = b.defined() ? b.detach().contiguous() : Tensor();
    Dims out_shape = x.shape();
    out_shape[out_shape.size() - 1] = N;
    Tensor y = make_tensor(out_shape, DType::Float32, x.device());
    // y [M, N] = x [M, K] @ w^T [K, N] + b
    matmul({xc.data<float>(), K, false}, weight_operand(wp, true),
           bc.defined() ? bc.data<float>() : nullptr, y.data<float>(), M, N, K);
    if (autograd::needs_grad({&x, &w, &b}))
        autograd::record(b.defined() ? "AddmmBackward0" : "MmBackward0", {&x, &w, &b}, y,
                         [sx = SavedTensor(x), sw = SavedTensor(w), in_shape = x.shape(), M, N,
                          K](const Tensor& grad, const Node& n) {
                             const Tensor g = grad.contiguous();
                             TensorList r(3);
                             if (n.needs_input_grad(0)) { // dx [M, K] = g [M, N] @ w [N, K]
                                 const Tensor wv = plain_weight(sw.unpack(n).detach());
                                 Tensor dx = make_tensor(in_shape, DType::Float32, g.device());
                                 matmul({g.data<float>(), N, false}, weight_operand(wv, false),
                                        nullptr, dx.data<float>(), M, K, N);
                                 r[0] = dx;
                             }
                             if (n.needs_input_grad(1)) { // dW [N, K] = g^T [N, M] @ x [M, K]
                                 const Tensor xv = sx.unpack(n).detach().contiguous();
                                 Tensor dw = make_tensor({N, K}, DType::Float32, g.device());
                                 matmul({g.data<float>(), N, true}, {xv.data<float>(), K, false},
                                        nullptr, dw.data<float>(), N, K, M);
                                 r[1] = dw;
                             }
                             if (n.needs_input_grad(2)) r[2] = g.view({M, N}).sum({0});
                             return r;
                         });
    return y;
}

} // namespace myelin::nn::detail
