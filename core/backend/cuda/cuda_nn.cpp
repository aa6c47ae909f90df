// The CUDA backend's NN-kernel table, host side: convolutions on cuDNN's legacy API (cudnn.h of
// cuDNN 9: still shipped, deprecated without warnings unless CUDNN_WARN_DEPRECATED), pooling and
// normalisation forwarded to the kernels of cuda_nn.cu. Compiled with the toolkit; not run here.
#include "backend/cuda/cuda_nn.h"

#include <myelin/error.h>

#include <cudnn.h>

#include <climits>
#include <cstddef>
#include <string>

namespace myelin::backend::cuda {

namespace {

void check(cudnnStatus_t status, const char* what) {
    if (status != CUDNN_STATUS_SUCCESS)
        throw DeviceError(std::string("cuDNN ") + what + ": " + cudnnGetErrorString(status));
}

cudnnDataType_t data_type(DType t) {
    return t == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

int as_int(int64_t v) {
    if (v > INT_MAX) throw DeviceError("convolution on CUDA: a size beyond 2^31 - 1");
    return int(v);
}

// Device memory for one call's workspace, from the device's caching allocator. Freed blocks go
// back to the cache; work is ordered on the default stream, so a later user waits for this one.
class Workspace {
  public:
    Workspace(Backend& device, size_t bytes) : device_(device), bytes_(bytes) {
        if (bytes_) data_ = device_.allocate(bytes_);
    }
    ~Workspace() {
        if (data_) device_.deallocate(data_, bytes_);
    }
    Workspace(const Workspace&) = delete;
    Workspace& operator=(const Workspace&) = delete;
    void* data() const { return data_; }
    size_t size() const { return bytes_; }

  private:
    Backend& device_;
    size_t bytes_ = 0;
    void* data_ = nullptr;
};

// A float16 copy of a contiguous float32 view, in device memory from the caching allocator
// (ConvGeometry::f16: cuDNN's half convolutions read and write float16). `copy_in`: converted
// from `v` now (an operand); otherwise left for the convolution to write (an output).
class HalfCopy {
  public:
    HalfCopy(Backend& device, const View& v, bool copy_in)
        : buffer_(device, size_t(v.numel()) * 2), view_(v) {
        view_.data = buffer_.data();
        view_.dtype = DType::Float16;
        if (copy_in) device.copy(v, view_);
    }
    void* data() const { return view_.data; }
    const View& view() const { return view_; }

  private:
    Workspace buffer_;
    View view_;
};

// The first algorithm cuDNN's heuristics rank that can run (and is deterministic when asked).
template <typename Perf> const Perf* pick(const Perf* perf, int count, bool deterministic) {
    for (int i = 0; i < count; ++i)
        if (perf[i].status == CUDNN_STATUS_SUCCESS &&
            (!deterministic || perf[i].determinism == CUDNN_DETERMINISTIC))
            return &perf[i];
    return nullptr;
}

[[noreturn]] void no_algorithm(const char* pass, bool deterministic) {
    throw DeviceError(std::string(pass) + " on CUDA: cuDNN has no " +
                      (deterministic ? "deterministic " : "") +
                      "algorithm for this convolution geometry");
}

} // namespace

// One geometry's descriptors and chosen algorithms. x, w and y describe what cuDNN convolves
// (float16 for ConvGeometry::f16); y_out and bias the caller's float32 / float64 output and bias.
struct CudaNnKernels::ConvPlan {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, y_out = nullptr, bias = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    DType dtype = DType::Float32; // the caller's operands
    bool half = false;            // float16 products (ConvGeometry::f16)
    bool deterministic = false;   // only deterministic algorithms
    std::once_flag fwd_once, data_once, filter_once;
    cudnnConvolutionFwdAlgo_t fwd{};
    cudnnConvolutionBwdDataAlgo_t data{};
    cudnnConvolutionBwdFilterAlgo_t filter{};
    size_t fwd_bytes = 0, data_bytes = 0, filter_bytes = 0;

    ~ConvPlan() {
        if (x) cudnnDestroyTensorDescriptor(x);
        if (y) cudnnDestroyTensorDescriptor(y);
        if (y_out) cudnnDestroyTensorDescriptor(y_out);
        if (bias) cudnnDestroyTensorDescriptor(bias);
        if (w) cudnnDestroyFilterDescriptor(w);
        if (conv) cudnnDestroyConvolutionDescriptor(conv);
    }
};

CudaNnKernels::CudaNnKernels(Backend& device) : device_(device) {}

CudaNnKernels::~CudaNnKernels() {
    if (cudnn_) cudnnDestroy(static_cast<cudnnHandle_t>(cudnn_));
}

void* CudaNnKernels::handle() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!cudnn_) {
        cudnnHandle_t h = nullptr;
        check(cudnnCreate(&h), "create");
        cudnn_ = h;
    }
    return cudnn_;
}

