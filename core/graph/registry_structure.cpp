// Layer kinds of the Merge (Add, Multiply, Concat: several inputs), Reshape (Flatten, Unflatten,
// Identity, Upsample) and Embedding categories.
#include "graph/registry_parts.h"

#include <myelin/error.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/layers.h>

#include <algorithm>
#include <string>

namespace myelin::graph::detail {

namespace {

AttrDesc num_inputs_attr() {
    return attr::integer("num_inputs", 2, "Number of input ports.", 2, 16);
}

LayerKind merge(std::string name, std::string doc, std::vector<AttrDesc> attrs, InferFn infer,
                BuildFn build) {
    LayerKind k = kind(std::move(name), Category::Merge, std::move(doc));
    k.attrs = std::move(attrs);
    k.summary_attrs = {"num_inputs"};
    k.variadic = true;
    k.inputs = {};
    k.infer = std::move(infer);
    k.param_count = no_params;
    k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
        return double(a.get_int("num_inputs") - 1) * double(out.shape.numel());
    };
    k.build = std::move(build);
    return k;
}

TensorType broadcast_all(const Attrs&, Inputs in) {
    Dims shape = in[0].shape;
    for (size_t i = 1; i < in.size(); ++i) {
        const Dims& b = in[i].shape;
        int rank = std::max(shape.size(), b.size());
        Dims out = Dims::filled(rank, 1);
        for (int d = 0; d < rank; ++d) {
            int ia = d - (rank - shape.size()), ib = d - (rank - b.size());
            int64_t x = ia >= 0 ? shape[ia] : 1, y = ib >= 0 ? b[ib] : 1;
            if (x != y && x != 1 && y != 1)
                fail("inputs must have broadcastable shapes, got " + in[0].shape.str() +
                     (i > 1 ? " (and earlier inputs)" : "") + " and " + b.str() + " at input " +
                     std::to_string(i));
            out[d] = x == 1 ? y : x;
        }
        shape = out;
    }
    for (const auto& t : in)
        require_float(t);
    return {shape, in[0].dtype};
}

} // namespace

void add_merge_kinds(std::vector<LayerKind>& kinds) {
    kinds.push_back(merge("Add", "Sum of the inputs (broadcasting), e.g. a residual connection.",
                          {num_inputs_attr()}, broadcast_all, simple<nn::Add>()));
    kinds.back().elementwise_inputs = true;
    kinds.push_back(merge("Multiply", "Element-wise product of the inputs (broadcasting).",
                          {num_inputs_attr()}, broadcast_all, simple<nn::Multiply>()));
    kinds.back().elementwise_inputs = true;
    {
        LayerKind k = merge(
            "Concat", "Concatenation of the inputs along dim; other dimensions must match.",
            {num_inputs_attr(), attr::integer("dim", 1,
                                              "Dimension to concatenate along "
                                              "(1: channels).",
                                              std::nullopt)},
            [](const Attrs& a, Inputs in) {
                int rank = in[0].shape.size();
                int dim = normalize_dim(a.get_int("dim"), rank, "dim");
                Dims out = in[0].shape;
                for (size_t i = 1; i < in.size(); ++i) {
                    const Dims& s = in[i].shape;
                    bool ok = s.size() == rank;
                    for (int d = 0; ok && d < rank; ++d)
                        ok = d == dim || s[d] == out[d];
                    if (!ok)
                        fail("input " + std::to_string(i) + " has shape " + s.str() +
                             "; it must match " + in[0].shape.str() + " in every dimension but " +
                             std::to_string(dim));
                    out[dim] += s[dim];
                }
                for (const auto& t : in)
                    if (t.dtype != in[0].dtype) throw DTypeError("inputs must share one dtype");
                return TensorType{out, in[0].dtype};
            },
            [](const Attrs& a) { return std::make_shared<nn::Concat>(int(a.get_int("dim"))); });
        k.summary_attrs = {"dim"};
        k.flops = no_flops;
        kinds.push_back(std::move(k));
    }
}

