#pragma once
// Tensor: a cheap handle (one shared_ptr) to a TensorImpl {storage, shape, strides, offset,
// dtype, device, autograd meta}. Views share storage; math follows PyTorch's names, broadcasting
// and type promotion; every differentiable op records a node for define-by-run autograd.
#include <myelin/device.h>
#include <myelin/dims.h>
#include <myelin/dtype.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace myelin {

struct TensorImpl;
class Generator;
namespace autograd {
class Node;
}

struct TensorOptions {
    DType dtype = DType::Float32;
    Device device = kCPU;
    bool requires_grad = false;

    TensorOptions() = default;
    TensorOptions(DType d) : dtype(d) {}
    TensorOptions(Device dev) : device(dev) {}
    TensorOptions with_dtype(DType d) const {
        auto o = *this;
        o.dtype = d;
        return o;
    }
    TensorOptions with_device(Device d) const {
        auto o = *this;
        o.device = d;
        return o;
    }
    TensorOptions with_requires_grad(bool r = true) const {
        auto o = *this;
        o.requires_grad = r;
        return o;
    }
};

// Returned by every register_*_hook; remove() unregisters (idempotent). Dropping the handle does
// not remove the hook, as in PyTorch.
class HookHandle {
  public:
    HookHandle() = default;
    explicit HookHandle(std::function<void()> remover) : remover_(std::move(remover)) {}
    void remove() {
        if (remover_) std::exchange(remover_, nullptr)();
    }

  private:
    std::function<void()> remover_;
};

class Tensor;
using TensorList = std::vector<Tensor>;
// A gradient hook may return an undefined Tensor (keep the gradient) or a replacement.
using GradHook = std::function<Tensor(const Tensor& grad)>;

struct ValuesIndices; // max/min along a dim

class Tensor {
  public:
    Tensor() = default;
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

    bool defined() const { return impl_ != nullptr; }
    TensorImpl* impl() const { return impl_.get(); }
    const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
    bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

    // --- metadata ---
    const Dims& shape() const;
    const Dims& sizes() const { return shape(); }
    int64_t size(int dim) const;
    const Dims& strides() const;
    int64_t stride(int dim) const;
    int64_t storage_offset() const;
    int dim() const;
    int64_t numel() const;
    DType dtype() const;
    Device device() const;
    TensorOptions options() const;
    size_t element_size() const;
    bool is_contiguous() const;
    bool is_floating_point() const { return is_floating(dtype()); }
    void* data_ptr() const; // first element (storage + offset)
    template <typename T> T* data() const { return static_cast<T*>(data_ptr()); }
    bool shares_storage(const Tensor& o) const;

    // --- autograd ---
    bool requires_grad() const;
    Tensor& requires_grad_(bool on = true);
    bool is_leaf() const;
    Tensor grad() const;
    void set_grad(const Tensor& g);
    std::shared_ptr<autograd::Node> grad_fn() const;
    void backward(const Tensor& gradient = {}, bool retain_graph = false) const;
    void retain_grad() const;
    bool retains_grad() const;
    Tensor detach() const;
    Tensor& detach_();
    HookHandle register_hook(GradHook hook) const;
    uint32_t version() const; // bumped by every in-place op on the storage

    // --- conversion / copies ---
    Tensor to(DType t) const;
    Tensor to(Device d) const;
    Tensor clone() const;
    Tensor contiguous() const;
    double item() const;
    template <typename T> T item() const { return static_cast<T>(item()); }
    template <typename T> std::vector<T> to_vector() const; // float, double, int64_t, uint8_t, bool
    std::string str() const; // printed like PyTorch: tensor([1., 2.], requires_grad=True)

    // --- views (share storage) ---
    Tensor view(const Dims& shape) const;
    Tensor reshape(const Dims& shape) const;
    Tensor permute(const Dims& order) const;
    Tensor transpose(int d0, int d1) const;
    Tensor t() const;
    Tensor squeeze() const;
    Tensor squeeze(int dim) const;
    Tensor unsqueeze(int dim) const;
    Tensor flatten(int start_dim = 0, int end_dim = -1) const;
    Tensor unflatten(int dim, const Dims& sizes) const;
    Tensor expand(const Dims& shape) const;
    Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
    Tensor narrow(int dim, int64_t start, int64_t length) const;
    // Python's x[start:end:step] along dim; negative start/end count from the end, clamped.
    Tensor slice(int dim, std::optional<int64_t> start, std::optional<int64_t> end,
                 int64_t step = 1) const;
    Tensor select(int dim, int64_t index) const;
    Tensor operator[](int64_t index) const { return select(0, index); }

    // --- in-place (bump the version counter) ---
    Tensor& add_(const Tensor& other, double alpha = 1.0);
    Tensor& add_(double value);
    Tensor& sub_(const Tensor& other, double alpha = 1.0);
    Tensor& sub_(double value);
    Tensor& mul_(const Tensor& other);
    Tensor& mul_(double value);
    Tensor& div_(const Tensor& other);
    Tensor& div_(double value);
    Tensor& zero_();
    Tensor& fill_(double value);
    Tensor& copy_(const Tensor& src);
    Tensor& clamp_(std::optional<double> min, std::optional<double> max);
    Tensor& uniform_(double from = 0.0, double to = 1.0, Generator* gen = nullptr);
    Tensor& normal_(double mean = 0.0, double std = 1.0, Generator* gen = nullptr);

