#pragma once
// A classifier's row scores, from which train/metrics.h counts accuracy, top-k and the confusion
// matrix: the predicted class (torch.argmax: the first maximum, NaN above every number) and how
// many classes rank above the target under that order (ties: the lower index first). Shared by
// the host's metrics (rows with NaN), the CPU's training table and the CUDA kernel.
#include "backend/kernels/elementwise.h" // MYELIN_HD

#include <cstdint>

namespace myelin::kernels {

// a ranks above b: greater, or NaN where b is a number (x != x: NaN without <cmath> on device).
template <typename T> MYELIN_HD bool ranks_above(T a, T b) {
    return a > b || (a != a && b == b);
}
template <typename T> MYELIN_HD bool same_rank(T a, T b) {
    return a == b || (a != a && b != b);
}

struct RowScore {
    int64_t predicted = 0;
    int64_t above_target = 0;
};

// The general rule, NaN included, over one row of `classes` values; `label` in [0, classes).
template <typename T> MYELIN_HD RowScore score_row(const T* row, int64_t classes, int64_t label) {
    const T target_value = row[label];
    T best = row[0];
    RowScore score;
    for (int64_t j = 0; j < classes; ++j) {
        const T v = row[j];
        if (ranks_above(v, best)) {
            best = v;
            score.predicted = j;
        }
        score.above_target +=
            ranks_above(v, target_value) || (j < label && same_rank(v, target_value));
    }
    return score;
}

} // namespace myelin::kernels
