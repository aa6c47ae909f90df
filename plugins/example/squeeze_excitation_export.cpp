// The example plugin's second entry point: the export forms of its SqueezeExcitation kind, so
// models that use it export to ONNX and to PyTorch code like built-in ones. This file links
// libmyelin_export; the kind itself (squeeze_excitation.cpp) needs only core.
//
//   ONNX:    GlobalAveragePool -> Conv 1x1 (fc1) -> Relu -> Conv 1x1 (fc2) -> Sigmoid -> Mul
//   PyTorch: a SqueezeExcitation class written into the file, with torchvision's module names
//            (fc1, fc2), so the checkpoint loads strictly.
#include <myelin/export/layer_forms.h>

namespace {

using namespace myelin;
using namespace myelin::exporters;

int64_t squeeze_channels(const graph::Attrs& a) {
    return std::max<int64_t>(1, a.get_int("channels") / a.get_int("reduction"));
}

std::vector<std::string> squeeze_excitation_onnx(OnnxGraph& g, const OnnxLayer& l) {
    auto conv = [&](const std::string& x, const std::string& fc) {
        const std::string prefix = l.module_name + "." + fc;
        return g.op("Conv",
                    {x, g.initializer(prefix + ".weight", l.weight(fc + ".weight")),
                     g.initializer(prefix + ".bias", l.weight(fc + ".bias"))},
                    l.name(fc), {attr_ints("kernel_shape", {1, 1})});
    };
    std::string scale = g.op("GlobalAveragePool", {l.inputs[0]}, l.name("squeeze"));
    scale = g.op("Relu", {conv(scale, "fc1")}, l.name("fc1_relu"));
    scale = g.op("Sigmoid", {conv(scale, "fc2")}, l.name("gate"));
    return {g.op("Mul", {l.inputs[0], scale}, l.module_name)};
}

const char* const kSqueezeExcitationClass = R"(class SqueezeExcitation(nn.Module):
    """torchvision.ops.SqueezeExcitation: each channel rescaled by a gate learned from the
    channel means (Myelin's example plugin)."""

    def __init__(self, channels, squeeze_channels):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, channels, 1)

    def forward(self, x):
        scale = x.mean(dim=(2, 3), keepdim=True)
        return x * torch.sigmoid(self.fc2(torch.relu(self.fc1(scale))))
)";

void add_forms(FormsRegistry& registry) {
    LayerForms forms;
    forms.onnx = squeeze_excitation_onnx;
    forms.pytorch_module = [](const PyLayer& l) {
        return "SqueezeExcitation(" + py_int(l.attrs, "channels") + ", " +
               std::to_string(squeeze_channels(l.attrs)) + ")";
    };
    forms.pytorch_definitions = {{"SqueezeExcitation", kSqueezeExcitationClass}};
    registry.add("SqueezeExcitation", std::move(forms));
}

} // namespace

MYELIN_PLUGIN_EXPORT_FORMS(add_forms)
