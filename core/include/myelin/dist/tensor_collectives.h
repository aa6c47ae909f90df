#pragma once
// Collectives over tensors for data-parallel training: gradients averaged in fused buckets,
// parameters broadcast from rank 0, and a cross-rank checksum that names the first tensor whose
// values differ. CPU tensors only (GPU ranks would go over NCCL, not built).
#include <myelin/dist/communicator.h>
#include <myelin/tensor.h>

#include <cstdint>
#include <vector>

namespace myelin::dist {

// Averages every parameter's .grad over the ranks, like PyTorch DDP's reducer: the parameters,
// in reverse order (backward produces the last layers' gradients first), are laid out in flat
// buckets of at most bucket_bytes (one dtype per bucket; a larger tensor gets a bucket of its
// own); each bucket is packed, its allreduce started at once (so it runs while the next one is
// packed), and all are waited for before the averages are copied back. A parameter without a
// gradient on this rank counts as zeros (and receives the average).
class GradientBuckets {
  public:
    GradientBuckets(std::vector<Tensor> parameters, int64_t bucket_bytes);
    void average(Communicator& comm);
    size_t bucket_count() const { return buckets_.size(); }
    int64_t bytes() const; // per step, one way

    struct Timing {
        double pack_seconds = 0;   // copying gradients in and starting the allreduces
        double wait_seconds = 0;   // waiting for them
        double unpack_seconds = 0; // copying the averages back
        int64_t steps = 0;
    };
    const Timing& timing() const { return timing_; }

  private:
    struct Bucket {
        DType dtype;
        std::vector<size_t> parameters; // indices into parameters_
        std::vector<int64_t> offsets;   // element offset of each in the buffer
        std::vector<unsigned char> buffer;
        int64_t count = 0;
    };
    std::vector<Tensor> parameters_;
    std::vector<Bucket> buckets_;
    Timing timing_;
};

// Copies rank `root`'s values of `tensors` (contiguous CPU tensors, written in place) to every
// rank.
void broadcast_tensors(const std::vector<Tensor>& tensors, Communicator& comm, int root = 0);

// A checksum of every tensor's bytes on every rank, compared with rank 0's: the index of the
// first tensor that differs on any rank, or -1 when all agree. Collective.
int64_t first_divergent_tensor(const std::vector<Tensor>& tensors, Communicator& comm);

} // namespace myelin::dist
