#include <myelin/device.h>
#include <myelin/dist/mpi.h>
#include <myelin/error.h>

#include "cli_dist.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace myelin::cli {

namespace {

double dist_timeout_seconds = 300;

// Ranks on this node, as the launcher says (0: it does not).
int local_ranks() {
    for (const char* name :
         {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
        if (const char* v = std::getenv(name)) {
            const int n = std::atoi(v);
            if (n > 0) return n;
        }
    return 0;
}

} // namespace

std::shared_ptr<dist::Communicator> start_distributed(const Args& args,
                                                      train::TrainerOptions& options) {
    dist::DistMode mode;
    try {
        mode = dist::parse_dist_mode(args.get("--dist").value_or("auto"));
    } catch (const Error& e) {
        throw UsageError{e.what()};
    }
    if (auto mb = args.get("--bucket-mb")) {
        char* end = nullptr;
        options.dist_bucket_mb = std::strtod(mb->c_str(), &end);
        if (mb->empty() || *end != '\0' || !(options.dist_bucket_mb > 0) ||
            options.dist_bucket_mb > 4096)
            throw UsageError{"--bucket-mb needs a number of MB in (0, 4096], got '" + *mb + "'"};
    }
    options.dist_check_every = args.get_int("--dist-check", 1).value_or(0);
    options.dist_overlap = !args.flag("--dist-no-overlap");
    options.dist_sync_batchnorm = args.flag("--sync-batchnorm");
    dist::MpiOptions mpi;
    mpi.timeout_seconds = double(args.get_int("--dist-timeout", 1).value_or(300));
    dist_timeout_seconds = mpi.timeout_seconds;
    if (mode == dist::DistMode::None) return nullptr;
    const dist::Launch launch = dist::detect_launch();
    if (mode == dist::DistMode::Auto && !launch.detected) return nullptr;
    if (!dist::mpi_built()) {
        if (mode == dist::DistMode::Mpi)
            throw Error("--dist mpi: this build of myelin has no MPI support (CMake found no MPI "
                        "when it was configured: install libopenmpi-dev and configure again)");
        throw Error("started by an MPI launcher (" + launch.launcher +
                    " is set) but this build of myelin has no MPI support: every process would "
                    "train alone; run it without the launcher, or with --dist none");
    }
    std::shared_ptr<dist::Communicator> comm = dist::start_mpi(mpi);
    options.communicator = comm;
    return comm;
}

void split_cores_between_ranks(const io::Project& project, train::TrainerOptions& options) {
    if (!options.communicator || options.threads > 0 || project.train.threads > 0) return;
    if (const int local = local_ranks(); local > 1)
        options.threads = std::max(1, int(std::thread::hardware_concurrency()) / local);
}

void fail_rank(dist::Communicator& comm, const std::string& message) {
    std::fprintf(stderr, "myelin: rank %d: error: %s\n", comm.rank(), message.c_str());
    std::fflush(stderr);
    if (comm.rank() != 0) {
        comm.report_failure(message);
        // Rank 0 names this rank, marks the run failed and ends the job; should it not (it is
        // stuck itself), end it from here.
        const auto until =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(dist_timeout_seconds);
        while (std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    comm.abort(kExitError);
    std::_Exit(kExitError); // (a virtual call is not known not to return)
}

int train_other_rank(const io::Project& project, train::TrainerOptions options) {
    dist::Communicator& comm = *options.communicator;
    options.checkpoint_dir.clear(); // rank 0 writes the checkpoints
    options.resume_from.clear();    // rank 0's resolved target is broadcast
    try {
        train::Trainer trainer(project, options);
        const train::TrainResult result = trainer.run();
        if (result.status == train::RunStatus::Failed) fail_rank(comm, result.error);
        return result.status == train::RunStatus::Finished ? kExitOk : kExitStopped;
    } catch (const std::exception& e) {
        fail_rank(comm, e.what());
    }
}

} // namespace myelin::cli
