#pragma once
// A test device whose memory the host cannot read by accident: a backend in the CUDA slot that
// keeps its data in host memory but hands out pointers moved into the non-canonical half of the
// x86-64 address space (tag 2^62 added), which no host load or store can reach: a direct read of
// a tensor's memory anywhere in the program (data<T>() on a device tensor) crashes the test
// instead of passing silently. Its kernels take the tag off and run the CPU's kernels, so a run
// on it is the CPU's bit for bit; it reports host_addressable() == false, exactly like CUDA.
// It also fails as a GPU can when a test asks (`faults`): an allocation out of memory, a kernel
// with a device error, or the whole device gone.
#include "backend/backend.h"
#include "backend/device_allocator.h"
#include "backend/nn_kernels.h"
#include "backend/train_kernels.h"

#include <myelin/error.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace opaque_device {

using namespace myelin;
using backend::Backend;
using backend::NnKernels;
using backend::TrainKernels;
using backend::View;

inline constexpr uintptr_t kTag = uintptr_t(1) << 62;

// Every time the host waits for the device's data: a copy to the host, or a kernel whose result
// the host reads (a norm, an index range). On a GPU each one stalls the host until the device
// has caught up, so a training step should make as few as it can.
inline int64_t host_reads = 0;
// Reads the host waits for later (copy_to_host_later, a training step's loss): how many were
// waited for, and how many of those waits came before any more work was queued after the copy
// (on a GPU the device would have idled while the host waited).
inline int64_t later_reads = 0;
inline int64_t later_reads_waited_idle = 0;
// Kernels queued so far (element-wise, reductions, GEMMs, copies).
inline int64_t queued_work = 0;
// The run-wide numerics the trainer last set (Backend::set_deterministic / set_allow_tf32).
inline bool deterministic = false;
inline bool allow_tf32 = false;
// Blocks allocated and not yet freed (a run that leaks its tensors leaves some behind).
inline std::atomic<int64_t> live_allocations{0};

// Injected faults, counted from when they were set (set them from a callback to let a run reach a
// checkpoint first); 0: off. What the device throws is what the CUDA backend throws for the same
// fault: OutOfMemoryError naming the device, a DeviceError naming the operation.
struct Faults {
    int64_t fail_allocation = 0; // the Nth allocation fails: out of memory
    int64_t fail_kernel = 0;     // the Nth kernel launch fails (a device-side error)
    int64_t disappear = 0;       // from the Nth call on (allocation, copy, kernel) every one fails
    int64_t allocations = 0;     // counted since set
    int64_t kernels = 0;
    int64_t calls = 0;
    int64_t injected = 0; // faults thrown so far
};
inline Faults faults;
inline constexpr const char* kName = "opaque:0";

inline void fail_if_gone(const char* what) {
    if (faults.disappear > 0 && ++faults.calls >= faults.disappear) {
        ++faults.injected;
        throw DeviceError(std::string(kName) + ": " + what +
                          ": the device is gone (fell off the bus; injected fault)");
    }
}
// Before every kernel launch (element-wise, reductions, GEMMs, device copies, NN and training
// kernels).
inline void launch(const char* kernel) {
    fail_if_gone(kernel);
    if (faults.fail_kernel > 0 && ++faults.kernels == faults.fail_kernel) {
        ++faults.injected;
        throw DeviceError(std::string(kName) + ": " + kernel +
                          " failed: an illegal memory access was encountered (injected fault)");
    }
}
inline void allocation(size_t bytes) {
    fail_if_gone("allocate");
    if (faults.fail_allocation > 0 && ++faults.allocations == faults.fail_allocation) {
        ++faults.injected;
        throw backend::OutOfMemoryError(std::string(kName) +
                                        " is out of memory: tried to allocate " +
                                        std::to_string(bytes) + " bytes (injected fault)");
    }
}

class LaterRead final : public backend::HostRead {
  public:
    LaterRead() : work_at_copy_(queued_work) {}
    ~LaterRead() override { wait(); }
    void wait() override {
        if (waited_) return;
        waited_ = true;
        ++later_reads;
        if (queued_work == work_at_copy_) ++later_reads_waited_idle;
    }

  private:
    int64_t work_at_copy_;
    bool waited_ = false;
};

inline void* tag(void* p) {
    return p ? reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) + kTag) : nullptr;
}
inline void* untag(const void* p) {
    return p ? reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) - kTag) : nullptr;
}
// The view with its data pointer untagged; `u(&v)` for an optional one.
inline View u(const View& v) {
    View o = v;
    o.data = untag(v.data);
    return o;
}
struct Opt {
    View v;
    const View* p = nullptr;
    explicit Opt(const View* src) {
        if (src) {
            v = u(*src);
            p = &v;
        }
    }
};

inline Backend& cpu() {
    return backend::get(DeviceType::CPU);
}

