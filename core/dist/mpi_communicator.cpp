// The MPI communicator (built where CMake found MPI: the myelin_dist_mpi library). Every
// collective is non-blocking underneath and waited for by polling: the collective, a failure
// message a peer sent to rank 0 (its own communicator and tag), a SIGTERM from the launcher
// and the timeout, so no rank waits forever for a peer that died or threw.
#include <myelin/dist/mpi.h>
#include <myelin/error.h>

// The C API only (Open MPI's and MPICH's deprecated C++ bindings need their own library).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace myelin::dist {

namespace {

constexpr int kFailureTag = 19;
constexpr int kTerminatedTag = 20; // "this rank got SIGTERM", to every other rank
std::atomic<bool> g_terminated{false};
std::atomic<bool> g_interrupted{false};

extern "C" void on_mpi_rank_sigterm(int) {
    g_terminated = true;
    std::signal(SIGTERM, SIG_DFL); // a second one ends the process at once
}

extern "C" void on_mpi_rank_sigint(int) {
    g_interrupted = true;
    std::signal(SIGINT, SIG_DFL); // a second Ctrl-C quits at once
}

MPI_Datatype mpi_type(DType dtype) {
    switch (dtype) {
    case DType::Float32:
        return MPI_FLOAT;
    case DType::Float64:
        return MPI_DOUBLE;
    case DType::Int64:
        return MPI_INT64_T;
    default:
        throw Error("allreduce: dtype " + std::string(dtype_name(dtype)) + " not supported");
    }
}

int int_count(int64_t count, const char* what) {
    if (count < 0 || count > INT_MAX)
        throw Error(std::string(what) + ": " + std::to_string(count) +
                    " elements exceed MPI's int");
    return int(count);
}

void check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(rc, text, &length);
    throw Error(std::string(call) + " failed: " + text);
}

class MpiCommunicator;

class MpiPending final : public PendingCollective {
  public:
    MpiPending(MpiCommunicator& comm, MPI_Request request, const char* what)
        : comm_(comm), request_(request), what_(what) {}
    ~MpiPending() override;
    bool test() override;
    void wait() override;

  private:
    MpiCommunicator& comm_;
    MPI_Request request_;
    const char* what_;
    bool done_ = false;
};

