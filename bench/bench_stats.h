#pragma once
// Small statistics the bench programs print.
#include <algorithm>
#include <vector>

namespace myelin::bench {

// The middle value (the upper one of the two middles for an even count); `v` must not be empty.
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace myelin::bench
