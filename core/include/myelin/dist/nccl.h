#pragma once
// GPU ranks over NCCL (issue 19): a Communicator whose collectives on device memory run as
// ncclAllReduce / ncclBroadcast on the rank's GPU, and whose host-memory collectives, failure
// reports and signals go through the communicator it is started over (MPI). The NCCL code is its
// own module, libmyelin_nccl.so beside libmyelin_core, loaded with dlopen by start_nccl only, so
// no CPU run (nor the studio, the CLI or the core) ever maps libnccl or the CUDA runtime. It is
// built where the CUDA backend is and CMake found NCCL ("Myelin: NCCL: found").
#include <myelin/device.h>
#include <myelin/dist/communicator.h>

#include <memory>
#include <string>

namespace myelin::dist {

// Whether this build has the NCCL module.
bool nccl_built();

// One rank per GPU: `device` is this rank's (cuda:N). Collective over `over` (every rank calls
// it): rank 0 makes the NCCL unique id and broadcasts it over `over`, then every rank joins the
// NCCL communicator. Throws Error with the reason when the build has no NCCL, the module cannot
// be loaded, the device is not a CUDA device, or NCCL cannot start. A collective that waits
// longer than timeout_seconds aborts the NCCL communicator and throws PeerFailure.
std::shared_ptr<Communicator> start_nccl(std::shared_ptr<Communicator> over, Device device,
                                         double timeout_seconds = 300);

} // namespace myelin::dist
