#pragma once
// The winner of one 2x2 max-pool window, PyTorch's rule: scanned a, b (top row), then d, e
// (bottom row), the first maximum wins ties and a NaN replaces the running maximum, so the last
// NaN in scan order wins. Compared as pairs (a-b, d-e), then the two pair winners: the same
// result, branch-free. `code` says where the winner is: bit 0 the right column, bit 1 the bottom
// row. Shared by the CPU's nchw pool (cpu_pool.cpp) and its pool over oneDNN's blocked layout
// (cpu_nchw16c.cpp), whose AVX-512 paths apply the same comparisons lane by lane.
#include "backend/kernels/elementwise.h"

#include <cstdint>
#include <type_traits>

namespace myelin::kernels {

// cand replaces cur as a window's maximum: larger, or NaN.
template <typename T> inline bool replaces_max(T cand, T cur) {
    return (cand > cur) | (cand != cand);
}

template <typename T> inline T select_value(bool take, T a, T b) {
    if constexpr (std::is_same_v<T, float>)
        return bit_select(take, a, b); // keeps the row loops vectorisable
    else
        return take ? a : b;
}

template <typename T> inline T max_window_2x2(T a, T b, T d, T e, uint8_t& code) {
    const bool right_top = replaces_max(b, a), right_bottom = replaces_max(e, d);
    const T top = select_value(right_top, b, a), bottom = select_value(right_bottom, e, d);
    const bool below = replaces_max(bottom, top);
    code = static_cast<uint8_t>((below << 1) | (below ? right_bottom : right_top));
    return select_value(below, bottom, top);
}

} // namespace myelin::kernels