// The CPU's NN kernels over untagged views, counting calls per entry.
class OpaqueNnKernels final : public NnKernels {
  public:
    std::map<std::string, int> calls;
    void count(const char* kernel) {
        launch(kernel);
        ++calls[kernel];
    }
    NnKernels& c() { return *cpu().nn_kernels(); }
    void conv_forward(const backend::ConvGeometry& g, const View& x, const View& w, const View* b,
                      const View& y) override {
        count("conv_forward");
        c().conv_forward(g, u(x), u(w), Opt(b).p, u(y));
    }
    void conv_backward_data(const backend::ConvGeometry& g, const View& gy, const View& w,
                            const View& gx) override {
        count("conv_backward_data");
        c().conv_backward_data(g, u(gy), u(w), u(gx));
    }
    void conv_backward_weights(const backend::ConvGeometry& g, const View& x, const View& gy,
                               const View& gw, const View* gb) override {
        count("conv_backward_weights");
        c().conv_backward_weights(g, u(x), u(gy), u(gw), Opt(gb).p);
    }
    void conv_backward(const backend::ConvGeometry& g, const View& x, const View& w, const View& gy,
                       const View* gx, const View* gw, const View* gb) override {
        count("conv_backward");
        c().conv_backward(g, u(x), u(w), u(gy), Opt(gx).p, Opt(gw).p, Opt(gb).p);
    }
    bool max_pool_uses_codes(const backend::PoolGeometry& g) const override {
        return cpu().nn_kernels()->max_pool_uses_codes(g);
    }
    void max_pool_forward(const backend::PoolGeometry& g, const View& x, const View& y,
                          const View* i, const View* cd) override {
        count("max_pool_forward");
        c().max_pool_forward(g, u(x), u(y), Opt(i).p, Opt(cd).p);
    }
    void max_pool_backward(const backend::PoolGeometry& g, const View& gy, const View* i,
                           const View* cd, const View& gx) override {
        count("max_pool_backward");
        c().max_pool_backward(g, u(gy), Opt(i).p, Opt(cd).p, u(gx));
    }
    void avg_pool_forward(const backend::PoolGeometry& g, backend::AvgDivisor d, const View& x,
                          const View& y) override {
        count("avg_pool_forward");
        c().avg_pool_forward(g, d, u(x), u(y));
    }
    void avg_pool_backward(const backend::PoolGeometry& g, backend::AvgDivisor d, const View& gy,
                           const View& gx) override {
        count("avg_pool_backward");
        c().avg_pool_backward(g, d, u(gy), u(gx));
    }
    void adaptive_avg_pool_forward(const backend::PoolGeometry& g, const View& x,
                                   const View& y) override {
        count("adaptive_avg_pool_forward");
        c().adaptive_avg_pool_forward(g, u(x), u(y));
    }
    void adaptive_avg_pool_backward(const backend::PoolGeometry& g, const View& gy,
                                    const View& gx) override {
        count("adaptive_avg_pool_backward");
        c().adaptive_avg_pool_backward(g, u(gy), u(gx));
    }
    void batch_norm_stats(const backend::BatchNormGeometry& g, const View& x, const View& m,
                          const View& v) override {
        count("batch_norm_stats");
        c().batch_norm_stats(g, u(x), u(m), u(v));
    }
    void batch_norm_forward(const backend::BatchNormGeometry& g, const View& x, const View* w,
                            const View* b, const View& m, const View& r, const View& y) override {
        count("batch_norm_forward");
        c().batch_norm_forward(g, u(x), Opt(w).p, Opt(b).p, u(m), u(r), u(y));
    }
    void batch_norm_backward(const backend::BatchNormGeometry& g, const View& x, const View* w,
                             const View& gy, const View& m, const View& r, bool batch_stats,
                             const View* gx, const View* gw, const View* gb) override {
        count("batch_norm_backward");
        c().batch_norm_backward(g, u(x), Opt(w).p, u(gy), u(m), u(r), batch_stats, Opt(gx).p,
                                Opt(gw).p, Opt(gb).p);
    }
    void row_norm_forward(const backend::RowNormGeometry& g, const View& x, const View* w,
                          const View* b, double eps, const View& y, const View& m,
                          const View& r) override {
        count("row_norm_forward");
        c().row_norm_forward(g, u(x), Opt(w).p, Opt(b).p, eps, u(y), u(m), u(r));
    }
    void row_norm_backward_input(const backend::RowNormGeometry& g, const View& x, const View* w,
                                 const View& gy, const View& m, const View& r,
                                 const View& gx) override {
        count("row_norm_backward_input");
        c().row_norm_backward_input(g, u(x), Opt(w).p, u(gy), u(m), u(r), u(gx));
    }
    void row_norm_backward_affine(const backend::RowNormGeometry& g, const View& x, const View& gy,
                                  const View& m, const View& r, const View& gw,
                                  const View& gb) override {
        count("row_norm_backward_affine");
        c().row_norm_backward_affine(g, u(x), u(gy), u(m), u(r), u(gw), u(gb));
    }
};