void CudaNnKernels::set_allow_tf32(bool allow) {
    std::lock_guard<std::mutex> lock(mutex_);
    allow_tf32_ = allow;
}

void CudaNnKernels::set_deterministic(bool deterministic) {
    std::lock_guard<std::mutex> lock(mutex_);
    deterministic_ = deterministic;
}

std::shared_ptr<CudaNnKernels::ConvPlan> CudaNnKernels::plan(const ConvGeometry& g, DType dtype) {
    if (g.bf16) throw DeviceError("conv_forward on bfloat16 is not supported by the CUDA backend");
    if (g.f16 && dtype != DType::Float32)
        throw DeviceError("convolution on CUDA: float16 products of " +
                          std::string(dtype_name(dtype)) + " operands (only float32 ones)");
    if (!g.symmetric_padding())
        throw DeviceError("convolution on CUDA: padding " + std::to_string(g.ph) + "x" +
                          std::to_string(g.pw) + " that is not the same on both sides (" +
                          std::to_string(g.phr()) + "x" + std::to_string(g.pwr()) +
                          " on the right: padding='same' with an even kernel, or output_padding "
                          ">= stride) is not supported by the CUDA backend (cuDNN pads both sides "
                          "alike)");
    std::lock_guard<std::mutex> lock(mutex_);
    const std::vector<int64_t> key{g.N,  g.C,  g.H,        g.W,         g.O,   g.KH,          g.KW,
                                   g.OH, g.OW, g.sh,       g.sw,        g.dh,  g.dw,          g.ph,
                                   g.pw, g.G,  int(dtype), allow_tf32_, g.f16, deterministic_};
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
    auto p = std::make_shared<ConvPlan>();
    p->dtype = dtype;
    p->half = g.f16;
    p->deterministic = deterministic_;
    // Half products: float16 operands and output, float32 accumulation (cuDNN's "pseudo half"
    // configuration, as PyTorch's autocast convolutions).
    const cudnnDataType_t outer = data_type(dtype);
    const cudnnDataType_t t = p->half ? CUDNN_DATA_HALF : outer;
    check(cudnnCreateTensorDescriptor(&p->x), "tensor descriptor");
    check(cudnnCreateTensorDescriptor(&p->y), "tensor descriptor");
    check(cudnnCreateTensorDescriptor(&p->y_out), "tensor descriptor");
    check(cudnnCreateTensorDescriptor(&p->bias), "tensor descriptor");
    check(cudnnCreateFilterDescriptor(&p->w), "filter descriptor");
    check(cudnnCreateConvolutionDescriptor(&p->conv), "convolution descriptor");
    check(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, t, as_int(g.N), as_int(g.C),
                                     as_int(g.H), as_int(g.W)),
          "input descriptor");
    check(cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, t, as_int(g.N), as_int(g.O),
                                     as_int(g.OH), as_int(g.OW)),
          "output descriptor");
    check(cudnnSetTensor4dDescriptor(p->y_out, CUDNN_TENSOR_NCHW, outer, as_int(g.N), as_int(g.O),
                                     as_int(g.OH), as_int(g.OW)),
          "output descriptor");
    check(cudnnSetTensor4dDescriptor(p->bias, CUDNN_TENSOR_NCHW, outer, 1, as_int(g.O), 1, 1),
          "bias descriptor");
    check(cudnnSetFilter4dDescriptor(p->w, t, CUDNN_TENSOR_NCHW, as_int(g.O), as_int(g.C / g.G),
                                     as_int(g.KH), as_int(g.KW)),
          "weight descriptor");
    check(cudnnSetConvolution2dDescriptor(p->conv, as_int(g.ph), as_int(g.pw), as_int(g.sh),
                                          as_int(g.sw), as_int(g.dh), as_int(g.dw),
                                          CUDNN_CROSS_CORRELATION, outer),
          "convolution geometry");
    check(cudnnSetConvolutionGroupCount(p->conv, as_int(g.G)), "group count");
    // FMA math keeps float32 convolutions off TF32 tensor cores unless allowed; half products
    // are what tensor cores are for.
    const cudnnMathType_t math = p->half                   ? CUDNN_TENSOR_OP_MATH
                                 : dtype == DType::Float64 ? CUDNN_DEFAULT_MATH
                                 : allow_tf32_             ? CUDNN_TENSOR_OP_MATH
                                                           : CUDNN_FMA_MATH;
    check(cudnnSetConvolutionMathType(p->conv, math), "math type");
    plans_.emplace(key, p);
    return p;
}

