// test_nchw16c's second copy of the nchw16c kernels: cpu_nchw16c.cpp compiled again without
// AVX-512 (its scalar path, which CPUs without AVX-512 run) under another namespace name, behind
// plain-argument wrappers so the test can call both copies side by side.
#include "backend/cpu/cpu_nchw16c.cpp"

namespace nchw16c_test {

void portable_max_pool_2x2(const float* x, float* y, uint8_t* codes, int64_t N, int64_t C,
                           int64_t H, int64_t W) {
    myelin::backend::nchw16c::max_pool_2x2_from_blocked(x, y, codes, {N, C, H, W, H / 2, W / 2});
}

void portable_relu_max_pool_2x2_backward(const float* grad_pooled, const uint8_t* codes, float* out,
                                         int64_t N, int64_t C, int64_t H, int64_t W) {
    myelin::backend::nchw16c::relu_max_pool_2x2_backward_to_blocked(grad_pooled, codes, out,
                                                                    {N, C, H, W, H / 2, W / 2});
}

void portable_relu_backward(const float* gy, const float* y, float* out, int64_t N, int64_t C,
                            int64_t HW) {
    myelin::backend::nchw16c::relu_backward_to_blocked(gy, y, out, N, C, HW);
}

} // namespace nchw16c_test
