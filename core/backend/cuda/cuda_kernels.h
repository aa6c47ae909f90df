#pragma once
// The CUDA backend's own kernels (cuda_kernels.cu, cuda_reduce.cu), launched on the default
// stream. Plain host signatures over Views: no CUDA types, so cuda_backend.cpp stays C++.
#include "backend/backend.h"

namespace myelin::backend::cuda {

void launch_copy(const View& src, const View& dst);
void launch_fill(const View& dst, double value);
void launch_unary(UnaryOp op, const View& x, const View& out, const OpParams& p);
void launch_binary(BinaryOp op, const View& a, const View& b, const View& out, const OpParams& p);
void launch_where(const View& cond, const View& a, const View& b, const View& out);
void launch_index_select(const View& x, int dim, const View& index, const View& out);
void launch_gather(const View& x, int dim, const View& index, const View& out);
// ordered: each line along dim adds its entries in index order, one thread per line (the CPU's
// order, bit-identical reruns); otherwise one thread per entry with atomic adds.
void launch_scatter_add(const View& self, int dim, const View& index, const View& src,
                        bool ordered);
bool launch_int_range(const View& x, int64_t* min_out, int64_t* max_out);

// cuda_reduce.cu: every ReduceOp (supports_reduce says which, for a backend that lacks some).
bool supports_reduce(ReduceOp op);
void launch_reduce(ReduceOp op, const View& x, int reduced_dims, const View& out,
                   const View* indices, const OpParams& p);
void launch_softmax(const View& x, int dim, bool log, const View& out);
void launch_softmax_backward(const View& y, const View& grad_y, int dim, bool log,
                             const View& grad_x);

// Throws DeviceError "<what>: <the runtime's message>" when a launch or a call failed.
void check_last_launch(const char* what);

} // namespace myelin::backend::cuda
