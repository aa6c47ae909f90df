// `myelin quantize [PROJECT] --checkpoint FILE -o OUT`: an int8 checkpoint of a float one
// (train/quantization.h), with what became int8, what stayed float and why, and the sizes.
#include <myelin/error.h>
#include <myelin/train/quantization.h>

#include "cli_common.h"

#include <cstdio>

namespace myelin::cli {

int cmd_quantize(const Args& args) {
    const std::filesystem::path checkpoint = *args.get("--checkpoint");
    train::QuantizeOptions options;
    if (args.flag("--dynamic")) {
        options.scheme = quant::Scheme::Dynamic;
        if (args.get("--observer") || args.get("--calibration-batches"))
            throw UsageError{"--observer and --calibration-batches are for static quantization "
                             "(dynamic quantization measures each batch as it comes)"};
    }
    if (auto name = args.get("--observer")) {
        const auto kind = quant::parse_observer_kind(*name);
        if (!kind)
            throw UsageError{"--observer: unknown observer '" + *name +
                             "' (histogram, minmax, moving-average)"};
        options.observer = *kind;
    }
    options.calibration_batches = args.get_int("--calibration-batches", 1).value_or(32);
    options.qat_epochs = args.get_int("--qat-epochs", 1).value_or(0);
    if (options.qat_epochs > 0 && options.scheme == quant::Scheme::Dynamic)
        throw UsageError{"--qat-epochs is for static quantization"};
    if (auto lr = args.get_positive("--qat-lr")) {
        if (options.qat_epochs == 0) throw UsageError{"--qat-lr needs --qat-epochs"};
        options.qat_lr = *lr;
    }
    if (options.qat_epochs > 0 && args.get("--observer"))
        throw UsageError{"--observer: quantization-aware training follows the ranges with "
                         "moving-average observers (PyTorch's QAT default)"};
    options.threads = int(args.get_int("--threads", 1).value_or(0));
    const std::filesystem::path out = *args.get("--output");
    // The command line is checked whole before any file is read (exit 2 before exit 1).
    io::Project project;
    std::filesystem::path project_dir;
    if (args.positional().empty()) {
        std::tie(project, project_dir) = checkpoint_project(checkpoint);
    } else {
        const std::filesystem::path path = args.positional()[0];
        project = io::load_project(path);
        project_dir = path.parent_path().empty() ? "." : path.parent_path();
    }

    const train::QuantizeResult r =
        train::quantize_checkpoint(project, project_dir, checkpoint, out, options);
    const quant::QuantizationPlan& plan = r.plan;
    if (plan.scheme == quant::Scheme::Static)
        std::printf("static int8: %s observer, %lld calibration batch(es) of %lld%s\n",
                    std::string(quant::observer_kind_name(plan.observer)).c_str(),
                    (long long)plan.calibration_batches, (long long)project.data.batch_size,
                    plan.qat_epochs > 0 ? (", then " + std::to_string(plan.qat_epochs) +
                                           " epoch(s) of quantization-aware training")
                                              .c_str()
                                        : "");
    else
        std::printf("dynamic int8: activations quantized per batch\n");
    for (const quant::QuantizedLayer& layer : plan.layers) {
        std::printf("  int8   %-16s %-8s", layer.module.c_str(), layer.kind.c_str());
        if (plan.scheme == quant::Scheme::Static)
            std::printf(" input scale %.6g zero point %d, output scale %.6g zero point %d%s",
                        double(layer.input.scale), int(layer.input.zero_point),
                        double(layer.output.scale), int(layer.output.zero_point),
                        layer.relu ? ", ReLU fused" : "");
        if (!layer.bn_module.empty()) std::printf(", BatchNorm %s folded", layer.bn_module.c_str());
        if (!layer.pool_module.empty())
            std::printf(", max pool %s on int8", layer.pool_module.c_str());
        std::printf("\n");
    }
    for (const quant::FloatLayer& layer : plan.float_layers)
        std::printf("  float  %-16s %-8s %s\n", layer.module.c_str(), layer.kind.c_str(),
                    layer.reason.c_str());
    std::printf("model tensors: %lld bytes float32, %lld bytes int8 (%.2fx)\n",
                (long long)r.float_bytes, (long long)r.int8_bytes,
                r.float_bytes > 0 ? double(r.int8_bytes) / double(r.float_bytes) : 0.0);
    std::printf("wrote %s (evaluate: myelin eval --checkpoint %s)\n", out.string().c_str(),
                out.string().c_str());
    return kExitOk;
}

} // namespace myelin::cli