void CudaNnKernels::conv_forward(const ConvGeometry& g, const View& x, const View& w,
                                 const View* bias, const View& y) {
    const auto p = plan(g, x.dtype);
    auto* h = static_cast<cudnnHandle_t>(handle());
    std::call_once(p->fwd_once, [&] {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int count = 0;
        check(cudnnGetConvolutionForwardAlgorithm_v7(
                  h, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf),
              "forward algorithm");
        const auto* best = pick(perf, count, p->deterministic);
        if (!best) no_algorithm("conv_forward", p->deterministic);
        p->fwd = best->algo;
        check(cudnnGetConvolutionForwardWorkspaceSize(h, p->x, p->w, p->conv, p->y, p->fwd,
                                                      &p->fwd_bytes),
              "forward workspace size");
    });
    const Workspace ws(device_, p->fwd_bytes);
    const double one = 1.0, zero = 0.0;
    const float onef = 1.0f, zerof = 0.0f;
    const bool f64 = p->dtype == DType::Float64;
    const void* alpha = f64 ? static_cast<const void*>(&one) : &onef;
    const void* beta = f64 ? static_cast<const void*>(&zero) : &zerof;
    if (p->half) { // the float16 output, converted into y
        const HalfCopy xh(device_, x, true), wh(device_, w, true);
        const HalfCopy yh(device_, y, false);
        check(cudnnConvolutionForward(h, alpha, p->x, xh.data(), p->w, wh.data(), p->conv, p->fwd,
                                      ws.data(), ws.size(), beta, p->y, yh.data()),
              "convolution forward");
        device_.copy(yh.view(), y);
    } else {
        check(cudnnConvolutionForward(h, alpha, p->x, x.data, p->w, w.data, p->conv, p->fwd,
                                      ws.data(), ws.size(), beta, p->y, y.data),
              "convolution forward");
    }
    if (bias) check(cudnnAddTensor(h, alpha, p->bias, bias->data, alpha, p->y_out, y.data), "bias");
}

void CudaNnKernels::conv_backward_data(const ConvGeometry& g, const View& grad_y, const View& w,
                                       const View& grad_x) {
    const auto p = plan(g, grad_y.dtype);
    auto* h = static_cast<cudnnHandle_t>(handle());
    std::call_once(p->data_once, [&] {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        int count = 0;
        check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p->w, p->y, p->conv, p->x,
                                                          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                          &count, perf),
              "backward-data algorithm");
        const auto* best = pick(perf, count, p->deterministic);
        if (!best) no_algorithm("conv_backward_data", p->deterministic);
        p->data = best->algo;
        check(cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->w, p->y, p->conv, p->x, p->data,
                                                           &p->data_bytes),
              "backward-data workspace size");
    });
    const Workspace ws(device_, p->data_bytes);
    const double one = 1.0, zero = 0.0;
    const float onef = 1.0f, zerof = 0.0f;
    const bool f64 = p->dtype == DType::Float64;
    const void* alpha = f64 ? static_cast<const void*>(&one) : &onef;
    const void* beta = f64 ? static_cast<const void*>(&zero) : &zerof;
    if (p->half) {
        const HalfCopy gyh(device_, grad_y, true), wh(device_, w, true);
        const HalfCopy gxh(device_, grad_x, false);
        check(cudnnConvolutionBackwardData(h, alpha, p->w, wh.data(), p->y, gyh.data(), p->conv,
                                           p->data, ws.data(), ws.size(), beta, p->x, gxh.data()),
              "convolution backward data");
        device_.copy(gxh.view(), grad_x);
        return;
    }
    check(cudnnConvolutionBackwardData(h, alpha, p->w, w.data, p->y, grad_y.data, p->conv, p->data,
                                       ws.data(), ws.size(), beta, p->x, grad_x.data),
          "convolution backward data");
}

