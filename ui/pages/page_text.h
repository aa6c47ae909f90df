#pragma once
// Number texts the Data and Training pages share: counts with digit grouping (core's
// graph::format_count, as everywhere in the studio) and measured values to 4 significant digits.
#include <myelin/graph/analysis.h>

#include <QString>

#include <cstdint>

namespace myelin::ui {

inline QString groupDigits(int64_t n) { // 1234567 -> "1,234,567", as everywhere in the studio
    return QString::fromStdString(graph::format_count(n));
}

inline QString numberText(double v) {
    return QString::number(v, 'g', 4);
}

} // namespace myelin::ui
