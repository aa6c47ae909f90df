#include "eval/example_render.h"

#include "inspect/feature_maps_view.h"

#include <QStringList>

#include <algorithm>
#include <cmath>
#include <limits>

namespace myelin::ui::eval {

bool isImageInput(const Tensor& input) {
    if (!input.defined()) return false;
    if (input.dim() == 2) return input.size(0) >= 4 && input.size(1) >= 4;
    return input.dim() == 3 && input.size(0) <= 4 && input.size(1) >= 4 && input.size(2) >= 4;
}

QImage exampleImage(const Tensor& input) {
    if (!isImageInput(input)) return {};
    const Tensor x =
        (input.dim() == 2 ? input.unsqueeze(0) : input).to(DType::Float32).contiguous();
    const int64_t channels = x.size(0), height = x.size(1), width = x.size(2);
    const bool rgb = channels == 3;
    const float* v = x.data<float>();
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (int64_t i = 0; i < (rgb ? 3 : 1) * height * width; ++i)
        if (std::isfinite(v[i]))
            low = std::min(low, double(v[i])), high = std::max(high, double(v[i]));
    const double span = high > low ? high - low : 1.0;
    const auto level = [&](int64_t c, int64_t y, int64_t px) {
        const double value = v[(c * height + y) * width + px];
        return std::isfinite(value) ? (value - low) / span : 0.0;
    };
    QImage image(int(width), int(height), QImage::Format_RGB32);
    for (int y = 0; y < image.height(); ++y) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
        for (int px = 0; px < image.width(); ++px)
            line[px] = rgb ? qRgb(int(std::lround(level(0, y, px) * 255)),
                                  int(std::lround(level(1, y, px) * 255)),
                                  int(std::lround(level(2, y, px) * 255)))
                           // Low values dark, high ones light: the picture as it was taken.
                           : FeatureMapsView::shade(level(0, y, px));
    }
    return image;
}

QString exampleValuesText(const Tensor& input, int maxValues) {
    if (!input.defined()) return {};
    const Tensor x = input.reshape({-1}).to(DType::Float64).contiguous();
    const double* v = x.data<double>();
    QStringList parts;
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n && i < maxValues; ++i)
        parts << QString::number(v[i], 'g', 4);
    QString text = parts.join(QStringLiteral(", "));
    if (n > maxValues) text += QStringLiteral(", …");
    return text;
}

QString probabilityText(double p) {
    if (!std::isfinite(p)) return QStringLiteral("—");
    if (p > 0 && p < 0.001) return QStringLiteral("<0.001");
    return QString::number(p, 'f', 3);
}

QString classLabel(const std::vector<std::string>& names, int64_t c) {
    return c >= 0 && c < int64_t(names.size()) ? QString::fromStdString(names[size_t(c)])
                                               : QString::number(c);
}

} // namespace myelin::ui::eval
