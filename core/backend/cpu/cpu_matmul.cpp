#include "backend/cpu/dnnl_scratch.h"

#include "backend/cpu/cpu_matmul.h"
#include "backend/cpu/cpu_nn.h"

#include <omp.h>

#include <unordered_map>

namespace myelin::backend::cpu {

namespace du = myelin::backend::dnnl_util;
using dnnl::memory;

namespace {

// A cached matmul primitive and its operands' descriptions (bias: none when empty).
struct MatmulEntry {
    memory::desc a, b, bias, y;
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
};

// Runs `e` on the operands at a, b (, bias) and y, with a scratchpad of its own.
void execute(const MatmulEntry& e, const void* a, const void* b, const void* bias, void* y) {
    auto mem = [](const memory::desc& md, const void* p) {
        return memory(md, du::engine(), const_cast<void*>(p));
    };
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, mem(e.a, a)}, {DNNL_ARG_WEIGHTS, mem(e.b, b)}, {DNNL_ARG_DST, mem(e.y, y)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, mem(e.bias, bias));
    const Tensor scratch = du::add_scratchpad(e.pd.scratchpad_desc(), args);
    e.prim.execute(du::stream(), args);
    du::stream().wait();
}

} // namespace

bool onednn_matmul(int64_t M, int64_t N, int64_t K, GemmOperand<float> a, GemmOperand<float> b,
                   const float* bias, float* y, int64_t ldy, bool accumulate) {
    const du::TeamSize team(M * N * K < du::kSerialMacs ? 1 : omp_get_max_threads());
    // oneDNN sizes a primitive's work split by the thread count when it is created.
    const int threads = omp_get_max_threads();
    std::shared_ptr<MatmulEntry> e;
    try {
        static du::PrimitiveCache<MatmulEntry> cache;
        e = cache.get({M, N, K, a.rs, a.cs, b.rs, b.cs, ldy, bias ? 1 : 0, accumulate, threads},
                      [&] {
                          const auto f32 = memory::data_type::f32;
                          auto m = std::make_shared<MatmulEntry>();
                          m->a = memory::desc({M, K}, f32, memory::dims{a.rs, a.cs});
                          m->b = memory::desc({K, N}, f32, memory::dims{b.rs, b.cs});
                          m->y = memory::desc({M, N}, f32, memory::dims{ldy, 1});
                          if (bias) m->bias = memory::desc({1, N}, f32, memory::dims{N, 1});
                          dnnl::primitive_attr attr = du::user_scratchpad();
                          if (accumulate) {
                              dnnl::post_ops ops;
                              ops.append_sum(1.0f);
                              attr.set_post_ops(ops);
                          }
                          m->pd = dnnl::matmul::primitive_desc(
                              bias ? dnnl::matmul::desc(m->a, m->b, m->bias, m->y)
                                   : dnnl::matmul::desc(m->a, m->b, m->y),
                              attr, du::engine());
                          m->prim = dnnl::matmul(m->pd);
                          return m;
                      });
    } catch (const dnnl::error&) {
        return false;
    }
    execute(*e, a.p, b.p, bias, y);
    return true;
}

bool onednn_matmul_bf16(int64_t M, int64_t N, int64_t K, GemmOperand<uint16_t> a,
                        GemmOperand<uint16_t> b, float* c) {
    if (!du::bf16_supported()) return false;
    std::shared_ptr<MatmulEntry> e;
    try {
        static du::PrimitiveCache<MatmulEntry> cache;
        e = cache.get({M, N, K, a.rs, a.cs, b.rs, b.cs}, [&] {
            const auto bf16 = memory::data_type::bf16;
            auto m = std::make_shared<MatmulEntry>();
            m->a = memory::desc({M, K}, bf16, memory::dims{a.rs, a.cs});
            m->b = memory::desc({K, N}, bf16, memory::dims{b.rs, b.cs});
            m->y = memory::desc({M, N}, memory::data_type::f32, memory::dims{N, 1});
            m->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(m->a, m->b, m->y),
                                                 du::user_scratchpad(), du::engine());
            m->prim = dnnl::matmul(m->pd);
            return m;
        });
    } catch (const dnnl::error&) {
        return false;
    }
    execute(*e, a.p, b.p, nullptr, c);
    return true;
}

} // namespace myelin::backend::cpu

namespace myelin::backend {

bool CpuNnKernels::matmul(const MatmulGeometry& g, const MatmulOperand& a, const MatmulOperand& b,
                          const void* bias, void* y) {
    if (g.dtype != DType::Float32) return false;
    return cpu::onednn_matmul(g.M, g.N, g.K, {static_cast<const float*>(a.p), a.rs, a.cs},
                              {static_cast<const float*>(b.p), b.rs, b.cs},
                              static_cast<const float*>(bias), static_cast<float*>(y), g.ldy,
                              g.accumulate);
}

} // namespace myelin::backend
