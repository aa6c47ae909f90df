#include <myelin/autograd.h>
#include <myelin/device.h>
#include <myelin/dist/tensor_collectives.h>
#include <myelin/error.h>

#include <chrono>
#include <cstring>

namespace myelin::dist {

namespace {

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void require_reachable(const Tensor& t, const Communicator& comm, const char* what) {
    if (!comm.reaches(t.device()))
        throw Error(std::string(what) + ": tensors on " + t.device().str() +
                    " need a communicator that reaches that device (GPU ranks: NCCL); " +
                    comm.backend() + " takes host memory");
}

uint64_t fnv1a(const unsigned char* bytes, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ bytes[i]) * 1099511628211ull;
    return h;
}

} // namespace

GradientBuckets::GradientBuckets(std::vector<Tensor> parameters, int64_t bucket_bytes)
    : parameters_(std::move(parameters)) {
    if (bucket_bytes <= 0) throw Error("bucket size must be positive");
    where_.resize(parameters_.size());
    if (!parameters_.empty()) device_ = parameters_.front().device();
    for (size_t k = parameters_.size(); k-- > 0;) {
        const Tensor& p = parameters_[k];
        if (p.device() != device_)
            throw Error("gradient averaging: parameters on " + device_.str() + " and " +
                        p.device().str() + "; a rank trains on one device");
        const DType dtype = p.dtype();
        if (dtype != DType::Float32 && dtype != DType::Float64)
            throw Error(std::string("gradient averaging: parameter dtype ") + dtype_name(dtype) +
                        " is not supported (float32, float64)");
        const int64_t bytes = p.numel() * int64_t(dtype_size(dtype));
        if (buckets_.empty() || buckets_.back().dtype != dtype ||
            (buckets_.back().count > 0 &&
             (buckets_.back().count * int64_t(dtype_size(dtype)) + bytes > bucket_bytes)))
            buckets_.push_back(Bucket{dtype, {}, {}, {}, Tensor(), 0, 0, nullptr});
        Bucket& b = buckets_.back();
        where_[k] = {buckets_.size() - 1, b.parameters.size()};
        b.parameters.push_back(k);
        b.offsets.push_back(b.count);
        b.count += p.numel();
    }
    // Host buckets on the CPU; on a GPU, device buckets packed with the device's copies (the
    // NCCL communicator reduces them in place).
    for (Bucket& b : buckets_)
        if (device_.is_cpu())
            b.buffer.resize(size_t(b.count) * dtype_size(b.dtype));
        else
            b.device = zeros({b.count}, TensorOptions(device_).with_dtype(b.dtype));
    fired_.assign(parameters_.size(), 0);
}

int64_t GradientBuckets::bytes() const {
    int64_t total = 0;
    for (const Bucket& b : buckets_)
        total += b.count * int64_t(dtype_size(b.dtype));
    return total;
}

void* GradientBuckets::data(Bucket& b) {
    return b.device.defined() ? b.device.data_ptr() : static_cast<void*>(b.buffer.data());
}

void GradientBuckets::pack(Bucket& b, size_t slot, const Tensor& gradient) {
    const Tensor& p = parameters_[b.parameters[slot]];
    if (b.device.defined()) {
        autograd::NoGradGuard no_grad;
        Tensor to = b.device.narrow(0, b.offsets[slot], p.numel());
        if (!gradient.defined())
            to.zero_();
        else
            to.copy_(gradient.reshape({p.numel()}));
        return;
    }
    const size_t element = dtype_size(b.dtype);
    unsigned char* to = b.buffer.data() + size_t(b.offsets[slot]) * element;
    const size_t n = size_t(p.numel()) * element;
    if (!gradient.defined()) {
        std::memset(to, 0, n);
        return;
    }
    Tensor g = gradient.dtype() == b.dtype ? gradient : gradient.to(b.dtype);
    if (!g.is_contiguous()) g = g.contiguous();
    std::memcpy(to, g.data_ptr(), n);
}

void GradientBuckets::pack_from_grads(Bucket& b) {
    for (size_t slot = 0; slot < b.parameters.size(); ++slot)
        pack(b, slot, parameters_[b.parameters[slot]].grad());
}

void GradientBuckets::begin_step() {
    std::fill(fired_.begin(), fired_.end(), 0);
    for (Bucket& b : buckets_) {
        b.ready = 0;
        b.pending.reset();
    }
}

void GradientBuckets::gradient_ready(size_t index, const Tensor& incoming, Communicator& comm) {
    if (!overlap_ok_ || comm.size() == 1) return;
    const auto [bucket, slot] = where_[index];
    Bucket& b = buckets_[bucket];
    if (++fired_[index] == 1) {
        // .grad after this accumulation: the incoming gradient, added to what is there (the
        // same float addition AccumulateGrad does next).
        const Tensor existing = parameters_[index].grad();
        pack(b, slot, existing.defined() ? existing + incoming : incoming);
        if (++b.ready == b.parameters.size())
            b.pending = comm.start_allreduce_sum(data(b), b.count, b.dtype);
    }
    // MPI progresses non-blocking collectives inside MPI calls: nudge the started ones.
    for (Bucket& other : buckets_)
        if (other.pending) other.pending->test();
}

