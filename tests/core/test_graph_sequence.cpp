// The sequence layer kinds of the graph (registry_sequence.cpp): the lengths port, the recurrent
// kinds' "last" output, shape errors, and a token classifier Embedding -> LSTM -> Linear built
// and run with and without lengths.
#include "test_support.h"

#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/graph/build.h>
#include <myelin/graph/model_spec.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/attention.h>
#include <myelin/tensor.h>

#include "../support/graph_problems.h"

#include <QTest>

using namespace myelin;
using namespace myelin::graph;

namespace {

using I = int64_t;

// Input int64 [T] -> Embedding(10, 4) -> LSTM(4, 3, ...) [<- PaddingLengths] -> Linear -> Output.
struct Classifier {
    ModelSpec spec;
    NodeId lstm = 0;
};
Classifier classifier(bool with_lengths, bool bidirectional, int64_t steps = 6) {
    Classifier c;
    NodeId in =
        c.spec.add_node("Input", "tokens",
                        {{"shape", std::vector<int64_t>{steps}}, {"dtype", std::string("int64")}});
    NodeId emb = c.spec.add_node(
        "Embedding", "emb",
        {{"num_embeddings", I(10)}, {"embedding_dim", I(4)}, {"padding_idx", I(0)}});
    const int64_t features = bidirectional ? 6 : 3;
    c.lstm = c.spec.add_node("LSTM", "lstm",
                             {{"input_size", I(4)},
                              {"hidden_size", I(3)},
                              {"bidirectional", bidirectional},
                              {"output", std::string("last")},
                              {"num_inputs", I(with_lengths ? 2 : 1)}});
    NodeId head =
        c.spec.add_node("Linear", "head", {{"in_features", features}, {"out_features", I(2)}});
    NodeId out = c.spec.add_node("Output");
    c.spec.connect(in, emb);
    c.spec.connect(emb, c.lstm, 0);
    if (with_lengths) {
        NodeId lengths = c.spec.add_node("PaddingLengths", "lengths");
        c.spec.connect(in, lengths);
        c.spec.connect(lengths, c.lstm, 1);
    }
    c.spec.connect(c.lstm, head);
    c.spec.connect(head, out);
    return c;
}

// Two padded token rows: lengths 4 and 6 (zeros are padding).
Tensor padded_tokens() {
    return from_vector(std::vector<int64_t>{3, 1, 4, 1, 0, 0, 5, 9, 2, 6, 5, 3}, Dims{2, 6});
}

} // namespace

class TestGraphSequence : public QObject {
    Q_OBJECT

  private slots:
    void paddingLengthsCountsTokens();
    void lastOutputIsTheFinalValidState();
    void shapeErrorsNameTheMisfit();
    void classifierBuildsWithAndWithoutLengths();
};

void TestGraphSequence::paddingLengthsCountsTokens() {
    auto layer = layer_kind("PaddingLengths").build(Attrs{});
    Tensor tokens =
        from_vector(std::vector<int64_t>{3, 1, 0, 0, 0, 0, 0, 0, 7, 7, 7, 7}, Dims{3, 4});
    Tensor lengths = (*layer)(TensorList{tokens});
    QCOMPARE(lengths.dtype(), DType::Int64);
    QVERIFY(equal(lengths, from_vector(std::vector<int64_t>{2, 1, 4}, Dims{3})));
}

void TestGraphSequence::lastOutputIsTheFinalValidState() {
    // The same weights with output "sequence" and "last": the forward half of "last" is the
    // sequence output at each row's last valid step, the reverse half the output at step 0.
    for (const char* kind : {"LSTM", "GRU", "RNN"}) {
        auto attrs = [](const char* output) {
            return Attrs{{"input_size", I(4)},
                         {"hidden_size", I(3)},
                         {"num_layers", I(2)},
                         {"bidirectional", true},
                         {"output", std::string(output)}};
        };
        const LayerKind& k = layer_kind(kind);
        auto sequence = k.build(with_defaults(k.attrs, attrs("sequence")));
        auto last = k.build(with_defaults(k.attrs, attrs("last")));
        last->load_state_dict(sequence->state_dict());
        Tensor x = randn(Dims{2, 6, 4});
        Tensor lengths = from_vector(std::vector<int64_t>{4, 6}, Dims{2});
        Tensor all = (*sequence)(TensorList{x, lengths});     // [2, 6, 6]
        Tensor final_state = (*last)(TensorList{x, lengths}); // [2, 6]
        QCOMPARE(final_state.sizes(), (Dims{2, 6}));
        QCOMPARE(last->outputs(TensorList{x, lengths}).size(),
                 size_t(std::string(kind) == "LSTM" ? 3 : 2));
        Tensor forward_last = nn::functional::sequence_last(all, lengths).slice(1, 0, 3);
        Tensor reverse_first = all.select(1, 0).slice(1, 3, 6);
        QVERIFY2(allclose(final_state.slice(1, 0, 3), forward_last, 1e-5, 1e-6), kind);
        QVERIFY2(allclose(final_state.slice(1, 3, 6), reverse_first, 1e-5, 1e-6), kind);
    }
}

