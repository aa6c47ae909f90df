#pragma once
// Curve smoothing for the runs comparison: TensorBoard's debiased exponential moving average.
#include <span>
#include <vector>

namespace myelin::ui {

// The largest smoothing weight the studio offers (1 would freeze the curve at its first value).
inline constexpr double kMaxSmoothingWeight = 0.999;
// TensorBoard's and the studio's default.
inline constexpr double kDefaultSmoothingWeight = 0.6;

// TensorBoard's scalar smoothing, value for value (tensorboard/webapp/widgets/line_chart_v2/
// lib/data_transformer.ts): for each finite value v, with n the number of finite values folded
// in so far (v included),
//     last = last * w + (1 - w) * v;   smoothed = last / (1 - w^n)
// so the first finite value comes out unchanged (the average is debiased, not pulled to 0).
// NaN and infinite values are passed through as they are and not folded in. A constant series
// is returned as it is (the division would otherwise add rounding noise). `weight` is clamped
// to [0, kMaxSmoothingWeight]; 0 returns the values unchanged.
std::vector<double> debiasedEma(std::span<const double> values, double weight);

} // namespace myelin::ui