void GradientBuckets::average(Communicator& comm) {
    begin_step();
    finish(comm);
}

void GradientBuckets::finish(Communicator& comm) {
    if (comm.size() == 1) return;
    if (!comm.reaches(device_))
        throw Error("gradient averaging: parameters on " + device_.str() +
                    " need a "
                    "communicator that reaches that device (GPU ranks: NCCL); " +
                    comm.backend() + " takes host memory");
    const double t0 = now_seconds();
    // A bucket whose parameters' hooks did not each run exactly once is packed again from .grad
    // (after its started allreduce, if any, completes everywhere: every rank started it).
    std::vector<bool> redo(buckets_.size(), false);
    for (size_t i = 0; i < buckets_.size(); ++i) {
        Bucket& b = buckets_[i];
        if (b.pending) ++timing_.buckets_started_in_backward;
        for (size_t k : b.parameters)
            redo[i] = redo[i] || (b.pending && fired_[k] != 1);
        if (redo[i]) overlap_ok_ = false;
        if (!b.pending) {
            pack_from_grads(b);
            b.pending = comm.start_allreduce_sum(data(b), b.count, b.dtype);
        }
    }
    const double t1 = now_seconds();
    for (Bucket& b : buckets_)
        b.pending->wait();
    for (size_t i = 0; i < buckets_.size(); ++i)
        if (redo[i]) {
            pack_from_grads(buckets_[i]);
            comm.allreduce_sum(data(buckets_[i]), buckets_[i].count, buckets_[i].dtype);
        }
    const double t2 = now_seconds();
    const double scale = 1.0 / double(comm.size());
    for (Bucket& b : buckets_) {
        b.pending.reset();
        if (b.device.defined()) { // on the GPU: scale and copy back with the device's ops
            autograd::NoGradGuard no_grad;
            b.device.mul_(scale);
            for (size_t i = 0; i < b.parameters.size(); ++i) {
                Tensor& p = parameters_[b.parameters[i]];
                const Tensor from = b.device.narrow(0, b.offsets[i], p.numel()).view(p.shape());
                Tensor g = p.grad();
                if (g.defined())
                    g.copy_(from);
                else
                    p.set_grad(from.clone());
            }
            continue;
        }
        const size_t element = dtype_size(b.dtype);
        if (b.dtype == DType::Float32) {
            float* v = reinterpret_cast<float*>(b.buffer.data());
            for (int64_t i = 0; i < b.count; ++i)
                v[i] = float(double(v[i]) * scale);
        } else {
            double* v = reinterpret_cast<double*>(b.buffer.data());
            for (int64_t i = 0; i < b.count; ++i)
                v[i] *= scale;
        }
        for (size_t i = 0; i < b.parameters.size(); ++i) {
            Tensor& p = parameters_[b.parameters[i]];
            const unsigned char* from = b.buffer.data() + size_t(b.offsets[i]) * element;
            Tensor g = p.grad();
            if (g.defined() && g.is_contiguous())
                std::memcpy(g.data_ptr(), from, size_t(p.numel()) * element);
            else
                p.set_grad(
                    from_blob(from, b.dtype, p.shape(), p.options().with_requires_grad(false)));
        }
    }
    timing_.pack_seconds += t1 - t0;
    timing_.wait_seconds += t2 - t1;
    timing_.unpack_seconds += now_seconds() - t2;
    ++timing_.steps;
}

void broadcast_tensors(const std::vector<Tensor>& tensors, Communicator& comm, int root) {
    if (comm.size() == 1) return;
    for (const Tensor& t : tensors) {
        require_reachable(t, comm, "parameter broadcast");
        if (!t.is_contiguous())
            throw Error("parameter broadcast: tensor of shape " + t.shape().str() +
                        " is not contiguous");
        comm.broadcast(t.data_ptr(), t.numel() * int64_t(t.element_size()), root);
    }
}

int64_t first_divergent_tensor(const std::vector<Tensor>& tensors, Communicator& comm) {
    std::vector<int64_t> sums;
    for (const Tensor& t : tensors) {
        const Tensor c = t.to(kCPU).contiguous(); // (the same tensor on the CPU)
        sums.push_back(int64_t(fnv1a(static_cast<const unsigned char*>(c.data_ptr()),
                                     size_t(c.numel()) * c.element_size())));
    }
    std::vector<int64_t> root = sums;
    if (!root.empty()) comm.broadcast(root.data(), int64_t(root.size() * sizeof(int64_t)), 0);
    std::vector<int64_t> differs(sums.size());
    for (size_t i = 0; i < sums.size(); ++i)
        differs[i] = sums[i] != root[i];
    if (!differs.empty()) comm.allreduce_sum(differs.data(), int64_t(differs.size()), DType::Int64);
    for (size_t i = 0; i < differs.size(); ++i)
        if (differs[i] != 0) return int64_t(i);
    return -1;
}

} // namespace myelin::dist
