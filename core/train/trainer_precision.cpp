// Where a run trains and in what precision: the device the project (or --device) asks for,
// checked before anything is built; float16's loss scaling in the training step (as
// torch.cuda.amp.GradScaler in a PyTorch loop: scale the loss, unscale before clipping, skip the
// step on inf/NaN, update the scale) and its state in checkpoints. The loop is in trainer.cpp.
#include <myelin/autocast.h>
#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/optim/clip_grad.h>
#include <myelin/optim/grad_scaler.h>
#include <myelin/optim/optimizer.h>
#include <myelin/train/trainer.h>

#include <cstdio>

namespace myelin::train {

void check_precision(spec::Precision precision, const Device& device) {
    if (precision != spec::Precision::Float16) return;
    if (!device.is_cuda())
        throw Error("training.precision \"float16\" needs a CUDA device (training runs on " +
                    device.str() +
                    "): float16 autocast and its loss scaling are for GPUs; on the CPU choose "
                    "\"bfloat16\" (PyTorch's CPU autocast is bfloat16 too)");
    try {
        AutocastGuard probe(DType::Float16);
    } catch (const Error& e) {
        throw Error("training.precision \"float16\" is not available on " + device.str() +
                    " in this version: " + e.what());
    }
}

Device training_device(const io::Project& project, std::optional<Device> requested) {
    Device device;
    if (requested) {
        device = *requested;
    } else {
        try {
            device = parse_device(project.train.device);
        } catch (const Error& e) {
            throw Error("training.device: " + std::string(e.what()));
        }
    }
    try {
        check_training_device(device);
    } catch (const Error& e) {
        if (requested) throw;
        throw Error("the project's training.device \"" + project.train.device + "\": " + e.what());
    }
    check_precision(project.train.precision, device);
    return device;
}

void Trainer::setup_loss_scaling() {
    std::optional<optim::GradScalerOptions> options = options_.grad_scaler;
    if (!options && spec_.precision == spec::Precision::Float16) options.emplace();
    if (options && options->enabled) scaler_ = std::make_unique<optim::GradScaler>(*options);
}

void Trainer::unscale_gradients() {
    if (!scaler_ || unscaled_) return;
    scaler_->unscale_(*optimizer_);
    unscaled_ = true;
    overflowed_ = scaler_->found_inf(*optimizer_);
}

void Trainer::clip_and_step(StepMetrics& metrics) {
    unscale_gradients();
    // Clipping an overflowed step's gradients would only spread the NaN; the step is skipped.
    if (!overflowed_) {
        if (spec_.clip_grad_norm) optim::clip_grad_norm_(parameters_, *spec_.clip_grad_norm);
        if (spec_.clip_grad_value) optim::clip_grad_value_(parameters_, *spec_.clip_grad_value);
    }
    if (!scaler_) {
        optimizer_->step();
        return;
    }
    scaler_->step(*optimizer_);
    scaler_->update();
    metrics.grad_scale = scaler_->get_scale();
    metrics.step_skipped = overflowed_;
    unscaled_ = false;
}

void Trainer::restore_loss_scaling(const io::Checkpoint& c, const std::string& where) {
    char scale[32];
    if (scaler_ && !c.grad_scaler.empty()) {
        try {
            scaler_->load_state_dict(c.grad_scaler);
        } catch (const Error& e) {
            throw Error(where + ": loss scaling state does not fit: " + e.what());
        }
        return;
    }
    if (scaler_) {
        std::snprintf(scale, sizeof scale, "%g", scaler_->get_scale());
        init_messages_.push_back({LogLevel::Info, where +
                                                      " holds no loss scaling state (trained "
                                                      "without it): the scale starts at " +
                                                      scale});
    } else if (!c.grad_scaler.empty()) {
        init_messages_.push_back(
            {LogLevel::Info, where + " holds loss scaling state; training.precision \"" +
                                 spec::name_of(spec_.precision) +
                                 "\" does not scale the loss, so it is unused"});
    }
}

} // namespace myelin::train
