// Layer kinds of the Normalization (batch, layer and group norm) and Regularization (dropout)
// categories.
#include "graph/registry_parts.h"

#include <myelin/graph/registry.h>
#include <myelin/nn/layers.h>

#include <optional>
#include <string>

namespace myelin::graph::detail {

namespace {

std::optional<double> momentum_of(const Attrs& a) {
    if (a.is_none("momentum")) return std::nullopt;
    return a.get_float("momentum");
}

} // namespace

void add_normalization_kinds(std::vector<LayerKind>& kinds) {
    auto batch_norm = [](std::string name, std::string doc, bool two_d) {
        LayerKind k = kind(std::move(name), Category::Normalization, std::move(doc));
        k.input_channels_attr = "num_features";
        AttrDesc momentum = attr::number("momentum", 0.1,
                                         "Running statistics update factor; None: cumulative "
                                         "average.",
                                         0.0, 1.0);
        momentum.nullable = true;
        k.attrs = {attr::integer("num_features", 16, "Channels C of the input.", 1),
                   attr::number("eps", 1e-5, "Added to the variance for stability.", 0.0), momentum,
                   attr::flag("affine", true, "Learn a per-channel scale and shift."),
                   attr::flag("track_running_stats", true,
                              "Keep running mean and variance for evaluation.")};
        k.summary_attrs = {"num_features"};
        k.infer = [two_d](const Attrs& a, Inputs in) {
            require_float(in[0]);
            int rank = in[0].shape.size();
            if (two_d ? rank != 4 : (rank != 2 && rank != 3))
                fail(std::string("expected ") +
                     (two_d ? "4-d input [N, C, H, W]" : "2-d or 3-d input [N, C] or [N, C, L]") +
                     ", got " + in[0].shape.str());
            require_channels(in[0], a.get_int("num_features"), "num_features");
            return in[0];
        };
        k.param_count = [](const Attrs& a) {
            return a.get_bool("affine") ? 2 * a.get_int("num_features") : 0;
        };
        k.flops = pointwise(4);
        k.build = [two_d](const Attrs& a) -> std::shared_ptr<nn::Module> {
            if (two_d)
                return std::make_shared<nn::BatchNorm2d>(
                    a.get_int("num_features"), a.get_float("eps"), momentum_of(a),
                    a.get_bool("affine"), a.get_bool("track_running_stats"));
            return std::make_shared<nn::BatchNorm1d>(a.get_int("num_features"), a.get_float("eps"),
                                                     momentum_of(a), a.get_bool("affine"),
                                                     a.get_bool("track_running_stats"));
        };
        return k;
    };
    kinds.push_back(batch_norm(
        "BatchNorm1d", "Batch normalization over [N, C] or [N, C, L] (per channel).", false));
    kinds.push_back(
        batch_norm("BatchNorm2d", "Batch normalization over [N, C, H, W] (per channel).", true));
    {
        LayerKind k = kind("LayerNorm", Category::Normalization,
                           "Normalizes over the trailing dimensions given by normalized_shape.");
        k.attrs = {attr::int_list("normalized_shape", {128},
                                  "The trailing dimensions to normalize over.", 1, 4, 1),
                   attr::number("eps", 1e-5, "Added to the variance for stability.", 0.0),
                   attr::flag("elementwise_affine", true, "Learn a scale and shift per element.")};
        k.summary_attrs = {"normalized_shape"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_float(in[0]);
            const auto& ns = a.get_ints("normalized_shape");
            const Dims& s = in[0].shape;
            bool ok = s.size() > int(ns.size());
            for (size_t i = 0; ok && i < ns.size(); ++i)
                ok = s[s.size() - int(ns.size()) + int(i)] == ns[i];
            if (!ok)
                fail("expected input [N, *, " + Dims(ns).str().substr(1) +
                     " (normalized_shape), got " + s.str());
            return in[0];
        };
        k.param_count = [](const Attrs& a) {
            return a.get_bool("elementwise_affine")
                       ? 2 * Dims(a.get_ints("normalized_shape")).numel()
                       : 0;
        };
        k.flops = pointwise(5);
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::LayerNorm>(Dims(a.get_ints("normalized_shape")),
                                                   a.get_float("eps"),
                                                   a.get_bool("elementwise_affine"));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("GroupNorm", Category::Normalization,
                           "Normalizes groups of channels of [N, C, *].");
        k.input_channels_attr = "num_channels";
        k.attrs = {attr::integer("num_groups", 4, "Groups the channels are divided into.", 1),
                   attr::integer("num_channels", 16, "Channels C of the input.", 1),
                   attr::number("eps", 1e-5, "Added to the variance for stability.", 0.0),
                   attr::flag("affine", true, "Learn a per-channel scale and shift.")};
        k.summary_attrs = {"num_groups", "num_channels"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_float(in[0]);
            if (in[0].shape.size() < 2) fail("expected input [N, C, *], got " + in[0].shape.str());
            require_channels(in[0], a.get_int("num_channels"), "num_channels");
            if (a.get_int("num_channels") % a.get_int("num_groups") != 0)
                fail("num_channels " + std::to_string(a.get_int("num_channels")) +
                     " must be divisible by num_groups " + std::to_string(a.get_int("num_groups")));
            return in[0];
        };
        k.param_count = [](const Attrs& a) {
            return a.get_bool("affine") ? 2 * a.get_int("num_channels") : 0;
        };
        k.flops = pointwise(5);
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::GroupNorm>(a.get_int("num_groups"),
                                                   a.get_int("num_channels"), a.get_float("eps"),
                                                   a.get_bool("affine"));
        };
        kinds.push_back(std::move(k));
    }
}

void add_regularization_kinds(std::vector<LayerKind>& kinds) {
    {
        LayerKind k = kind("Dropout", Category::Regularization,
                           "Zeroes elements with probability p while training; scales the rest "
                           "by 1 / (1 - p).");
        k.attrs = {attr::number("p", 0.5, "Probability of zeroing an element.", 0.0, 1.0)};
        k.summary_attrs = {"p"};
        k.infer = same_as_input;
        k.param_count = no_params;
        k.flops = pointwise(1);
        k.build = [](const Attrs& a) { return std::make_shared<nn::Dropout>(a.get_float("p")); };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Dropout2d", Category::Regularization,
                           "Zeroes whole channels of [N, C, H, W] with probability p while "
                           "training.");
        k.attrs = {attr::number("p", 0.5, "Probability of zeroing a channel.", 0.0, 1.0)};
        k.summary_attrs = {"p"};
        k.infer = [](const Attrs&, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            return in[0];
        };
        k.param_count = no_params;
        k.flops = pointwise(1);
        k.build = [](const Attrs& a) { return std::make_shared<nn::Dropout2d>(a.get_float("p")); };
        kinds.push_back(std::move(k));
    }
}

} // namespace myelin::graph::detail
