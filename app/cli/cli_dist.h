#pragma once
// myelin train under an MPI launcher (issue 19): starting MPI when the launch asks for it, the
// ranks other than 0 (no store, no checkpoints, no output but errors), and how a failed rank
// ends the job.
#include <myelin/dist/communicator.h>
#include <myelin/io/project.h>
#include <myelin/train/trainer.h>

#include "cli_common.h"

#include <memory>

namespace myelin::cli {

// The options --dist, --bucket-mb, --dist-check and --dist-timeout; their values go into
// `options`. Returns null for one process (no launch detected, or --dist none). Throws
// UsageError for bad values and Error when a data-parallel run cannot start (--dist mpi in a
// build without MPI, a launch detected in such a build, MPI failing to start).
std::shared_ptr<dist::Communicator> start_distributed(const Args& args,
                                                      train::TrainerOptions& options);

// N ranks on one machine split its cores (each rank's OpenMP team) unless --threads or the
// project sets the threads.
void split_cores_between_ranks(const io::Project& project, train::TrainerOptions& options);

// Trains as rank > 0: the Trainer without a store or checkpoints. A failure is reported to rank
// 0 (which names this rank, marks the run failed and ends the job).
int train_other_rank(const io::Project& project, train::TrainerOptions options);

// This rank failed with `message` before or while training: prints it, tells rank 0 and ends
// the job if rank 0 does not within the timeout. Rank 0 itself ends the job at once.
[[noreturn]] void fail_rank(dist::Communicator& comm, const std::string& message);

} // namespace myelin::cli