void TestGraphSequence::shapeErrorsNameTheMisfit() {
    Classifier c = classifier(false, false);
    c.spec.node(c.lstm).attrs.set("input_size", I(5));
    Analysis a = analyze(c.spec);
    QVERIFY(!a.ok());
    QVERIFY2(problems_of(c.spec, a).contains("input_size is 5 but the input's last dimension is 4"),
             qPrintable(problems_of(c.spec, a)));

    // Tokens straight into the LSTM: it says an Embedding is missing.
    ModelSpec direct;
    NodeId in = direct.add_node(
        "Input", "", {{"shape", std::vector<int64_t>{6}}, {"dtype", std::string("int64")}});
    NodeId lstm = direct.add_node("LSTM");
    NodeId out = direct.add_node("Output");
    direct.connect(in, lstm);
    direct.connect(lstm, out);
    QVERIFY2(problems_of(direct, analyze(direct)).contains("tokens need an Embedding first"),
             qPrintable(problems_of(direct, analyze(direct))));

    // A float tensor on the lengths port.
    ModelSpec wrong;
    NodeId x = wrong.add_node("Input", "", {{"shape", std::vector<int64_t>{6, 32}}});
    NodeId len = wrong.add_node("Input", "", {{"shape", std::vector<int64_t>{1}}});
    NodeId gru = wrong.add_node("GRU", "", {{"num_inputs", I(2)}});
    NodeId o = wrong.add_node("Output");
    wrong.connect(x, gru, 0);
    wrong.connect(len, gru, 1);
    wrong.connect(gru, o);
    QVERIFY2(problems_of(wrong, analyze(wrong)).contains("the lengths input must be int64"),
             qPrintable(problems_of(wrong, analyze(wrong))));

    // Unset num_inputs means one port: nothing is reported unconnected.
    QVERIFY2(analyze(direct).problems.size() == 1,
             qPrintable(problems_of(direct, analyze(direct))));
}

void TestGraphSequence::classifierBuildsWithAndWithoutLengths() {
    for (bool bidirectional : {false, true}) {
        Classifier plain = classifier(false, bidirectional);
        Classifier masked = classifier(true, bidirectional);
        Analysis a = analyze(masked.spec, 2);
        QVERIFY2(a.ok(), qPrintable(problems_of(masked.spec, a)));
        auto plain_model = build(plain.spec);
        auto masked_model = build(masked.spec);
        QCOMPARE(a.total_params, masked_model->num_parameters());
        QCOMPARE(analyze(plain.spec).total_params, plain_model->num_parameters());
        masked_model->load_state_dict(plain_model->state_dict());
        plain_model->eval();
        masked_model->eval();

        Tensor tokens = padded_tokens();
        Tensor y_plain = (*plain_model)(TensorList{tokens});
        Tensor y_masked = (*masked_model)(TensorList{tokens});
        QCOMPARE(y_masked.sizes(), (Dims{2, 2}));
        // The full row (length 6) sees no padding, so both models agree on it; the padded row
        // differs because the lengths stop the LSTM at step 4.
        QVERIFY(allclose(y_plain.select(0, 1), y_masked.select(0, 1), 1e-5, 1e-6));
        QVERIFY(!allclose(y_plain.select(0, 0), y_masked.select(0, 0), 1e-5, 1e-6));

        // Same as trimming the padded row to its 4 tokens.
        Classifier short_one = classifier(false, bidirectional, 4);
        auto short_model = build(short_one.spec);
        short_model->load_state_dict(plain_model->state_dict());
        short_model->eval();
        Tensor trimmed = tokens.select(0, 0).slice(0, 0, 4).reshape(Dims{1, 4});
        QVERIFY(allclose((*short_model)(TensorList{trimmed}).select(0, 0), y_masked.select(0, 0),
                         1e-5, 1e-6));
    }
}

QTEST_GUILESS_MAIN(TestGraphSequence)
#include "test_graph_sequence.moc"