    // --- method forms of common functions ---
    Tensor sum() const;
    Tensor sum(const Dims& dims, bool keepdim = false) const;
    Tensor mean() const;
    Tensor mean(const Dims& dims, bool keepdim = false) const;
    Tensor exp() const;
    Tensor log() const;
    Tensor abs() const;
    Tensor sqrt() const;
    Tensor neg() const;
    Tensor relu() const;
    Tensor sigmoid() const;
    Tensor tanh() const;
    Tensor pow(double exponent) const;
    Tensor matmul(const Tensor& other) const;
    Tensor argmax(std::optional<int> dim = std::nullopt, bool keepdim = false) const;
    Tensor softmax(int dim) const;
    Tensor log_softmax(int dim) const;
    std::vector<Tensor> split(int64_t split_size, int dim = 0) const;
    std::vector<Tensor> chunk(int64_t chunks, int dim = 0) const;

  private:
    std::shared_ptr<TensorImpl> impl_;
};

struct ValuesIndices {
    Tensor values;
    Tensor indices;
};

// ---------------------------------------------------------------------------------------------
// Creation
Tensor empty(const Dims& shape, TensorOptions opts = {});
Tensor zeros(const Dims& shape, TensorOptions opts = {});
Tensor ones(const Dims& shape, TensorOptions opts = {});
Tensor full(const Dims& shape, double value, TensorOptions opts = {});
Tensor scalar_tensor(double value, TensorOptions opts = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
Tensor rand_like(const Tensor& t, Generator* gen = nullptr);
Tensor randn_like(const Tensor& t, Generator* gen = nullptr);
// arange(end) / arange(start, end, step): int64 unless opts say otherwise or a bound is fractional
Tensor arange(double end, std::optional<TensorOptions> opts = std::nullopt);
Tensor arange(double start, double end, double step = 1.0,
              std::optional<TensorOptions> opts = std::nullopt);
Tensor linspace(double start, double end, int64_t steps, TensorOptions opts = {});
Tensor eye(int64_t n, int64_t m = -1, TensorOptions opts = {});
// Copies `count` elements of type `src_dtype` from `data` into a new tensor of `shape`.
Tensor from_blob(const void* data, DType src_dtype, const Dims& shape, TensorOptions opts = {});
Tensor from_vector(const std::vector<float>& values, const Dims& shape, TensorOptions opts = {});
Tensor from_vector(const std::vector<double>& values, const Dims& shape,
                   TensorOptions opts = DType::Float64);
Tensor from_vector(const std::vector<int64_t>& values, const Dims& shape,
                   TensorOptions opts = DType::Int64);
// tensor({1, 2, 3}) and tensor({{1, 2}, {3, 4}}): float32 unless opts say otherwise.
Tensor tensor(std::initializer_list<double> values, TensorOptions opts = {});
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, TensorOptions opts = {});

// Random (from the default generator unless one is given)
Tensor rand(const Dims& shape, TensorOptions opts = {}, Generator* gen = nullptr);
Tensor randn(const Dims& shape, TensorOptions opts = {}, Generator* gen = nullptr);
Tensor randint(int64_t low, int64_t high, const Dims& shape, TensorOptions opts = DType::Int64,
               Generator* gen = nullptr);
Tensor randperm(int64_t n, TensorOptions opts = DType::Int64, Generator* gen = nullptr);
Tensor bernoulli(const Tensor& probabilities, Generator* gen = nullptr);
Tensor bernoulli(const Dims& shape, double p, TensorOptions opts = {}, Generator* gen = nullptr);

// ---------------------------------------------------------------------------------------------
// Element-wise (broadcasting, PyTorch type promotion)
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor sub(const Tensor& a, double b);
Tensor rsub(const Tensor& a, double b); // b - a
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, double b);
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor pow(const Tensor& a, double exponent);
Tensor pow(double base, const Tensor& exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor square(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor gelu(const Tensor& x, std::string_view approximate = "none"); // "none" | "tanh"
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);

// Comparisons return bool tensors.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
Tensor isfinite(const Tensor& x);
Tensor logical_not(const Tensor& x);

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// ---------------------------------------------------------------------------------------------
// Reductions. An empty `dims` means all dimensions. Negative dims count from the end.
Tensor sum(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor var(const Tensor& x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
Tensor std(const Tensor& x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
Tensor amax(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor max(const Tensor& x); // over all elements
Tensor min(const Tensor& x);
ValuesIndices max(const Tensor& x, int dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int dim, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int> dim = std::nullopt, bool keepdim = false);
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false);
Tensor softmax(const Tensor& x, int dim);
Tensor log_softmax(const Tensor& x, int dim);
// p-norm (p = 2 by default; inf and 0 supported) over dims.
Tensor norm(const Tensor& x, double p = 2.0, const Dims& dims = {}, bool keepdim = false);

// ---------------------------------------------------------------------------------------------
// Linear algebra (OpenBLAS sgemm/dgemm on CPU). matmul broadcasts batch dims like PyTorch.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);

// ---------------------------------------------------------------------------------------------
// Indexing, joining, splitting
Tensor index_select(const Tensor& x, int dim, const Tensor& index);
Tensor gather(const Tensor& x, int dim, const Tensor& index);
Tensor scatter_add(const Tensor& x, int dim, const Tensor& index, const Tensor& src);
Tensor cat(const TensorList& tensors, int dim = 0);
Tensor stack(const TensorList& tensors, int dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim = 0);

// Shape helpers
Dims broadcast_shapes(const Dims& a, const Dims& b);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
bool equal(const Tensor& a, const Tensor& b); // same shape and values

// Operators
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);

std::ostream& operator<<(std::ostream& os, const Tensor& t);

} // namespace myelin
