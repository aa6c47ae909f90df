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

void require_cpu(const Tensor& t, const char* what) {
    if (!t.device().is_cpu())
        throw Error(std::string(what) +
                    ": data-parallel training runs on CPU tensors (NCCL, for GPU ranks, is not "
                    "built)");
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
    for (size_t k = parameters_.size(); k-- > 0;) {
        const Tensor& p = parameters_[k];
        require_cpu(p, "gradient averaging");
        const DType dtype = p.dtype();
        if (dtype != DType::Float32 && dtype != DType::Float64)
            throw Error(std::string("gradient averaging: parameter dtype ") + dtype_name(dtype) +
                        " is not supported (float32, float64)");
        const int64_t bytes = p.numel() * int64_t(dtype_size(dtype));
        if (buckets_.empty() || buckets_.back().dtype != dtype ||
            (buckets_.back().count > 0 &&
             (buckets_.back().count * int64_t(dtype_size(dtype)) + bytes > bucket_bytes)))
            buckets_.push_back(Bucket{dtype, {}, {}, {}, 0});
        Bucket& b = buckets_.back();
        b.parameters.push_back(k);
        b.offsets.push_back(b.count);
        b.count += p.numel();
    }
    for (Bucket& b : buckets_)
        b.buffer.resize(size_t(b.count) * dtype_size(b.dtype));
}

int64_t GradientBuckets::bytes() const {
    int64_t total = 0;
    for (const Bucket& b : buckets_)
        total += int64_t(b.buffer.size());
    return total;
}

void GradientBuckets::average(Communicator& comm) {
    if (comm.size() == 1) return;
    const double t0 = now_seconds();
    std::vector<std::unique_ptr<PendingCollective>> pending;
    for (Bucket& b : buckets_) {
        const size_t element = dtype_size(b.dtype);
        for (size_t i = 0; i < b.parameters.size(); ++i) {
            const Tensor& p = parameters_[b.parameters[i]];
            unsigned char* to = b.buffer.data() + size_t(b.offsets[i]) * element;
            const size_t n = size_t(p.numel()) * element;
            Tensor g = p.grad();
            if (!g.defined()) {
                std::memset(to, 0, n);
                continue;
            }
            if (!g.is_contiguous()) g = g.contiguous();
            std::memcpy(to, g.data_ptr(), n);
        }
        pending.push_back(comm.start_allreduce_sum(b.buffer.data(), b.count, b.dtype));
    }
    const double t1 = now_seconds();
    for (auto& p : pending)
        p->wait();
    const double t2 = now_seconds();
    const double scale = 1.0 / double(comm.size());
    for (Bucket& b : buckets_) {
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
        require_cpu(t, "parameter broadcast");
        if (!t.is_contiguous())
            throw Error("parameter broadcast: tensor of shape " + t.shape().str() +
                        " is not contiguous");
        comm.broadcast(t.data_ptr(), t.numel() * int64_t(t.element_size()), root);
    }
}

int64_t first_divergent_tensor(const std::vector<Tensor>& tensors, Communicator& comm) {
    std::vector<int64_t> sums;
    for (const Tensor& t : tensors) {
        require_cpu(t, "parameter check");
        const Tensor c = t.contiguous();
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
