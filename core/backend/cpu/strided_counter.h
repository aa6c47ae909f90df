#pragma once
// Internal to the CPU backend: a row-major multi-index walked over `n` dims that tracks one
// element offset per strided operand (NS of them) — shared by the reduction and index kernels.
#include <myelin/dims.h>

#include <cstdint>

namespace myelin::backend {

template <int NS> struct Counter {
    int n = 0;
    const int64_t* shape = nullptr;
    const int64_t* strides[NS] = {};
    int64_t idx[kMaxDims] = {};
    int64_t off[NS] = {};

    void seek(int64_t flat) {
        for (int s = 0; s < NS; ++s)
            off[s] = 0;
        for (int d = n - 1; d >= 0; --d) {
            idx[d] = flat % shape[d];
            flat /= shape[d];
            for (int s = 0; s < NS; ++s)
                off[s] += idx[d] * strides[s][d];
        }
    }
    void next() {
        for (int d = n - 1; d >= 0; --d) {
            for (int s = 0; s < NS; ++s)
                off[s] += strides[s][d];
            if (++idx[d] < shape[d]) return;
            for (int s = 0; s < NS; ++s)
                off[s] -= idx[d] * strides[s][d];
            idx[d] = 0;
        }
    }
};

} // namespace myelin::backend
