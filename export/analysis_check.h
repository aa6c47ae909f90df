#pragma once
// Inside the exporters: the model's analysis, refused when the model is invalid.
#include <myelin/export/export.h>
#include <myelin/graph/analysis.h>

namespace myelin::exporters {

// graph::analyze(model, batch 1); throws Error listing every error of an invalid model.
graph::Analysis valid_analysis(const ExportSource& source);

} // namespace myelin::exporters
