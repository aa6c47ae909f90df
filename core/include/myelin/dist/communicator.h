#pragma once
// Communicator: what data-parallel training needs from the processes it runs in (issue 19).
// One rank per process; collectives are called by every rank in the same order. The MPI
// implementation (dist/mpi.h) runs over an existing MPI library; the single-process one makes
// every collective the identity, so code written for ranks runs unchanged alone. Core's headers
// never include mpi.h.
//
// Faults: a wait never blocks forever. It polls for the collective, for a failure message a
// peer sent (report_failure) and for a termination signal, and throws PeerFailure naming the
// failing rank and its error, or after the timeout.
#include <myelin/device.h>
#include <myelin/dtype.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace myelin::dist {

// A peer rank failed (its error is in the message), a collective timed out, or the launcher
// terminates the job.
class PeerFailure : public std::runtime_error {
  public:
    PeerFailure(int rank, const std::string& message) : std::runtime_error(message), rank_(rank) {}
    int rank() const { return rank_; } // the failing rank; -1 when unknown (timeout, signal)

  private:
    int rank_;
};

// A collective under way: its buffer must stay alive and untouched until wait() returns.
class PendingCollective {
  public:
    virtual ~PendingCollective() = default;
    virtual bool test() = 0; // done? (drives MPI's progress)
    virtual void wait() = 0; // throws PeerFailure
};

class Communicator {
  public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual std::string backend() const = 0; // "mpi (Open MPI 4.1.4)", "single process"

    // Element-wise sum over ranks of `count` values of `dtype` (Float32, Float64, Int64), in
    // place, started now.
    virtual std::unique_ptr<PendingCollective> start_allreduce_sum(void* data, int64_t count,
                                                                   DType dtype) = 0;
    void allreduce_sum(void* data, int64_t count, DType dtype) {
        start_allreduce_sum(data, count, dtype)->wait();
    }
    // `bytes` bytes from `root` to every rank, in place.
    virtual void broadcast(void* data, int64_t bytes, int root) = 0;
    std::string broadcast_string(const std::string& text, int root);
    // Every rank's `text`, in rank order.
    virtual std::vector<std::string> allgather_string(const std::string& text) = 0;

    // This rank failed with `message`: tells rank 0 (which names it and ends the job). Best
    // effort, never throws; returns once the message left or after a few seconds.
    virtual void report_failure(const std::string& message) noexcept = 0;
    // Ends every rank of the job with `exit_code` (MPI_Abort). Does not return.
    [[noreturn]] virtual void abort(int exit_code) noexcept = 0;

    // Signals, told apart (the MPI communicator; alone: never). A stop is SIGINT on this rank,
    // or SIGTERM on every rank (mpirun turns Ctrl-C into SIGTERM to each rank, Slurm's scancel
    // sends it to each task): every rank that gets SIGTERM tells the others, and once all have,
    // stop_signalled() is true. A failure is SIGTERM while a rank is missing (the launcher ends
    // the job because that rank died): check_signals() throws PeerFailure naming it, at once
    // when the missing rank's process is gone from this host, else after a grace period.
    // check_signals is cheap; call it between collectives. stop_signalled may wait (within the
    // grace) for the other ranks' answers.
    virtual bool stop_signalled() { return false; }
    virtual void check_signals() {}

    // Whether collectives can take buffers in `device`'s memory (host memory always; the NCCL
    // communicator also its GPU's).
    virtual bool reaches(const Device& device) const { return device.is_cpu(); }
};

// One process alone: rank 0 of 1, every collective the identity.
std::shared_ptr<Communicator> make_single_process_communicator();

// The name of this host (gethostname), as the run records it.
std::string host_name();

} // namespace myelin::dist
