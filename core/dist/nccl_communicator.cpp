// The NCCL communicator (libmyelin_nccl.so, loaded by dist/nccl_loader.cpp): collectives on
// device memory are ncclAllReduce / ncclBroadcast on a stream of this rank's GPU that first
// waits for the legacy default stream (where the CUDA backend's kernels produced the
// gradients); everything on host memory (the loss sums, the stop agreement, BatchNorm
// statistics, strings), failure reports, signals and aborts go through the communicator it was
// started over (MPI), which also carries the NCCL unique id from rank 0. A wait polls the
// stream's event and the MPI side's signals and failure messages, and after the timeout aborts
// the NCCL communicator (ncclCommAbort) and throws PeerFailure, like the MPI waits.
#include "dist/nccl_module.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace myelin::dist {

namespace {

std::string cuda_text(cudaError_t e) {
    return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

void check_cuda(cudaError_t e, const char* call) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cuda_text(e));
}

void check_nccl(ncclResult_t r, const char* call) {
    if (r != ncclSuccess && r != ncclInProgress)
        throw std::runtime_error(std::string(call) + ": " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType dtype) {
    switch (dtype) {
    case DType::Float32:
        return ncclFloat32;
    case DType::Float64:
        return ncclFloat64;
    case DType::Int64:
        return ncclInt64;
    case DType::Float16:
        return ncclFloat16;
    case DType::BFloat16:
        return ncclBfloat16;
    default:
        throw std::runtime_error(std::string("NCCL allreduce: dtype ") + dtype_name(dtype) +
                                 " is not supported");
    }
}

bool on_device(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError(); // a plain host pointer: clear the error
        return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

class NcclCommunicator;

class NcclPending final : public PendingCollective {
  public:
    NcclPending(NcclCommunicator& comm, cudaEvent_t done) : comm_(comm), done_(done) {}
    ~NcclPending() override { cudaEventDestroy(done_); }
    bool test() override;
    void wait() override;

  private:
    NcclCommunicator& comm_;
    cudaEvent_t done_;
    bool finished_ = false;
};

class NcclCommunicator final : public Communicator {
  public:
    NcclCommunicator(std::shared_ptr<Communicator> over, int device, double timeout_seconds)
        : over_(std::move(over)), device_(device), timeout_seconds_(timeout_seconds) {
        check_cuda(cudaSetDevice(device_), "cudaSetDevice");
        ncclUniqueId id{};
        if (over_->rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
        over_->broadcast(&id, int64_t(sizeof id), 0);
        check_nccl(ncclCommInitRank(&comm_, over_->size(), id, over_->rank()), "ncclCommInitRank");
        check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        int version = 0;
        ncclGetVersion(&version);
        backend_ = "nccl " + std::to_string(version / 10000) + "." +
                   std::to_string(version / 100 % 100) + "." + std::to_string(version % 100) +
                   " on cuda:" + std::to_string(device_) + " (host side: " + over_->backend() + ")";
    }
    ~NcclCommunicator() override {
        if (comm_ && !aborted_) ncclCommDestroy(comm_);
        if (stream_) cudaStreamDestroy(stream_);
    }

    int rank() const override { return over_->rank(); }
    int size() const override { return over_->size(); }
    std::string backend() const override { return backend_; }

    std::unique_ptr<PendingCollective> start_allreduce_sum(void* data, int64_t count,
                                                           DType dtype) override {
        if (!on_device(data)) return over_->start_allreduce_sum(data, count, dtype);
        after_default_stream();
        check_nccl(
            ncclAllReduce(data, data, size_t(count), nccl_type(dtype), ncclSum, comm_, stream_),
            "ncclAllReduce");
        return std::make_unique<NcclPending>(*this, record());
    }
    void broadcast(void* data, int64_t bytes, int root) override {
        if (!on_device(data)) return over_->broadcast(data, bytes, root);
        after_default_stream();
        check_nccl(ncclBroadcast(data, data, size_t(bytes), ncclUint8, root, comm_, stream_),
                   "ncclBroadcast");
        NcclPending(*this, record()).wait();
    }
    std::vector<std::string> allgather_string(const std::string& text) override {
        return over_->allgather_string(text);
    }
    void report_failure(const std::string& message) noexcept override {
        over_->report_failure(message);
    }
    [[noreturn]] void abort(int exit_code) noexcept override {
        if (comm_ && !aborted_) ncclCommAbort(comm_);
        aborted_ = true;
        over_->abort(exit_code);
        std::_Exit(exit_code); // (a virtual call is not known not to return)
    }
    bool reaches(const Device& device) const override {
        return device.is_cpu() || (device.is_cuda() && device.index == device_);
    }
    bool stop_signalled() override { return over_->stop_signalled(); }
    void check_signals() override { over_->check_signals(); }

    // Between two queries of a collective's event: NCCL's own errors, the MPI side's failure
    // messages and signals (check_signals), and the timeout.
    void poll(std::chrono::steady_clock::time_point started) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm_, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
            ncclCommAbort(comm_);
            aborted_ = true;
            throw PeerFailure(-1, "rank " + std::to_string(rank()) +
                                      ": NCCL failed: " + ncclGetErrorString(async));
        }
        over_->check_signals();
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (waited > timeout_seconds_) {
            ncclCommAbort(comm_);
            aborted_ = true;
            throw PeerFailure(-1, "rank " + std::to_string(rank()) +
                                      ": an NCCL collective waited more than " +
                                      std::to_string(int(timeout_seconds_)) +
                                      " s for the other ranks (one is dead or stuck; "
                                      "--dist-timeout sets the limit)");
        }
    }

  private:
    void after_default_stream() {
        cudaEvent_t produced;
        check_cuda(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming), "cudaEventCreate");
        check_cuda(cudaEventRecord(produced, cudaStreamLegacy), "cudaEventRecord");
        check_cuda(cudaStreamWaitEvent(stream_, produced, 0), "cudaStreamWaitEvent");
        cudaEventDestroy(produced);
    }
    cudaEvent_t record() {
        cudaEvent_t done;
        check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
        check_cuda(cudaEventRecord(done, stream_), "cudaEventRecord");
        return done;
    }

    std::shared_ptr<Communicator> over_;
    int device_;
    double timeout_seconds_;
    ncclComm_t comm_ = nullptr;
    cudaStream_t stream_ = nullptr;
    bool aborted_ = false;
    std::string backend_;
};

bool NcclPending::test() {
    if (finished_) return true;
    const cudaError_t e = cudaEventQuery(done_);
    if (e == cudaErrorNotReady) return false;
    if (e != cudaSuccess)
        throw PeerFailure(-1, "rank " + std::to_string(comm_.rank()) +
                                  ": NCCL collective failed: " + cuda_text(e));
    return finished_ = true;
}

void NcclPending::wait() {
    const auto started = std::chrono::steady_clock::now();
    for (int spins = 0; !test(); ++spins) {
        comm_.poll(started);
        if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

} // namespace

} // namespace myelin::dist

extern "C" __attribute__((visibility("default"))) std::shared_ptr<myelin::dist::Communicator>
myelin_nccl_start(std::shared_ptr<myelin::dist::Communicator> over, int device_index,
                  double timeout_seconds, std::string& error) {
    try {
        return std::make_shared<myelin::dist::NcclCommunicator>(std::move(over), device_index,
                                                                timeout_seconds);
    } catch (const std::exception& e) {
        error = e.what();
        return nullptr;
    }
}