void CudaNnKernels::conv_backward_weights(const ConvGeometry& g, const View& x, const View& grad_y,
                                          const View& grad_w, const View* grad_bias) {
    const auto p = plan(g, x.dtype);
    auto* h = static_cast<cudnnHandle_t>(handle());
    std::call_once(p->filter_once, [&] {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        int count = 0;
        check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p->x, p->y, p->conv, p->w,
                                                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                            &count, perf),
              "backward-weights algorithm");
        const auto* best = pick(perf, count, p->deterministic);
        if (!best) no_algorithm("conv_backward_weights", p->deterministic);
        p->filter = best->algo;
        check(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->x, p->y, p->conv, p->w,
                                                             p->filter, &p->filter_bytes),
              "backward-weights workspace size");
    });
    const Workspace ws(device_, p->filter_bytes);
    const double one = 1.0, zero = 0.0;
    const float onef = 1.0f, zerof = 0.0f;
    const bool f64 = p->dtype == DType::Float64;
    const void* alpha = f64 ? static_cast<const void*>(&one) : &onef;
    const void* beta = f64 ? static_cast<const void*>(&zero) : &zerof;
    if (p->half) { // the float16 weight gradient, converted into grad_w
        const HalfCopy xh(device_, x, true), gyh(device_, grad_y, true);
        const HalfCopy gwh(device_, grad_w, false);
        check(cudnnConvolutionBackwardFilter(h, alpha, p->x, xh.data(), p->y, gyh.data(), p->conv,
                                             p->filter, ws.data(), ws.size(), beta, p->w,
                                             gwh.data()),
              "convolution backward weights");
        device_.copy(gwh.view(), grad_w);
    } else {
        check(cudnnConvolutionBackwardFilter(h, alpha, p->x, x.data, p->y, grad_y.data, p->conv,
                                             p->filter, ws.data(), ws.size(), beta, p->w,
                                             grad_w.data),
              "convolution backward weights");
    }
    // The bias gradient sums the caller's float32 output gradient.
    if (grad_bias)
        check(cudnnConvolutionBackwardBias(h, alpha, p->y_out, grad_y.data, beta, p->bias,
                                           grad_bias->data),
              "convolution backward bias");
}

// --- pooling and normalisation: the kernels of cuda_nn.cu ------------------------------------

void CudaNnKernels::max_pool_forward(const PoolGeometry& g, const View& x, const View& y,
                                     const View* indices, const View* codes) {
    (void)codes; // max_pool_uses_codes() is false: the backward reads indices
    launch_max_pool_forward(g, x, y, indices);
}
void CudaNnKernels::max_pool_backward(const PoolGeometry& g, const View& grad_y,
                                      const View* indices, const View* codes, const View& grad_x) {
    (void)codes;
    if (!indices) throw DeviceError("max_pool2d backward on CUDA: the forward kept no indices");
    launch_max_pool_backward(g, grad_y, *indices, grad_x);
}
void CudaNnKernels::avg_pool_forward(const PoolGeometry& g, AvgDivisor d, const View& x,
                                     const View& y) {
    launch_avg_pool_forward(g, d, false, x, y);
}
void CudaNnKernels::avg_pool_backward(const PoolGeometry& g, AvgDivisor d, const View& grad_y,
                                      const View& grad_x) {
    launch_avg_pool_backward(g, d, false, grad_y, grad_x);
}
void CudaNnKernels::adaptive_avg_pool_forward(const PoolGeometry& g, const View& x, const View& y) {
    launch_avg_pool_forward(g, {}, true, x, y);
}
void CudaNnKernels::adaptive_avg_pool_backward(const PoolGeometry& g, const View& grad_y,
                                               const View& grad_x) {
    launch_avg_pool_backward(g, {}, true, grad_y, grad_x);
}
void CudaNnKernels::batch_norm_stats(const BatchNormGeometry& g, const View& x, const View& mean,
                                     const View& var) {
    launch_batch_norm_stats(g, x, mean, var);
}
void CudaNnKernels::batch_norm_forward(const BatchNormGeometry& g, const View& x, const View* w,
                                       const View* b, const View& mean, const View& rstd,
                                       const View& y) {
    launch_batch_norm_forward(g, x, w, b, mean, rstd, y);
}
void CudaNnKernels::batch_norm_backward(const BatchNormGeometry& g, const View& x, const View* w,
                                        const View& grad_y, const View& mean, const View& rstd,
                                        bool batch_stats, const View* grad_x, const View* grad_w,
                                        const View* grad_b) {
    launch_batch_norm_backward(g, x, w, grad_y, mean, rstd, batch_stats, grad_x, grad_w, grad_b);
}
void CudaNnKernels::row_norm_forward(const RowNormGeometry& g, const View& x, const View* w,
                                     const View* b, double eps, const View& y, const View& mean,
                                     const View& rstd) {
    launch_row_norm_forward(g, x, w, b, eps, y, mean, rstd);
}
void CudaNnKernels::row_norm_backward_input(const RowNormGeometry& g, const View& x, const View* w,
                                            const View& grad_y, const View& mean, const View& rstd,
                                            const View& grad_x) {
    launch_row_norm_backward_input(g, x, w, grad_y, mean, rstd, grad_x);
}
void CudaNnKernels::row_norm_backward_affine(const RowNormGeometry& g, const View& x,
                                             const View& grad_y, const View& mean, const View& rstd,
                                             const View& grad_w, const View& grad_b) {
    launch_row_norm_backward_affine(g, x, grad_y, mean, rstd, grad_w, grad_b);
}

} // namespace myelin::backend::cuda
