#pragma once
// How a matrix of a batched_gemm operand is stored, by the rule every backend's GEMM takes
// (Backend::batched_gemm): row-major (unit stride along its columns) or column-major (unit stride
// along its rows), its vectors at least their length apart. A 0 stride inside a matrix (an
// expanded operand) is neither: cuBLAS's leading dimension cannot express it, so the front end
// copies such an operand (gemm_ready) and the CUDA backend refuses one.
#include <cstdint>

namespace myelin::backend {

enum class GemmLayout { RowMajor, ColumnMajor, Neither };

// A [rows, cols] matrix with strides (row_stride, col_stride); a 1-row or 1-column matrix is
// row-major whatever its strides.
inline GemmLayout gemm_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
    if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= cols))
        return GemmLayout::RowMajor;
    if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= rows))
        return GemmLayout::ColumnMajor;
    return GemmLayout::Neither;
}

} // namespace myelin::backend
