#include <myelin/pending_item.h>

#include "backend/backend.h"
#include "tensor/tensor_impl.h"

namespace myelin {

PendingItem::PendingItem(const Tensor& scalar) {
    // On the host, read now; a wrong size gets item()'s error (it checks before reading).
    if (scalar.device().is_cpu() || scalar.numel() != 1) {
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
