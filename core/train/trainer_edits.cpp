// A paused run changed (RunControl::request_edits, the studio's "Change While Paused"): the
// learning rate, clipping, which layers train and their lr multipliers, and what is captured,
// applied before the next optimizer step and reported as one RunChanged event.
#include <myelin/error.h>
#include <myelin/graph/build.h>
#include <myelin/optim/optimizer.h>
#include <myelin/train/components.h>
#include <myelin/train/trainer.h>

#include "parameter_groups.h"

#include <algorithm>
#include <cmath>

namespace myelin::train {

using detail::format_number;

namespace {

// What differs between two capture settings: "summaries off -> every 2, captured layers all ->
// 0 2".
std::string capture_changes(const spec::CaptureSpec& before, const spec::CaptureSpec& after) {
    auto every = [](int64_t n) {
        return n > 0 ? "every " + std::to_string(n) : std::string("off");
    };
    auto layers = [](const std::vector<std::string>& names) {
        std::string text;
        for (const auto& name : names)
            text += (text.empty() ? "" : " ") + name;
        return text.empty() ? std::string("all") : text;
    };
    std::string what;
    auto compare = [&](const char* label, const std::string& a, const std::string& b) {
        if (a != b) what += (what.empty() ? "" : ", ") + std::string(label) + " " + a + " -> " + b;
    };
    compare("layer norms", before.layer_norms ? every(before.layer_norms_every) : "off",
            after.layer_norms ? every(after.layer_norms_every) : "off");
    compare("summaries", every(before.summaries_every), every(after.summaries_every));
    compare("feature maps", every(before.feature_maps_every), every(after.feature_maps_every));
    compare("captured layers", layers(before.layers), layers(after.layers));
    return what;
}

} // namespace

void Trainer::apply_pending_edits() {
    const std::optional<RunEdits> edits = control_->take_edits();
    if (!edits) return;
    std::string what;
    auto add = [&](const std::string& text) { what += (what.empty() ? "" : ", ") + text; };
    auto clip_text = [](const std::optional<double>& v) {
        return v ? format_number(*v) : std::string("off");
    };
    if (edits->lr) {
        const spec::SchedulerKind* schedule =
            spec_.scheduler ? spec::find_component(spec::scheduler_kinds(), spec_.scheduler->kind)
                            : nullptr;
        auto& groups = optimizer_->param_groups();
        const double old_lr = groups.empty() ? 0.0 : groups.front().options.at("lr");
        if (schedule && schedule->sets_lr_itself) {
            report(LogMessage{LogLevel::Warning,
                              schedule->name + " sets the learning rate from its own options: "
                                               "the lr was not changed"});
        } else if (!(*edits->lr > 0) || !(old_lr > 0)) {
            report(LogMessage{LogLevel::Warning, "the learning rate cannot be scaled from " +
                                                     format_number(old_lr) + " to " +
                                                     format_number(*edits->lr)});
        } else {
            // Every group and the schedule scaled by one factor: ratios between groups and the
            // schedule's shape from here on are kept.
            const double factor = *edits->lr / old_lr;
            for (auto& g : groups) {
                g.options["lr"] *= factor;
                if (auto it = g.options.find("initial_lr"); it != g.options.end())
                    it->second *= factor;
            }
            if (schedule_) {
                optim::SchedulerState state = schedule_->state_dict();
                detail::scale_schedule_lrs(state, std::vector<double>(groups.size(), factor));
                schedule_->load_state_dict(state);
            }
            add("lr " + format_number(old_lr) + " -> " + format_number(*edits->lr));
        }
    }
    if (edits->clip_grad_norm && *edits->clip_grad_norm != spec_.clip_grad_norm) {
        add("clip_grad_norm " + clip_text(spec_.clip_grad_norm) + " -> " +
            clip_text(*edits->clip_grad_norm));
        spec_.clip_grad_norm = *edits->clip_grad_norm;
    }
    if (edits->clip_grad_value && *edits->clip_grad_value != spec_.clip_grad_value) {
        add("clip_grad_value " + clip_text(spec_.clip_grad_value) + " -> " +
            clip_text(*edits->clip_grad_value));
        spec_.clip_grad_value = *edits->clip_grad_value;
    }
    std::vector<std::pair<std::string, bool>> frozen;
    if (!edits->frozen.empty() || !edits->lr_multiplier.empty()) {
        const std::string changed =
            change_layer_training(edits->frozen, edits->lr_multiplier, frozen);
        if (!changed.empty()) add(changed);
    }
    if (edits->capture && *edits->capture != spec_.capture) {
        add(capture_changes(spec_.capture, *edits->capture));
        spec_.capture = *edits->capture;
        select_captured_layers();
    }
    if (!what.empty()) report(RunChanged{step_, what, std::move(frozen)});
}

std::string Trainer::change_layer_training(const std::map<std::string, bool>& frozen,
                                           const std::map<std::string, double>& multipliers,
                                           std::vector<std::pair<std::string, bool>>& changed) {
    if (world_size() > 1) {
        report(LogMessage{LogLevel::Warning, "frozen layers and lr multipliers cannot change "
                                             "while several processes train together"});
        return {};
    }
    const graph::ModelSpec before_spec = project_.model;
    const detail::ParameterLayout before = detail::parameter_layout(project_.model, *model_);
    std::string what;
    auto add = [&](const std::string& text) { what += (what.empty() ? "" : ", ") + text; };
    auto node_of = [&](const std::string& name) -> graph::Node* {
        graph::Node* node = nullptr;
        try {
            node = project_.model.find(model_->node_of_module(name));
        } catch (const Error&) {
        }
        if (!node) report(LogMessage{LogLevel::Warning, "the model has no layer '" + name + "'"});
        return node;
    };
    for (const auto& [name, on] : frozen) {
        graph::Node* node = node_of(name);
        if (!node || node->frozen == on) continue;
        node->frozen = on;
        changed.emplace_back(name, on);
        add((on ? "froze " : "unfroze ") + project_.model.display_name(node->id));
    }
    for (const auto& [name, multiplier] : multipliers) {
        graph::Node* node = node_of(name);
        if (!node || node->lr_multiplier == multiplier) continue;
        if (!(multiplier > 0) || !std::isfinite(multiplier)) {
            report(LogMessage{LogLevel::Warning, name + ": an lr multiplier must be above 0, not " +
                                                     format_number(multiplier)});
            continue;
        }
        add(project_.model.display_name(node->id) + " lr x" + format_number(node->lr_multiplier) +
            " -> x" + format_number(multiplier));
        node->lr_multiplier = multiplier;
    }
    if (what.empty()) return {};
    if (detail::parameter_layout(project_.model, *model_).names.empty()) {
        project_.model = before_spec;
        changed.clear();
        report(LogMessage{LogLevel::Warning,
                          "every layer with parameters would be frozen: nothing was changed"});
        return {};
    }
    for (const auto& node : project_.model.nodes) {
        const std::string& name = model_->module_name(node.id);
        if (name.empty() || node.frozen == before_spec.node(node.id).frozen) continue;
        const auto child = model_->child(name);
        if (!child) continue;
        child->requires_grad_(!node.frozen);
        // A gradient left from before would still be clipped and measured: frozen means none.
        if (node.frozen)
            for (auto& p : child->parameters())
                p.set_grad(Tensor());
    }
    relayout_optimizer(before);
    return what;
}

size_t Trainer::relayout_optimizer(const detail::ParameterLayout& before) {
    const detail::ParameterLayout after = detail::parameter_layout(project_.model, *model_);
    if (after.names.empty()) throw Error("the model has no trainable parameters (all frozen?)");
    // Every group shares the optimizer's hyper-parameters; its lr is the first group's per unit
    // multiplier times its own, so what the schedule has done so far carries over.
    optim::Options unit = optimizer_->param_groups().front().options;
    for (const char* key : {"lr", "initial_lr"})
        if (auto it = unit.find(key); it != unit.end()) it->second /= before.multipliers.front();
    size_t kept = 0;
    optim::OptimizerStateDict state = detail::remap_optimizer_state(
        optimizer_->state_dict(), before.names, after.names, {}, kept);
    for (size_t g = 0; g < after.names.size(); ++g) {
        optim::Options options = unit;
        for (const char* key : {"lr", "initial_lr"})
            if (auto it = options.find(key); it != options.end())
                it->second *= after.multipliers[g];
        state.param_groups[g].options = std::move(options);
    }
    std::optional<optim::SchedulerState> schedule_state;
    if (schedule_) {
        schedule_state = schedule_->state_dict();
        detail::regroup_schedule_state(*schedule_state, before.multipliers, after.multipliers);
        schedule_.reset(); // it holds the optimizer replaced next
    }
    optimizer_ = make_optimizer(spec_.optimizer, detail::parameter_groups(after, *model_));
    if (schedule_state) {
        schedule_ = std::make_unique<Schedule>(*spec_.scheduler, *optimizer_,
                                               schedule_steps(spec_, steps_per_epoch_));
        schedule_->load_state_dict(*schedule_state);
    }
    // Last: a new schedule sets the groups' lr from its own start.
    optimizer_->load_state_dict(state);
    group_lr_multipliers_ = after.multipliers;
    return kept;
}

} // namespace myelin::train
