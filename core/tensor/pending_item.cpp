#include <myelin/pending_item.h>

#include "backend/backend.h"
#include "tensor/tensor_impl.h"

#include <string>

namespace myelin {

PendingItem::PendingItem(const Tensor& scalar) {
    if (scalar.numel() != 1)
        throw Error("a Tensor with " + std::to_string(scalar.numel()) +
                    " elements cannot be converted to a scalar (item() needs exactly one)");
    if (scalar.device().is_cpu()) {
        value_ = scalar.item();
        return;
    }
    const Tensor src = scalar.detach().contiguous();
    host_ = detail::make_tensor({}, src.dtype(), kCPU);
    read_ = detail::backend_for(src).copy_to_host_later(host_.data_ptr(), src.data_ptr(),
                                                        src.element_size());
}

PendingItem::~PendingItem() = default;
PendingItem::PendingItem(PendingItem&&) noexcept = default;
PendingItem& PendingItem::operator=(PendingItem&&) noexcept = default;

double PendingItem::value() const {
    if (value_) return *value_;
    if (read_) {
        read_->wait(); // a device error throws here, and again on the next call
        read_.reset();
    }
    value_ = host_.item();
    return *value_;
}

} // namespace myelin
