#pragma once
// How the evaluation room draws one example of a dataset: an image input ([C, H, W] or [H, W])
// as a picture over its own range (RGB for 3 channels, else the first channel in the studio's
// grey ramp), anything else as the text of its values; and small number formats.
#include <myelin/tensor.h>

#include <QImage>
#include <QString>

#include <vector>

namespace myelin::ui::eval {

// Whether an input of this shape is drawn as a picture.
bool isImageInput(const Tensor& input);
// The input as a picture, one pixel per value; null when it is not an image.
QImage exampleImage(const Tensor& input);
// The first `maxValues` values ("1.25, -0.3, …").
QString exampleValuesText(const Tensor& input, int maxValues = 8);
// A probability as the views print it ("0.873", "<0.001").
QString probabilityText(double p);
// A class name by index, or its number when the data has no names.
QString classLabel(const std::vector<std::string>& names, int64_t c);

} // namespace myelin::ui::eval
