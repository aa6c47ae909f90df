// Export forms of the structural kinds: Dropout, Dropout2d, Identity, the merges Add, Multiply
// and Concat, Flatten, Unflatten, Upsample and Embedding. Shapes handed to Reshape are constant
// int64 lists where 0 keeps the (symbolic) batch dimension and -1 takes the rest: OpenCV 4.6
// mis-evaluates the Shape -> Gather -> Concat -> Reshape chains PyTorch's exporter writes.
#include "forms_parts.h"

namespace myelin::exporters::detail {

namespace {

std::string chain(OnnxGraph& b, const OnnxLayer& l, const char* op) {
    std::string t = l.inputs[0];
    for (size_t i = 1; i < l.inputs.size(); ++i)
        t = b.op(op, {t, l.inputs[i]},
                 i + 1 == l.inputs.size() ? l.module_name : l.name("partial"));
    return t;
}

std::string flatten_like(OnnxGraph& b, const OnnxLayer& l, int merged_from, int merged_to) {
    // Dimensions before the merged range as they are (0 for the batch), the merged one as -1
    // when it takes the batch, else static; every other one static.
    std::vector<int64_t> shape;
    const Dims& in = l.input_types[0].shape;
    for (int d = 0; d < merged_from; ++d)
        shape.push_back(d == 0 ? 0 : in[d]);
    int64_t merged = 1;
    for (int d = merged_from; d <= merged_to; ++d)
        merged *= in[d];
    shape.push_back(merged_from == 0 ? -1 : merged);
    for (int d = merged_to + 1; d < int(in.size()); ++d)
        shape.push_back(in[d]);
    // The usual flatten [N, rest] reads best as [0, -1].
    if (merged_from == 1 && merged_to == int(in.size()) - 1) shape = {0, -1};
    return b.op("Reshape", {l.inputs[0], b.ints(l.name("shape"), shape)}, l.module_name);
}

std::string flatten(OnnxGraph& b, const OnnxLayer& l) {
    const int rank = l.input_types[0].shape.size();
    auto norm = [&](int64_t d) { return int(d < 0 ? d + rank : d); };
    return flatten_like(b, l, norm(l.attrs.get_int("start_dim")), norm(l.attrs.get_int("end_dim")));
}

std::string unflatten(OnnxGraph& b, const OnnxLayer& l) {
    std::vector<int64_t> shape(l.output().shape.begin(), l.output().shape.end());
    const int rank = l.input_types[0].shape.size();
    const int64_t dim =
        l.attrs.get_int("dim") < 0 ? l.attrs.get_int("dim") + rank : l.attrs.get_int("dim");
    shape[0] = dim == 0 ? -1 : 0; // a split batch: the first part takes what is left
    return b.op("Reshape", {l.inputs[0], b.ints(l.name("shape"), shape)}, l.module_name);
}

std::string upsample(OnnxGraph& b, const OnnxLayer& l) {
    const auto s = pair(l.attrs, "scale_factor");
    const std::string scales =
        b.floats(l.name("scales"), {1.0f, 1.0f, float(s[0]), float(s[1])}, {4});
    const std::string roi = b.floats(l.name("roi"), {}, {0});
    if (l.attrs.get_string("mode") == "nearest")
        return b.op("Resize", {l.inputs[0], roi, scales}, l.module_name,
                    {attr_string("mode", "nearest"),
                     attr_string("coordinate_transformation_mode", "asymmetric"),
                     attr_string("nearest_mode", "floor")});
    return b.op(
        "Resize", {l.inputs[0], roi, scales}, l.module_name,
        {attr_string("mode", "linear"),
         attr_string("coordinate_transformation_mode",
                     l.attrs.get_bool("align_corners") ? "align_corners" : "pytorch_half_pixel")});
}

// Evaluation form: dropout is the identity.
LayerForms identity_in_onnx(PyModuleForm module) {
    return {.onnx = simple_op("Identity"), .pytorch_module = std::move(module)};
}

PyForwardForm joined(const char* separator) {
    return [separator](const PyLayer&, const std::string&, const std::vector<std::string>& in) {
        std::string expr;
        for (size_t i = 0; i < in.size(); ++i)
            expr += (i ? separator : "") + in[i];
        return expr;
    };
}

} // namespace

void add_structure_forms(FormsTable& table) {
    auto dropout = [](const PyLayer& l) { return PyCall("nn." + l.kind.name, l).real("p").str(); };
    table["Dropout"] = identity_in_onnx(dropout);
    table["Dropout2d"] = identity_in_onnx(dropout);
    table["Identity"] = identity_in_onnx(py_plain());
    table["Add"] = {.onnx =
                        single([](OnnxGraph& g, const OnnxLayer& l) { return chain(g, l, "Add"); }),
                    .pytorch_forward = joined(" + ")};
    table["Multiply"] = {
        .onnx = single([](OnnxGraph& g, const OnnxLayer& l) { return chain(g, l, "Mul"); }),
        .pytorch_forward = joined(" * ")};
    table["Concat"] = {.onnx = simple_op("Concat",
                                         [](const OnnxLayer& l) {
                                             return std::vector<OnnxAttr>{
                                                 attr_int("axis", l.attrs.get_int("dim"))};
                                         }),
                       .pytorch_forward = [](const PyLayer& l, const std::string&,
                                             const std::vector<std::string>& in) {
                           std::string expr = "torch.cat([";
                           for (size_t i = 0; i < in.size(); ++i)
                               expr += (i ? ", " : "") + in[i];
                           return expr + "], dim=" + py_int(l.attrs, "dim") + ")";
                       }};
    table["Flatten"] = {.onnx = single(flatten), .pytorch_module = [](const PyLayer& l) {
                            return PyCall("nn.Flatten", l)
                                .kw("start_dim", py_int(l.attrs, "start_dim"))
                                .kw("end_dim", py_int(l.attrs, "end_dim"))
                                .str();
                        }};
    table["Unflatten"] = {.onnx = single(unflatten), .pytorch_module = [](const PyLayer& l) {
                              return PyCall("nn.Unflatten", l)
                                  .pos(py_int(l.attrs, "dim"))
                                  .pos(py_tuple(l.attrs.get_ints("unflattened_size")))
                                  .str();
                          }};
    table["Upsample"] = {
        .onnx = single(upsample), .pytorch_module = [](const PyLayer& l) {
            const graph::Attrs& a = l.attrs;
            const auto& s = a.get_ints("scale_factor");
            const std::string factor =
                s.size() == 1 ? py_float(double(s[0]))
                              : "(" + py_float(double(s[0])) + ", " + py_float(double(s[1])) + ")";
            PyCall c("nn.Upsample", l);
            c.always("scale_factor", factor).always("mode", py_string(a.get_string("mode")));
            if (a.get_string("mode") == "bilinear")
                c.always("align_corners", py_bool(a.get_bool("align_corners")));
            return c.str();
        }};
    table["Embedding"] = {
        .onnx = single([](OnnxGraph& g, const OnnxLayer& l) {
            return g.op("Gather",
                        {g.initializer(state_name(l, "weight"), l.weight("weight")), l.inputs[0]},
                        l.module_name, {attr_int("axis", 0)});
        }),
        .pytorch_module =
            [](const PyLayer& l) {
                const graph::Attrs& a = l.attrs;
                return PyCall("nn.Embedding", l)
                    .pos(py_int(a, "num_embeddings"))
                    .pos(py_int(a, "embedding_dim"))
                    .kw("padding_idx", a.is_none("padding_idx") ? "None" : py_int(a, "padding_idx"))
                    .str();
            },
        .opencv_note =
            [](const graph::Attrs&) {
                return std::string(
                    "OpenCV 4.6's DNN module cannot Gather with indices from a model input");
            }};
}

} // namespace myelin::exporters::detail
