// The export forms (myelin/export/layer_forms.h): every built-in layer kind has both an ONNX
// lowering and a PyTorch form (the list of built-in kinds without them must stay empty), a
// plugin's kind without forms is refused naming its plugin, and the registration checks its
// records.
#include <myelin/error.h>
#include <myelin/export/export.h>
#include <myelin/export/layer_forms.h>
#include <myelin/graph/registry.h>

#include <QtTest>

using namespace myelin;

class TestExportForms : public QObject {
    Q_OBJECT

  private slots:
    void everyBuiltInKindHasBothForms() {
        QStringList missing;
        int checked = 0;
        for (const graph::LayerKind& kind : graph::layer_kinds()) {
            if (!kind.origin.empty() || kind.name == "Input" || kind.name == "Output") continue;
            ++checked;
            const exporters::LayerForms* forms = exporters::find_layer_forms(kind.name);
            if (!forms) {
                missing << QString::fromStdString(kind.name + ": no record");
                continue;
            }
            if (!forms->refusal.empty())
                missing << QString::fromStdString(kind.name + ": refused (" + forms->refusal + ")");
            if (!forms->onnx) missing << QString::fromStdString(kind.name + ": no ONNX lowering");
            if (!forms->pytorch_module && !forms->pytorch_forward)
                missing << QString::fromStdString(kind.name + ": no PyTorch form");
            QVERIFY2(exporters::layer_forms_missing(kind.name).empty(), kind.name.c_str());
        }
        QVERIFY2(missing.isEmpty(), qPrintable(missing.join("; ")));
        // The registry's sequence and attention kinds are among them.
        qInfo("%d built-in kinds have both forms", checked);
        QVERIFY(checked >= 44);
        for (const char* kind : {"LSTM", "GRU", "RNN", "PaddingLengths", "PositionalEncoding",
                                 "TransformerEncoderLayer", "TransformerEncoder",
                                 "MultiheadAttention", "SequenceLast", "SequenceMeanPool"})
            QVERIFY2(exporters::find_layer_forms(kind) != nullptr, kind);
    }

    // A kind from a plugin that gives no export forms: the message names the plugin and how to
    // add them.
    void pluginKindWithoutFormsNamesItsPlugin() {
        graph::LayerKind kind = graph::layer_kind("ReLU");
        kind.name = "TestOnlyPluginKind";
        kind.origin = "/opt/plugins/libtest_only.so";
        graph::register_layer_kind(kind);
        QVERIFY(exporters::find_layer_forms("TestOnlyPluginKind") == nullptr);
        const QString why =
            QString::fromStdString(exporters::layer_forms_missing("TestOnlyPluginKind"));
        QVERIFY2(why.contains("TestOnlyPluginKind"), qPrintable(why));
        QVERIFY2(why.contains("/opt/plugins/libtest_only.so"), qPrintable(why));
        QVERIFY2(why.contains("MYELIN_PLUGIN_EXPORT_FORMS"), qPrintable(why));
        QCOMPARE(QString::fromStdString(exporters::onnx_unsupported_kind("TestOnlyPluginKind")),
                 why);
    }

    void registrationChecksTheRecord() {
        // Neither forms nor a refusal; one form without the other; a kind that has forms.
        QVERIFY_THROWS_EXCEPTION(Error, exporters::register_layer_forms("TestOnlyEmpty", {}));
        exporters::LayerForms onnx_only;
        onnx_only.onnx = [](exporters::OnnxGraph&, const exporters::OnnxLayer&) {
            return std::vector<std::string>{};
        };
        QVERIFY_THROWS_EXCEPTION(Error, exporters::register_layer_forms("TestOnlyHalf", onnx_only));
        exporters::LayerForms both = onnx_only;
        both.pytorch_module = [](const exporters::PyLayer&) { return std::string("nn.ReLU()"); };
        QVERIFY_THROWS_EXCEPTION(Error, exporters::register_layer_forms("ReLU", both));
        // A refusal alone is a record: the kind says why it cannot be exported.
        exporters::LayerForms refused;
        refused.refusal = "it keeps host state between calls";
        exporters::register_layer_forms("TestOnlyRefused", refused);
        QCOMPARE(exporters::layer_forms_missing("TestOnlyRefused"),
                 std::string("it keeps host state between calls"));
        exporters::register_layer_forms("TestOnlyBoth", both);
        QVERIFY(exporters::find_layer_forms("TestOnlyBoth") != nullptr);
        QVERIFY(exporters::layer_forms_missing("TestOnlyBoth").empty());
    }
};

QTEST_GUILESS_MAIN(TestExportForms)
#include "test_export_forms.moc"