// An update's statistics request with its sums view untagged; `p` is null for none.
struct Stats {
    backend::UpdateStatsOut out;
    const backend::UpdateStatsOut* p = nullptr;
    explicit Stats(const backend::UpdateStatsOut* src) {
        if (src) {
            out = *src;
            out.sums = u(src->sums);
            p = &out;
        }
    }
};

// The CPU's training kernels over untagged views, counting calls per entry.
class OpaqueTrainKernels final : public TrainKernels {
  public:
    std::map<std::string, int> calls;
    void count(const char* kernel) {
        launch(kernel);
        ++calls[kernel];
    }
    TrainKernels& c() { return *cpu().train_kernels(); }
    void sgd_step(const backend::SgdStep& a, const View& w, const View& g, const View* m,
                  const backend::UpdateStatsOut* s) override {
        count("sgd_step");
        c().sgd_step(a, u(w), u(g), Opt(m).p, Stats(s).p);
    }
    void adam_step(const backend::AdamStep& a, const View& w, const View& g, const View& m,
                   const View& v, const View* vmax, const backend::UpdateStatsOut* s) override {
        count("adam_step");
        c().adam_step(a, u(w), u(g), u(m), u(v), Opt(vmax).p, Stats(s).p);
    }
    void rmsprop_step(const backend::RmspropStep& a, const View& w, const View& g, const View& sq,
                      const View* ga, const View* m, const backend::UpdateStatsOut* s) override {
        count("rmsprop_step");
        c().rmsprop_step(a, u(w), u(g), u(sq), Opt(ga).p, Opt(m).p, Stats(s).p);
    }
    void adagrad_step(const backend::AdagradStep& a, const View& w, const View& g, const View& sum,
                      const backend::UpdateStatsOut* s) override {
        count("adagrad_step");
        c().adagrad_step(a, u(w), u(g), u(sum), Stats(s).p);
    }
    void class_loss_forward(const backend::ClassLossGeometry& p, const View& x, const View& t,
                            const View* w, const View& out, const View& lse,
                            const View& den) override {
        count("class_loss_forward");
        c().class_loss_forward(p, u(x), u(t), Opt(w).p, u(out), u(lse), u(den));
    }
    void class_loss_backward(const backend::ClassLossGeometry& p, const View& x, const View& t,
                             const View* w, const View& lse, const View& den, const View& gy,
                             const View& gx) override {
        count("class_loss_backward");
        c().class_loss_backward(p, u(x), u(t), Opt(w).p, u(lse), u(den), u(gy), u(gx));
    }
    void class_scores(const View& x, const View& t, const View& out) override {
        count("class_scores");
        c().class_scores(u(x), u(t), u(out));
    }
    void dropout_forward(uint64_t seed, double p, const View& x, const View& out,
                         const View& mask) override {
        count("dropout_forward");
        c().dropout_forward(seed, p, u(x), u(out), u(mask));
    }
    void dropout_backward(uint64_t seed, double p, const View& g, const View& mask,
                          const View& gx) override {
        count("dropout_backward");
        c().dropout_backward(seed, p, u(g), u(mask), u(gx));
    }
    // Writes the sum on the device: no read (the caller's copy of the sums is counted).
    void norm_accumulate(const View& x, double p, const View& out) override {
        count("norm_accumulate");
        c().norm_accumulate(u(x), p, u(out));
    }
    void scale_(const View& x, double scale) override {
        count("scale_");
        c().scale_(u(x), scale);
    }
};

// The device: every primitive is the CPU's over untagged views.
class OpaqueDevice final : public Backend {
  public:
    OpaqueNnKernels nn;
    OpaqueTrainKernels train;

