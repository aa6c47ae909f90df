// start_mpi where CMake found no MPI: the build trains in one process only.
#include <myelin/dist/mpi.h>
#include <myelin/error.h>

namespace myelin::dist {

bool mpi_built() {
    return false;
}

std::shared_ptr<Communicator> start_mpi(const MpiOptions&) {
    throw Error("this build of myelin has no MPI support (CMake found no MPI when it was "
                "configured: install libopenmpi-dev and configure again); data-parallel "
                "training is not available");
}

} // namespace myelin::dist
