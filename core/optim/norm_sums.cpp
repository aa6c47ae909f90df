#include "optim/norm_sums.h"

#include "backend/train_kernels.h"
#include "tensor/tensor_impl.h"

#include <myelin/autograd.h>
#include <myelin/error.h>

namespace myelin::optim::detail {

std::vector<double> norm_sums(const std::vector<NormRequest>& requests) {
    std::vector<double> sums(requests.size());
    if (requests.empty()) return sums;
    autograd::NoGradGuard no_grad;
    const Device device = requests.front().x.device();
    const Tensor table =
        myelin::detail::make_tensor({int64_t(requests.size())}, DType::Float64, device);
    for (size_t i = 0; i < requests.size(); ++i) {
        const Tensor& x = requests[i].x;
        myelin::detail::check_same_device(requests.front().x, x, "norm_sums");
        const bool stored = x.dtype() == DType::Float32 || x.dtype() == DType::Float64;
        const Tensor c = (stored ? x : x.to(DType::Float64)).detach().contiguous();
        backend::train_kernels(myelin::detail::backend_for(c), backend::Primitive::GradNorm,
                               c.dtype())
            .norm_accumulate(myelin::detail::view_of(c), requests[i].p,
                             myelin::detail::view_of(table.narrow(0, int64_t(i), 1)));
    }
    const Tensor host = table.to(kCPU); // the one wait
    for (size_t i = 0; i < sums.size(); ++i)
        sums[i] = host.data<double>()[i];
    return sums;
}

} // namespace myelin::optim::detail