class MpiCommunicator final : public Communicator {
  public:
    explicit MpiCommunicator(const MpiOptions& options) : options_(options) {
        int provided = 0;
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
              "MPI_Init_thread");
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &size_);
        check(MPI_Comm_dup(MPI_COMM_WORLD, &data_), "MPI_Comm_dup");
        check(MPI_Comm_dup(MPI_COMM_WORLD, &control_), "MPI_Comm_dup");
        char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
        int length = 0;
        MPI_Get_library_version(version, &length);
        std::string v(version, size_t(length));
        if (auto comma = v.find(','); comma != std::string::npos) v.resize(comma);
        backend_ = "mpi (" + v + ")";
        // Each rank's host and process id: a rank that died on this host is seen at once.
        const std::string me = host_name() + " " + std::to_string(::getpid());
        std::vector<char> all(size_t(size_) * 128, '\0');
        char mine[128] = {};
        std::snprintf(mine, sizeof mine, "%s", me.c_str());
        check(MPI_Allgather(mine, 128, MPI_CHAR, all.data(), 128, MPI_CHAR, control_),
              "MPI_Allgather");
        for (int r = 0; r < size_; ++r)
            peers_.push_back(std::string(all.data() + size_t(r) * 128));
        confirmed_.assign(size_t(size_), false);
        confirmed_[size_t(rank_)] = true;
        std::signal(SIGTERM, on_mpi_rank_sigterm);
        std::signal(SIGINT, on_mpi_rank_sigint);
    }
    ~MpiCommunicator() override {
        MPI_Comm_free(&data_);
        MPI_Comm_free(&control_);
        MPI_Finalize();
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    std::string backend() const override { return backend_; }

    std::unique_ptr<PendingCollective> start_allreduce_sum(void* data, int64_t count,
                                                           DType dtype) override {
        MPI_Request request;
        check(MPI_Iallreduce(MPI_IN_PLACE, data, int_count(count, "allreduce"), mpi_type(dtype),
                             MPI_SUM, data_, &request),
              "MPI_Iallreduce");
        return std::make_unique<MpiPending>(*this, request, "allreduce");
    }
    void broadcast(void* data, int64_t bytes, int root) override {
        MPI_Request request;
        check(MPI_Ibcast(data, int_count(bytes, "broadcast"), MPI_BYTE, root, data_, &request),
              "MPI_Ibcast");
        MpiPending(*this, request, "broadcast").wait();
    }
    std::vector<std::string> allgather_string(const std::string& text) override {
        std::vector<int> sizes(size_t(size_), 0);
        int mine = int_count(int64_t(text.size()), "allgather");
        MPI_Request request;
        check(MPI_Iallgather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, data_, &request),
              "MPI_Iallgather");
        MpiPending(*this, request, "allgather").wait();
        std::vector<int> offsets(size_t(size_), 0);
        int64_t total = 0;
        for (int r = 0; r < size_; ++r) {
            offsets[size_t(r)] = int_count(total, "allgather");
            total += sizes[size_t(r)];
        }
        std::string all(size_t(total), '\0');
        check(MPI_Iallgatherv(text.data(), mine, MPI_CHAR, all.data(), sizes.data(), offsets.data(),
                              MPI_CHAR, data_, &request),
              "MPI_Iallgatherv");
        MpiPending(*this, request, "allgather").wait();
        std::vector<std::string> out;
        for (int r = 0; r < size_; ++r)
            out.push_back(all.substr(size_t(offsets[size_t(r)]), size_t(sizes[size_t(r)])));
        return out;
    }

    void report_failure(const std::string& message) noexcept override {
        if (rank_ == 0) return; // rank 0 reports its own failure and ends the job
        MPI_Request request;
        if (MPI_Isend(message.data(), int(std::min<size_t>(message.size(), 60000)), MPI_CHAR, 0,
                      kFailureTag, control_, &request) != MPI_SUCCESS)
            return;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        int done = 0;
        while (!done && std::chrono::steady_clock::now() < until) {
            MPI_Test(&request, &done, MPI_STATUS_IGNORE);
            if (!done) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
    [[noreturn]] void abort(int exit_code) noexcept override {
        MPI_Abort(MPI_COMM_WORLD, exit_code);
        std::_Exit(exit_code);
    }

    bool stop_signalled() override {
        if (g_interrupted) return true;
        if (!g_terminated) return false;
        // Wait for every rank's answer (they all got SIGTERM too: a stop) or for check_signals
        // to find one missing (a failure).
        while (!check_signals_confirmed())
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        return true;
    }
    void check_signals() override { check_signals_confirmed(); }

    // Between two tests of a collective: a peer's failure message (rank 0), the launcher's
    // SIGTERM, the timeout.
    void poll(const char* what, std::chrono::steady_clock::time_point started) {
        if (rank_ == 0) {
            int flag = 0;
            MPI_Status status;
            MPI_Iprobe(MPI_ANY_SOURCE, kFailureTag, control_, &flag, &status);
            if (flag) {
                int length = 0;
                MPI_Get_count(&status, MPI_CHAR, &length);
                std::string message(size_t(std::max(length, 0)), '\0');
                MPI_Recv(message.data(), length, MPI_CHAR, status.MPI_SOURCE, kFailureTag, control_,
                         MPI_STATUS_IGNORE);
                throw PeerFailure(status.MPI_SOURCE, "rank " + std::to_string(status.MPI_SOURCE) +
                                                         " failed: " + message);
            }
        }
        // SIGTERM: a stop when every rank got it (the collective completes), a failure
        // (thrown here) when one is missing.
        check_signals_confirmed();
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (waited > options_.timeout_seconds)
            throw PeerFailure(-1, "rank " + std::to_string(rank_) + ": " + what +
                                      " waited more than " +
                                      std::to_string(int(options_.timeout_seconds)) +
                                      " s for the other ranks (one is dead or stuck; "
                                      "--dist-timeout sets the limit)");
    }

  private:
    // After SIGTERM: tells every other rank once, collects their notes; true once all ranks
    // got it (the whole job is being stopped). Throws PeerFailure when one is missing: its
    // process is gone from this host, or it did not answer within the grace period.
    bool check_signals_confirmed() {
        if (!g_terminated) return false;
        if (all_confirmed_) return true;
        const auto now = std::chrono::steady_clock::now();
        if (notes_.empty()) {
            terminated_at_ = now;
            static const char note = 1;
            for (int r = 0; r < size_; ++r) {
                if (r == rank_) continue;
                MPI_Request request;
                if (MPI_Isend(&note, 1, MPI_CHAR, r, kTerminatedTag, control_, &request) ==
                    MPI_SUCCESS)
                    notes_.push_back(request);
            }
            if (notes_.empty()) notes_.push_back(MPI_REQUEST_NULL);
        }
        for (MPI_Request& request : notes_) {
            int done = 0;
            if (request != MPI_REQUEST_NULL) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        }
        for (int flag = 1; flag;) {
            MPI_Status status;
            MPI_Iprobe(MPI_ANY_SOURCE, kTerminatedTag, control_, &flag, &status);
            if (!flag) break;
            char note = 0;
            MPI_Recv(&note, 1, MPI_CHAR, status.MPI_SOURCE, kTerminatedTag, control_,
                     MPI_STATUS_IGNORE);
            confirmed_[size_t(status.MPI_SOURCE)] = true;
        }
        std::vector<int> missing;
        for (int r = 0; r < size_; ++r)
            if (!confirmed_[size_t(r)]) missing.push_back(r);
        if (missing.empty()) return all_confirmed_ = true;
        const double grace = std::min(options_.timeout_seconds, 10.0);
        for (int r : missing) {
            const bool gone = process_gone(r);
            if (gone || std::chrono::duration<double>(now - terminated_at_).count() > grace)
                throw PeerFailure(
                    r, "rank " + std::to_string(rank_) +
                           " was terminated by the launcher (SIGTERM) and rank " +
                           std::to_string(r) + " (" + peers_[size_t(r)] + ") " +
                           (gone ? "is gone: it died" : "did not answer: it died or hangs") +
                           ", so the launcher is ending the job");
        }
        return false;
    }
    // Whether rank r ran on this host and its process no longer exists.
    bool process_gone(int r) const {
        const std::string& peer = peers_[size_t(r)];
        const auto space = peer.rfind(' ');
        if (space == std::string::npos || peer.substr(0, space) != host_name()) return false;
        const long pid = std::atol(peer.c_str() + space + 1);
        return pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
    }

    MpiOptions options_;
    int rank_ = 0, size_ = 1;
    MPI_Comm data_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL;
    std::string backend_;
    std::vector<std::string> peers_; // "host pid" per rank
    std::vector<bool> confirmed_;    // ranks known to have got SIGTERM (this one included)
    std::vector<MPI_Request> notes_; // this rank's notes to the others, once sent
    std::chrono::steady_clock::time_point terminated_at_;
    bool all_confirmed_ = false;
};

MpiPending::~MpiPending() {
    // An abandoned collective (the wait threw): the job is ending; leave the request to MPI.
}

bool MpiPending::test() {
    if (done_) return true;
    int flag = 0;
    check(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), what_);
    done_ = flag != 0;
    return done_;
}

void MpiPending::wait() {
    const auto started = std::chrono::steady_clock::now();
    for (int spins = 0; !test(); ++spins) {
        comm_.poll(what_, started);
        // Spin briefly (a collective usually completes within microseconds), then sleep so a
        // waiting rank leaves the cores to ranks still computing.
        if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

} // namespace

bool mpi_built() {
    return true;
}

std::shared_ptr<Communicator> start_mpi(const MpiOptions& options) {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (initialised) throw Error("MPI is already initialised in this process");
    return std::make_shared<MpiCommunicator>(options);
}

} // namespace myelin::dist
