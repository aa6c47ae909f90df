// How a run ends short of its epochs: failed (the project's or the data's fault), or stopped
// after a fault of the machine (a device error, a checkpoint the disk refused), saying where it
// can be resumed from. The loop that calls these is in trainer.cpp.
#include <myelin/train/callbacks.h>
#include <myelin/train/trainer.h>

#include "backend/backend.h"

namespace myelin::train {

void Trainer::stop_after_device_fault(const std::exception& e) {
    // The machine's fault, not the project's: the run stops, resumable, rather than fails. No
    // checkpoint of the state now: a fault inside a step can leave it half updated, and a lost
    // device cannot be read.
    const BackendInfo device = backend::get(options_.device.type).info();
    result_.status = RunStatus::Stopped;
    result_.error = "the device " + options_.device.str() + " (" + device.name + ", " +
                    device.details + ") failed after step " + std::to_string(step_) + " (epoch " +
                    std::to_string(epoch_ + 1) + "): " + e.what() + "; the run stopped; " +
                    resume_hint();
    if (!last_written_checkpoint_.empty()) result_.last_checkpoint = last_written_checkpoint_;
    report(RunError{result_.error, epoch_, step_, std::nullopt, true});
}

std::string Trainer::resume_hint() const {
    if (!last_written_checkpoint_.empty())
        return "it can be resumed from " + last_written_checkpoint_.string() + " (step " +
               std::to_string(last_written_step_) + ")";
    if (!options_.resume_from.empty())
        return "it can be resumed from " + options_.resume_from.string() + ", where it started";
    return "no checkpoint was written before it, so it cannot be resumed: train again";
}

void Trainer::fail(const std::exception& e) {
    result_.status = RunStatus::Failed;
    result_.error = e.what();
    if (const auto* failure = dynamic_cast<const TrainingFailure*>(&e))
        result_.error_module = failure->module();
    report(RunError{result_.error, epoch_, step_, result_.error_module});
}

void Trainer::stop_after_write_failure(const std::exception& e) {
    // A checkpoint the disk could not take: the run stops (not fails), resumable from the last
    // checkpoint that was written, which is kept.
    result_.status = RunStatus::Stopped;
    result_.error = std::string(e.what()) + "; the run stopped after step " +
                    std::to_string(step_) + "; " + resume_hint();
    report(RunError{result_.error, epoch_, step_, std::nullopt, true});
}

} // namespace myelin::train