    DeviceType type() const override { return DeviceType::CUDA; }
    bool host_addressable() const override { return false; } // as CUDA
    // The sequence entries (whole recurrent layers, attention heads, linear's matmul) stay off,
    // as on a CUDA build without its NN table: nn/ composes those layers from the entries here,
    // which so stay tested against the CPU's fused kernels.
    bool supports(backend::Primitive p, DType) const override {
        return p != backend::Primitive::Recurrent && p != backend::Primitive::AttentionHeads &&
               p != backend::Primitive::Matmul;
    }
    BackendInfo info() const override { return {DeviceType::CUDA, "Opaque", kName}; }
    void* allocate(size_t n) override {
        allocation(n);
        void* p = tag(cpu().allocate(n));
        if (p) ++live_allocations;
        return p;
    }
    // Never fails, gone or not: destructors free tensors (as the CUDA backend's caching
    // allocator takes a block back without calling the device).
    void deallocate(void* p, size_t n) override {
        if (p) --live_allocations;
        cpu().deallocate(untag(p), n);
    }
    void copy_from_host(void* d, const void* s, size_t n) override {
        fail_if_gone("copy_from_host");
        cpu().copy_from_host(untag(d), s, n);
    }
    void copy_to_host(void* d, const void* s, size_t n) override {
        fail_if_gone("copy_to_host");
        ++host_reads;
        cpu().copy_to_host(d, untag(s), n);
    }
    // The bytes are there at once (every kernel here has run); the wait is counted.
    std::unique_ptr<backend::HostRead> copy_to_host_later(void* d, const void* s,
                                                          size_t n) override {
        fail_if_gone("copy_to_host_later");
        cpu().copy_to_host(d, untag(s), n);
        return std::make_unique<LaterRead>();
    }
    void copy(const View& s, const View& d) override {
        launch("copy");
        ++queued_work;
        cpu().copy(u(s), u(d));
    }
    void fill(const View& d, double v) override {
        launch("fill");
        ++queued_work;
        cpu().fill(u(d), v);
    }
    void unary(backend::UnaryOp op, const View& x, const View& o,
               const backend::OpParams& p) override {
        launch("unary");
        ++queued_work;
        cpu().unary(op, u(x), u(o), p);
    }
    void binary(backend::BinaryOp op, const View& a, const View& b, const View& o,
                const backend::OpParams& p) override {
        launch("binary");
        ++queued_work;
        cpu().binary(op, u(a), u(b), u(o), p);
    }
    void where(const View& c, const View& a, const View& b, const View& o) override {
        launch("where");
        cpu().where(u(c), u(a), u(b), u(o));
    }
    void reduce(backend::ReduceOp op, const View& x, int dims, const View& o, const View* i,
                const backend::OpParams& p) override {
        launch("reduce");
        ++queued_work;
        cpu().reduce(op, u(x), dims, u(o), Opt(i).p, p);
    }
    void softmax(const View& x, int dim, bool log, const View& o) override {
        launch("softmax");
        cpu().softmax(u(x), dim, log, u(o));
    }
    void softmax_backward(const View& y, const View& gy, int dim, bool log,
                          const View& gx) override {
        launch("softmax_backward");
        cpu().softmax_backward(u(y), u(gy), dim, log, u(gx));
    }
    // As cuBLAS: each matrix row- or column-major with a leading dimension at least its vectors'
    // length (the CPU's GEMM would take more: an expanded operand with a 0 stride). Written here
    // on its own, not with backend/gemm_layout.h: it checks that rule.
    void batched_gemm(const View& a, const View& b, const View& c, bool acc) override {
        launch("batched_gemm");
        ++queued_work;
        for (const View* m : {&a, &b}) {
            const int64_t rows = m->shape[1], cols = m->shape[2], s1 = m->strides[1],
                          s2 = m->strides[2];
            const bool row = (s2 == 1 || cols == 1) && (rows == 1 || s1 >= cols);
            const bool col = (s1 == 1 || rows == 1) && (cols == 1 || s2 >= rows);
            if (!row && !col)
                throw DeviceError("opaque batched_gemm: an operand of strides (" +
                                  std::to_string(s1) + ", " + std::to_string(s2) +
                                  ") that cuBLAS cannot read");
        }
        cpu().batched_gemm(u(a), u(b), u(c), acc);
    }
    void index_select(const View& x, int dim, const View& i, const View& o) override {
        launch("index_select");
        cpu().index_select(u(x), dim, u(i), u(o));
    }
    void gather(const View& x, int dim, const View& i, const View& o) override {
        launch("gather");
        cpu().gather(u(x), dim, u(i), u(o));
    }
    void scatter_add(const View& s, int dim, const View& i, const View& src) override {
        launch("scatter_add");
        cpu().scatter_add(u(s), dim, u(i), u(src));
    }
    bool int_range(const View& x, int64_t* lo, int64_t* hi) override {
        launch("int_range");
        ++host_reads;
        return cpu().int_range(u(x), lo, hi);
    }
    NnKernels* nn_kernels() override { return &nn; }
    TrainKernels* train_kernels() override { return &train; }
    void set_deterministic(bool on) override { opaque_device::deterministic = on; }
    void set_allow_tf32(bool on) override { opaque_device::allow_tf32 = on; }
};

// Registers the opaque device in the CUDA slot when no real CUDA backend holds it (never
// destroyed: tensors on it may be freed during exit); nullptr when a GPU is present. A process
// holds one device in the slot: use it or the host-backed one, not both.
inline OpaqueDevice* register_if_no_gpu() {
    if (backend::find(DeviceType::CUDA)) return nullptr;
    auto* device = new OpaqueDevice;
    backend::register_backend(DeviceType::CUDA, device);
    return device;
}

} // namespace opaque_device