void add_reshape_kinds(std::vector<LayerKind>& kinds) {
    {
        LayerKind k = kind("Flatten", Category::Reshape,
                           "Merges dimensions start_dim..end_dim into one (keeps the batch).");
        k.attrs = {
            attr::integer("start_dim", 1, "First dimension to merge.", std::nullopt),
            attr::integer("end_dim", -1, "Last dimension to merge (-1: the last).", std::nullopt)};
        k.infer = [](const Attrs& a, Inputs in) {
            const Dims& s = in[0].shape;
            int start = normalize_dim(a.get_int("start_dim"), s.size(), "start_dim");
            int end = normalize_dim(a.get_int("end_dim"), s.size(), "end_dim");
            if (start > end) fail("start_dim must not come after end_dim");
            Dims out;
            for (int d = 0; d < start; ++d)
                out.push_back(s[d]);
            int64_t merged = 1;
            for (int d = start; d <= end; ++d)
                merged *= s[d];
            out.push_back(merged);
            for (int d = end + 1; d < s.size(); ++d)
                out.push_back(s[d]);
            return TensorType{out, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = no_flops;
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Flatten>(int(a.get_int("start_dim")),
                                                 int(a.get_int("end_dim")));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Unflatten", Category::Reshape,
                           "Splits dimension dim into unflattened_size (one entry may be -1).");
        k.attrs = {
            attr::integer("dim", 1, "Dimension to split.", std::nullopt),
            attr::int_list("unflattened_size", {1, 28, 28}, "The new dimensions.", 1, 6, -1)};
        k.summary_attrs = {"unflattened_size"};
        k.infer = [](const Attrs& a, Inputs in) {
            const Dims& s = in[0].shape;
            int dim = normalize_dim(a.get_int("dim"), s.size(), "dim");
            Dims sizes(a.get_ints("unflattened_size"));
            int64_t known = 1;
            int inferred = -1;
            for (int i = 0; i < sizes.size(); ++i) {
                if (sizes[i] == -1) {
                    if (inferred >= 0) fail("only one entry of unflattened_size can be -1");
                    inferred = i;
                } else if (sizes[i] <= 0) {
                    fail("unflattened_size entries must be positive or -1");
                } else {
                    known *= sizes[i];
                }
            }
            if (inferred >= 0 && s[dim] % known == 0) sizes[inferred] = s[dim] / known;
            if (sizes.numel() != s[dim] || (inferred >= 0 && s[dim] % known != 0))
                fail("unflattened_size " + Dims(a.get_ints("unflattened_size")).str() +
                     " does not multiply to dimension " + std::to_string(dim) + " of " + s.str());
            if (s.size() - 1 + sizes.size() > kMaxDims) fail("too many dimensions");
            Dims out;
            for (int d = 0; d < s.size(); ++d) {
                if (d == dim)
                    for (int64_t v : sizes)
                        out.push_back(v);
                else
                    out.push_back(s[d]);
            }
            return TensorType{out, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = no_flops;
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Unflatten>(int(a.get_int("dim")),
                                                   Dims(a.get_ints("unflattened_size")));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Identity", Category::Reshape, "Passes its input through unchanged.");
        k.infer = [](const Attrs&, Inputs in) { return in[0]; };
        k.param_count = no_params;
        k.flops = no_flops;
        k.build = simple<nn::Identity>();
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Upsample", Category::Reshape,
                           "Upsampling of [N, C, H, W] by integer factors (nearest or bilinear).");
        k.attrs = {attr::int_or_pair("scale_factor", 2, "Height and width multipliers."),
                   attr::choice("mode", "nearest", {"nearest", "bilinear"}, "Interpolation."),
                   attr::flag("align_corners", false,
                              "Bilinear only: line up the corner pixels of input and output "
                              "instead of the pixel centres.")};
        k.summary_attrs = {"scale_factor"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            if (a.get_bool("align_corners") && a.get_string("mode") == "nearest")
                fail("align_corners needs mode bilinear");
            auto s = pair_of(a, "scale_factor");
            Dims out = in[0].shape;
            out[2] *= s[0];
            out[3] *= s[1];
            return TensorType{out, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = no_flops;
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Upsample>(size2(a, "scale_factor"), a.get_string("mode"),
                                                  a.get_bool("align_corners"));
        };
        kinds.push_back(std::move(k));
    }
}

void add_embedding_kinds(std::vector<LayerKind>& kinds) {
    {
        LayerKind k = kind("Embedding", Category::Embedding,
                           "Looks up a learned vector for each int64 index.");
        AttrDesc padding = attr::integer("padding_idx", 0,
                                         "Index whose vector stays zero and gets no gradient "
                                         "(negative counts from the end); None: no padding.",
                                         std::nullopt);
        k.attrs = {attr::integer("num_embeddings", 1000, "Size of the vocabulary.", 1),
                   attr::integer("embedding_dim", 64, "Size of each vector.", 1),
                   attr::nullable(padding)};
        k.summary_attrs = {"num_embeddings", "embedding_dim"};
        k.infer = [](const Attrs& a, Inputs in) {
            if (in[0].dtype != DType::Int64)
                throw DTypeError(std::string("expected int64 indices, got ") +
                                 dtype_name(in[0].dtype) + " (set the Input's dtype to int64)");
            if (auto p = a.get_optional_int("padding_idx")) {
                int64_t n = a.get_int("num_embeddings");
                if (*p < -n || *p >= n)
                    fail("padding_idx " + std::to_string(*p) + " is out of range for " +
                         std::to_string(n) + " embeddings");
            }
            Dims out = in[0].shape;
            if (out.size() >= kMaxDims) fail("too many dimensions");
            out.push_back(a.get_int("embedding_dim"));
            return TensorType{out, DType::Float32};
        };
        k.param_count = [](const Attrs& a) {
            return a.get_int("num_embeddings") * a.get_int("embedding_dim");
        };
        k.flops = no_flops;
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Embedding>(a.get_int("num_embeddings"),
                                                   a.get_int("embedding_dim"),
                                                   a.get_optional_int("padding_idx"));
        };
        kinds.push_back(std::move(k));
    }
}

} // namespace myelin::graph::detail
