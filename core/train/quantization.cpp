#include <myelin/data/dataloader.h>
#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/quantization.h>
#include <myelin/train/trainer.h>

namespace myelin::train {

QuantizeResult quantize_checkpoint(const io::Project& project,
                                   const std::filesystem::path& project_dir,
                                   const std::filesystem::path& checkpoint,
                                   const std::filesystem::path& out,
                                   const QuantizeOptions& options) {
    io::Checkpoint saved = io::load_checkpoint(checkpoint);
    if (!saved.quantization.empty())
        throw Error(checkpoint.string() +
                    ": this checkpoint is already quantized; quantize the float checkpoint it "
                    "was made from");
    if (options.calibration_batches < 1)
        throw Error("calibration needs at least one batch (got " +
                    std::to_string(options.calibration_batches) + ")");
    auto trainer = trainer_for_checkpoint(project, project_dir, checkpoint, options.threads);
    graph::GraphModule& model = trainer->model();

    QuantizeResult result;
    result.float_bytes = quant::state_bytes(model.state_dict());
    result.plan = quant::plan_quantization(project.model, model, options.scheme, options.observer);

    if (options.scheme == quant::Scheme::Static) {
        // The first batches of the training split through the evaluation transforms (no
        // augmentation), in the split's order: a random order when the project holds out
        // validation data, the file's order otherwise (what a benchmark against PyTorch feeds
        // its own calibration).
        data::DataLoaderOptions o;
        o.batch_size = project.data.batch_size;
        o.transform = trainer->data().eval_transform;
        data::DataLoader loader(trainer->data().train, o);
        loader.start_epoch(0);
        const int64_t total = std::min(options.calibration_batches, loader.size());
        int64_t done = 0;
        quant::calibrate(model, result.plan, [&](TensorList& inputs) {
            if (done == total) return false;
            auto batch = loader.next();
            if (!batch) return false;
            inputs.push_back(batch->input);
            ++done;
            if (options.progress) options.progress(done, total);
            return true;
        });
    }
    quant::quantize_model(model, result.plan);

    const quant::QuantizedState state = quant::quantized_state(model);
    result.int8_bytes = quant::state_bytes(state.tensors);
    // The same checkpoint less what only training needs (it cannot resume: the int8 layers
    // have no gradients).
    saved.model = state.tensors;
    saved.int8_tensors = state.int8_names;
    saved.quantization = result.plan.to_json();
    saved.optimizer_kind.clear();
    saved.optimizer = {};
    saved.scheduler.reset();
    saved.grad_scaler.clear();
    io::save_checkpoint(out, saved);
    return result;
}

} // namespace myelin::train
