#pragma once
// Launch detection and the MPI communicator. detect_launch and parse_dist_mode are in core;
// start_mpi is in the myelin_dist_mpi library (the CLI and tests/dist link it), built from
// core/dist/mpi_communicator.cpp where CMake found MPI and from mpi_unavailable.cpp elsewhere,
// so libmyelin_core (the studio, plugins) never loads libmpi.
#include <myelin/dist/communicator.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace myelin::dist {

// myelin train --dist: auto (an MPI launch is detected from the environment), mpi (forced; fails
// without an MPI runtime), none (one process even under mpirun).
enum class DistMode { Auto, Mpi, None };
DistMode parse_dist_mode(std::string_view text); // throws Error naming the text

// Whether this process was started by an MPI launcher: Open MPI's mpirun (OMPI_COMM_WORLD_SIZE),
// a PMIx or PMI server (PMIX_RANK, PMI_SIZE: MPICH's, Slurm's) or Slurm's srun (SLURM_STEP_ID
// with SLURM_NTASKS; an sbatch script alone sets no step). `launcher` names the variable found.
struct Launch {
    bool detected = false;
    std::string launcher;
    int world_size = 0; // from the environment; 0 when it does not say
};
using Environment = std::function<const char*(const char*)>;
Launch detect_launch(const Environment& environment);
Launch detect_launch(); // this process's environment

// Whether this build has MPI (CMake found it: MYELIN_HAVE_MPI).
bool mpi_built();

struct MpiOptions {
    double timeout_seconds = 300; // a collective that waits longer fails (a dead or stuck peer)
};
// Initialises MPI (MPI_Init_thread, serialized) and returns the world communicator; MPI is
// finalised when the last reference goes. Throws Error when this build has no MPI, or when
// MPI cannot start. Call once per process.
std::shared_ptr<Communicator> start_mpi(const MpiOptions& options);

} // namespace myelin::dist
