#pragma once
// A one-element tensor's value, read from its device without waiting for the work queued after
// the read: the copy is queued behind the work that computes the value and the host goes on
// (queueing more: a training step queues its backward pass); value() then waits for that copy
// alone. Tensor::item() would wait at once, and the device would idle while the host reads the
// value and queues what comes next. On the host the value is read at construction.
#include <myelin/tensor.h>

#include <memory>
#include <optional>

namespace myelin {

namespace backend {
class HostRead;
}

class PendingItem {
  public:
    // Throws as item() does when `scalar` has not exactly one element.
    explicit PendingItem(const Tensor& scalar);
    ~PendingItem();
    PendingItem(PendingItem&&) noexcept;
    PendingItem& operator=(PendingItem&&) noexcept;

    // The value (as item()); the first call waits for the copy, later ones return at once.
    double value() const;

  private:
    Tensor host_; // where the copy lands (one element on the CPU)
    mutable std::unique_ptr<backend::HostRead> read_;
    mutable std::optional<double> value_;
};

} // namespace myelin
