#pragma once
// Collectives over tensors for data-parallel training: gradients averaged in fused buckets,
// parameters broadcast from rank 0, and a cross-rank checksum that names the first tensor whose
// values differ. CPU tensors over any communicator; GPU tensors over one that reaches the GPU
// (NCCL, dist/nccl.h): their buckets are device buffers.
#include <myelin/dist/communicator.h>
#include <myelin/tensor.h>

#include <cstdint>
#include <vector>

namespace myelin::dist {

// Averages every parameter's .grad over the ranks, like PyTorch DDP's reducer: the parameters,
// in reverse order (backward produces the last layers' gradients first), are laid out in flat
// buckets of at most bucket_bytes (one dtype per bucket; a larger tensor gets a bucket of its
// own). A parameter without a gradient on this rank counts as zeros (and receives the average).
//
// Two ways to drive it, every rank the same way:
//  * average(): after backward, pack every bucket, starting each one's allreduce as soon as it
//    is packed, wait for all, copy the averages back;
//  * overlapped with backward: begin_step(), then gradient_ready() from each parameter's
//    gradient hook while backward runs (a bucket's allreduce starts when its last parameter's
//    gradient arrived), then finish() after backward. A parameter whose hook ran more than once
//    in the step (a shared weight) or never makes finish() redo its bucket from .grad, and
//    overlapped() turns false for the rest of the run (the same on every rank: the same model).
class GradientBuckets {
  public:
    GradientBuckets(std::vector<Tensor> parameters, int64_t bucket_bytes);
    void average(Communicator& comm);
    void begin_step();
    // Parameter `index`'s gradient for this step as .grad will hold it once accumulated
    // (`incoming`: what backward is about to add to the current .grad).
    void gradient_ready(size_t index, const Tensor& incoming, Communicator& comm);
    void finish(Communicator& comm);
    bool overlapped() const { return overlap_ok_; }

    const std::vector<Tensor>& parameters() const { return parameters_; }
    size_t bucket_count() const { return buckets_.size(); }
    int64_t bytes() const; // per step, one way

    struct Timing {
        double pack_seconds = 0;   // after backward: packing and starting the allreduces
        double wait_seconds = 0;   // after backward: waiting for them
        double unpack_seconds = 0; // copying the averages back
        int64_t steps = 0;
        int64_t buckets_started_in_backward = 0; // of steps x bucket_count()
    };
    const Timing& timing() const { return timing_; }

  private:
    struct Bucket {
        DType dtype;
        std::vector<size_t> parameters;    // indices into parameters_
        std::vector<int64_t> offsets;      // element offset of each in the buffer
        std::vector<unsigned char> buffer; // on the CPU
        Tensor device;                     // [count] on the parameters' device, when not the CPU
        int64_t count = 0;
        size_t ready = 0;
        std::unique_ptr<PendingCollective> pending;
    };
    void pack(Bucket& bucket, size_t slot, const Tensor& gradient);
    void pack_from_grads(Bucket& bucket);
    static void* data(Bucket& bucket);
    std::vector<Tensor> parameters_;
    Device device_ = kCPU;
    std::vector<Bucket> buckets_;
    std::vector<std::pair<size_t, size_t>> where_; // parameter -> (bucket, slot)
    std::vector<int> fired_;                       // hook calls this step, per parameter
    bool overlap_ok_ = true;
    Timing timing_;
};

// Copies rank `root`'s values of `tensors` (contiguous CPU tensors, written in place) to every
// rank.
void broadcast_tensors(const std::vector<Tensor>& tensors, Communicator& comm, int root = 0);

// A checksum of every tensor's bytes on every rank, compared with rank 0's: the index of the
// first tensor that differs on any rank, or -1 when all agree. Collective.
int64_t first_divergent_tensor(const std::vector<Tensor>& tensors, Communicator& comm);

} // namespace myelin::dist
