// Myelin's example plugin: a Squeeze-and-Excitation block (Hu et al., 2018) as a layer kind.
//
//   s = mean over H, W of x          [N, C, 1, 1]   (squeeze)
//   e = sigmoid(fc2(relu(fc1(s))))   [N, C, 1, 1]   (excitation; fc1, fc2: 1x1 convolutions)
//   y = x * e                        [N, C, H, W]
//
// It is torchvision.ops.SqueezeExcitation(channels, squeeze_channels): the same module names
// (fc1, fc2), parameter shapes and default initialisation, so its checkpoints load there.
// Forward uses core's differentiable ops only, so autograd, hooks, the inspection views and
// state_dict work as for a built-in layer. Build: plugins/example/CMakeLists.txt; use: see
// plugins/example/README.md.
#include <myelin/error.h>
#include <myelin/nn/layers.h>
#include <myelin/nn/module.h>
#include <myelin/plugin/plugin.h>
#include <myelin/tensor.h>

namespace {

using namespace myelin;
using graph::Attrs;
using graph::TensorType;

int64_t squeeze_channels(const Attrs& a) {
    return std::max<int64_t>(1, a.get_int("channels") / a.get_int("reduction"));
}

class SqueezeExcitation : public nn::Module {
  public:
    SqueezeExcitation(int64_t channels, int64_t squeezed)
        : nn::Module("SqueezeExcitation"), channels_(channels), squeezed_(squeezed) {
        fc1_ = register_module("fc1", std::make_shared<nn::Conv2d>(channels, squeezed, 1));
        fc2_ = register_module("fc2", std::make_shared<nn::Conv2d>(squeezed, channels, 1));
    }

    Tensor forward(const TensorList& inputs) override {
        const Tensor& x = inputs.at(0);
        Tensor scale = mean(x, {2, 3}, /*keepdim=*/true);
        scale = sigmoid((*fc2_)(relu((*fc1_)(scale))));
        return x * scale;
    }

    std::string extra_repr() const override {
        return std::to_string(channels_) + ", squeeze_channels=" + std::to_string(squeezed_);
    }

  private:
    int64_t channels_, squeezed_;
    std::shared_ptr<nn::Conv2d> fc1_, fc2_;
};

graph::LayerKind squeeze_excitation_kind() {
    graph::LayerKind k;
    k.name = "SqueezeExcitation";
    k.category = graph::Category::Normalization; // it rescales channels, like a norm layer
    k.doc = "Squeeze-and-Excitation: rescales each channel by a gate learned from the "
            "channel means (torchvision.ops.SqueezeExcitation).";
    k.attrs = {
        graph::attr::integer("channels", 16, "Input channels C.", 1),
        graph::attr::integer("reduction", 4, "Squeeze to C / reduction channels (>= 1).", 1)};
    k.summary_attrs = {"channels", "reduction"};
    k.input_channels_attr = "channels"; // the editor offers "Set channels to ..." when it differs
    k.infer = [](const Attrs& a, std::span<const TensorType> in) {
        const TensorType& x = in[0];
        if (x.shape.size() != 4)
            throw ShapeError("expected 4-d [N, C, H, W] input, got " + x.shape.str());
        if (x.shape[1] != a.get_int("channels"))
            throw ShapeError("expected " + std::to_string(a.get_int("channels")) +
                             " channels (attribute channels), got " + std::to_string(x.shape[1]) +
                             " in " + x.shape.str());
        if (x.dtype != DType::Float32)
            throw DTypeError(std::string("expected float32 input, got ") + dtype_name(x.dtype));
        return x;
    };
    k.param_count = [](const Attrs& a) {
        const int64_t c = a.get_int("channels"), s = squeeze_channels(a);
        return 2 * c * s + s + c;
    };
    k.flops = [](const Attrs& a, std::span<const TensorType> in, const TensorType&) {
        const double n = double(in[0].shape[0]), c = double(a.get_int("channels"));
        const double hw = double(in[0].shape[2] * in[0].shape[3]);
        const double s = double(squeeze_channels(a));
        // mean + two products + the gate's multiply
        return n * (c * hw + 2 * (2 * c * s) + c * hw);
    };
    k.build = [](const Attrs& a) {
        return std::make_shared<SqueezeExcitation>(a.get_int("channels"), squeeze_channels(a));
    };
    return k;
}

void add_kinds(plugin::Registry& registry) {
    registry.set_info("example", "1.0", "Myelin's example plugin: a Squeeze-and-Excitation layer.");
    registry.add(squeeze_excitation_kind());
}

} // namespace

MYELIN_PLUGIN(add_kinds)
