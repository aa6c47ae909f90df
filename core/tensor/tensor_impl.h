#pragma once
// Internal: the data behind a Tensor handle, and helpers the op implementations share.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/tensor.h>

#include "backend/backend.h"

#include <memory>
#include <optional>
#include <vector>

namespace myelin {

// The lowest and highest values of an int64 tensor and the next ones inward (the lowest value
// above `lowest`, the highest below `highest`; equal to them when there is none), so a check can
// set one reserved value aside (a loss's ignore_index). With `bounds_only`, lowest and highest
// are bounds of the values and nothing is known of the next ones.
struct IntValueRange {
    int64_t lowest = 0, next_lowest = 0, next_highest = 0, highest = 0;
    bool bounds_only = false;
    // Every value lies in [lo, hi], values equal to `reserved` aside.
    bool within(int64_t lo, int64_t hi, std::optional<int64_t> reserved = std::nullopt) const {
        if (bounds_only) reserved.reset();
        const bool low =
            lowest >= lo || (reserved == lowest && (next_lowest >= lo || next_lowest == lowest));
        const bool high = highest <= hi ||
                          (reserved == highest && (next_highest <= hi || next_highest == highest));
        return low && high;
    }
};
IntValueRange int_value_range(const int64_t* values, int64_t n); // n > 0

// A block of device memory shared by a tensor and all its views. The version counter lives here
// so an in-place write through any view invalidates values saved for backward from any other.
struct Storage {
    void* data = nullptr;
    size_t nbytes = 0;
    Device device;
    uint32_t version = 0;
    // An integer tensor copied from the host knows the range of its values without reading the
    // device (index, target and label checks would otherwise wait for the device every step).
    // It covers the whole storage, so every view's values lie within it; it holds while
    // `version` is the one it was taken at.
    struct KnownIntValues {
        IntValueRange range;
        uint32_t version = 0;
    };
    std::optional<KnownIntValues> known_values;
    // Small CPU tensors live inside the Storage object itself: one allocation instead of two.
    static constexpr size_t kInlineBytes = 64;
    alignas(16) unsigned char inline_data[kInlineBytes];

    Storage(size_t bytes, Device dev);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
};

struct AutogradMeta {
    std::shared_ptr<TensorImpl> grad;
    std::shared_ptr<autograd::Node> grad_fn;
    std::weak_ptr<autograd::Node> grad_accumulator; // leaves: AccumulateGrad, created lazily
    struct Hook {
        uint64_t id;
        GradHook fn;
    };
    std::vector<Hook> hooks; // leaf gradient hooks (non-leaf hooks live on grad_fn)
    uint64_t next_hook_id = 0;
    uint32_t output_nr = 0;
    bool requires_grad = false;
    bool retains_grad = false;
};

struct TensorImpl {
    std::shared_ptr<Storage> storage;
    Dims shape;
    Dims strides;
    int64_t offset = 0; // in elements
    int64_t numel = 0;
    DType dtype = DType::Float32;
    Device device;
    bool contiguous = true;
    // For views made by view ops: the tensor whose storage this one aliases (the root of a chain
    // of views), so an in-place write through the view can rebase the base's autograd history.
    std::shared_ptr<TensorImpl> view_base;
    // Inline rather than heap-allocated: a tensor that requires grad costs no extra allocation.
    std::optional<AutogradMeta> autograd;

    void* data() const {
        return static_cast<char*>(storage->data) + offset * static_cast<int64_t>(dtype_size(dtype));
    }
    void refresh(); // recompute numel and contiguous after shape/strides change
    AutogradMeta& meta() {
        if (!autograd) autograd.emplace();
        return *autograd;
    }
    bool requires_grad() const { return autograd && autograd->requires_grad; }
};

namespace detail {

Dims contiguous_strides(const Dims& shape);
// Wraps a negative dim and checks the range; `op` names the caller in the message.
int wrap_dim(int dim, int ndim, const char* op);
// A fresh tensor (no autograd) with contiguous layout.
Tensor make_tensor(const Dims& shape, DType dtype, Device device);
// A view of `base`'s storage with the given geometry (no autograd).
Tensor make_view(const Tensor& base, const Dims& shape, const Dims& strides, int64_t offset);
// The same, remembering the root base for in-place autograd (what the view ops return).
Tensor make_alias(const Tensor& base, const Dims& shape, const Dims& strides, int64_t offset);
backend::View view_of(const Tensor& t);
// Copy into a new contiguous tensor of `dtype` without recording autograd.
Tensor raw_convert(const Tensor& src, DType dtype);
// `t` seen with out_shape through broadcasting (0 strides), for kernels.
backend::View broadcast_view(const Tensor& t, const Dims& out_shape);
backend::Backend& backend_for(const Tensor& t);
// The backend of device `d` for `op` ("to"); throws DeviceError "to(cuda:0): <why not>" when it
// has none (the CUDA runtime's reason) or does not serve that index.
backend::Backend& device_backend(const Device& d, const char* op);
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
void bump_version(const Tensor& t);
// An int64 tensor's value range when it is known without reading its memory: on the host never
// (reading is free there), off it when the values came from the host (Storage::known_values).
std::optional<IntValueRange> known_int_values(const Tensor& t);
// Records that the fresh int64 tensor `t`'s values lie in [lo, hi] (known by how it was
// computed), for known_int_values.
void note_int_bounds(const Tensor& t, int64_t lo, int64_t hi);
// The dtype kernels compute in: f16/bf16 -> f32, u8/bool -> i64.
DType compute_dtype(DType t);
// Sums `grad` down to `shape` (undoing broadcasting).
Tensor sum_to(const Tensor& grad, const Dims& shape);
std::string describe(const Tensor& t); // "float32 [2, 3]"
// PyTorch's result_type for two tensors / a tensor and a scalar.
DType result_type(const Tensor& a, const Tensor& b);
DType scalar_result_type(DType t, double s);
// Kernel calls without autograd: inputs converted to `compute`, result converted to `out_dtype`.
Tensor binary_raw(const char* name, backend::BinaryOp op, const Tensor& a, const Tensor& b,
                  DType compute, DType out_dtype, backend::OpParams p = {});
Tensor unary_raw(backend::UnaryOp op, const Tensor& x, DType compute, DType out_dtype,
                 backend::OpParams p = {});

} // namespace detail
} // namespace myelin
